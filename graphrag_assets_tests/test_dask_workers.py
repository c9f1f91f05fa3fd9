"""The dask engine: Dagster steps run on the worker processes of a real dask.distributed cluster.

The cluster (a scheduler and two single-threaded workers on loopback) is started by the session
fixture and stopped by PID; the steps reach it through dagster-dask's executor, as `workers.engine:
dask` does. The index built there must equal the one built in one process, table by table, also
when a worker is killed (SIGKILL) in the middle of its shard: only that shard's work is redone.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import polars as pl
import pytest
from dagster import DagsterEventType, DagsterInstance, In, Nothing, execute_job, job, op, reconstructable
from dagster_dask import dask_executor
from polars.testing import assert_frame_equal

from graphrag_assets.pipeline.workers import WORKERS_JOB
from graphrag_assets_testkit.builds import env_without_endpoint, published_tables, run_index
from graphrag_assets_testkit.dask_cluster import DaskCluster, dask_cluster, start_dask_cluster  # noqa: F401 - the fixture
from graphrag_assets_testkit.postgres_server import free_port
from graphrag_assets_tests.conftest import make_llm_project

STEP_SECONDS = 2.0


@op
def first_step() -> tuple[int, float, float]:
    started = time.time()
    time.sleep(STEP_SECONDS)
    return os.getpid(), started, time.time()


@op
def second_step() -> tuple[int, float, float]:
    started = time.time()
    time.sleep(STEP_SECONDS)
    return os.getpid(), started, time.time()


@op(ins={"first": In(), "second": In()})
def both_done(first: tuple[int, float, float], second: tuple[int, float, float]) -> Nothing:
    return None


@job(executor_def=dask_executor)
def two_parallel_steps() -> None:
    both_done(first_step(), second_step())


def test_two_steps_run_at_once_on_the_two_worker_processes(dask_cluster: DaskCluster, tmp_path: Path) -> None:
    config = {"execution": {"config": {"cluster": {"existing": {"address": dask_cluster.address}}}}}
    with DagsterInstance.local_temp(str(tmp_path)) as instance:
        with execute_job(reconstructable(two_parallel_steps), instance, run_config=config) as result:
            assert result.success, dask_cluster.log_text()
            first, second = result.output_for_node("first_step"), result.output_for_node("second_step")
    assert {first[0], second[0]} == dask_cluster.worker_pids()
    assert os.getpid() not in (first[0], second[0])
    assert max(first[1], second[1]) < min(first[2], second[2]), "the two steps did not overlap"


def _shard_step_pids(root: Path) -> set[int]:
    """PIDs of the processes that ran the shard steps of the project's last workers run."""
    from graphrag_assets.core.settings import load_settings
    from graphrag_assets.pipeline.runtime.instance import open_instance

    instance = open_instance(load_settings(root, environ={}))
    try:
        (run,) = [run for run in instance.get_runs(limit=5) if run.job_name == WORKERS_JOB][:1]
        starts = instance.all_logs(run.run_id, of_type=DagsterEventType.STEP_START)
        return {entry.dagster_event.pid for entry in starts if entry.step_key.startswith("index_shard")}
    finally:
        instance.dispose()


def test_the_sample_corpus_indexed_on_the_cluster_equals_the_single_process_build(
    dask_cluster: DaskCluster, graphrag_server, standard_index: Path, tmp_path: Path
) -> None:
    workers = f"workers:\n  count: 2\n  engine: dask\n  dask_scheduler: {dask_cluster.address}\n"
    root = make_llm_project(tmp_path / "project", graphrag_server.base_url, extra=workers)
    done = run_index(root)
    assert done.returncode == 0, done.stderr + dask_cluster.log_text()
    expected, ours = published_tables(standard_index), published_tables(root)
    assert sorted(ours) == sorted(expected)
    for table, frame in expected.items():
        assert_frame_equal(ours[table], frame)
    # On the cluster's workers, not in `index`'s process. Which worker takes which shard is the
    # scheduler's choice (one worker took both once, at load ~5); the test above pins that two
    # workers run steps at the same time.
    shard_pids = _shard_step_pids(root)
    assert shard_pids and shard_pids <= dask_cluster.worker_pids()


def test_an_unreachable_scheduler_is_one_clear_sentence(graphrag_server, tmp_path: Path) -> None:
    address = f"tcp://127.0.0.1:{free_port()}"  # nothing listens there
    workers = f"workers:\n  engine: dask\n  dask_scheduler: {address}\n"
    root = make_llm_project(tmp_path / "project", graphrag_server.base_url, extra=workers)
    done = run_index(root, "--workers", "2")
    assert done.returncode != 0
    assert "Traceback" not in done.stderr, done.stderr
    message = done.stderr.strip().splitlines()[-1]
    assert message.startswith("error: no dask scheduler answers at " + address), done.stderr
    assert not (root / "data" / "graphrag.duckdb").exists()


KILL_WAIT_SECONDS = 600  # a loaded machine takes minutes to start the run and its steps


def _hanging_shard_worker(client, server) -> tuple[int, str] | None:
    """(pid, task) of the worker running the last shard step once the other shard has ended and the
    delayed model request has arrived; None before that."""
    if not [call for call in server.calls("chat") if call.get("outcome") == "delay"]:
        return None
    running = {worker: keys for worker, keys in client.processing().items() if keys}
    tasks = [key for keys in running.values() for key in keys]
    if len(tasks) != 1 or ".index_shard_" not in tasks[0]:
        return None
    (worker,) = running
    return client.run(os.getpid, workers=[worker])[worker], tasks[0]


def _shard_documents(root: Path) -> dict[int, set[str]]:
    """The document keys of each shard of the run in progress, from its exchange folder."""
    found: dict[int, set[str]] = {}
    for path in (root / "data" / "exchange" / "runs").glob("*/shard-*/in/documents.parquet"):
        index = int(path.parent.parent.name.removeprefix("shard-"))
        found[index] = set(pl.read_parquet(path)["document_key"].to_list())
    return found


def _chat_texts(server) -> list[str]:
    """The message text of every chat request the server received, in order."""
    return ["\n".join(str(m.get("content")) for m in c["body"].get("messages", [])) for c in server.calls("chat")]


def _asked_per_document(texts: list[str], units: pl.DataFrame) -> dict[str, Counter]:
    """For each document, how many times each distinct request quoting one of its text units was sent."""
    asked: dict[str, Counter] = {}
    for text in texts:
        for key, unit in units.select("document_key", "text").iter_rows():
            if unit in text:
                asked.setdefault(key, Counter())[text] += 1
    return asked


@pytest.mark.timeout(1800)
def test_a_dask_worker_killed_mid_shard_loses_nothing_and_only_its_shard_is_redone(
    graphrag_server, standard_index: Path, tmp_path: Path
) -> None:
    from distributed import Client

    cluster = start_dask_cluster(workers=2)  # its own: a worker of this one is killed
    try:
        workers = f"workers:\n  count: 2\n  engine: dask\n  dask_scheduler: {cluster.address}\n"
        root = make_llm_project(tmp_path / "project", graphrag_server.base_url, extra=workers)
        graphrag_server.reset()
        # One document's first extraction request hangs, so its shard is still running when the other ends.
        graphrag_server.add_fault("delay", seconds=2 * KILL_WAIT_SECONDS, match="Storm Odile", endpoint="chat")
        command = [sys.executable, "-m", "graphrag_assets.cli.main", "index", "--root", str(root)]
        index = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env_without_endpoint()
        )
        try:
            with Client(cluster.address, timeout=30) as client:
                deadline = time.monotonic() + KILL_WAIT_SECONDS
                while (found := _hanging_shard_worker(client, graphrag_server)) is None:
                    assert time.monotonic() < deadline, "the delayed shard was never the only step running"
                    assert index.poll() is None, index.communicate()[1][-3000:]
                    time.sleep(0.2)
                shards = _shard_documents(root)
                os.kill(found[0], signal.SIGKILL)
            killed_at = len(graphrag_server.calls("chat"))
            stdout, stderr = index.communicate(timeout=KILL_WAIT_SECONDS)
        finally:
            if index.poll() is None:
                os.kill(index.pid, signal.SIGKILL)
                index.wait()
        assert index.returncode == 0, stdout + stderr[-3000:] + cluster.log_text()
        expected, ours = published_tables(standard_index), published_tables(root)
        assert sorted(ours) == sorted(expected)
        for table, frame in expected.items():
            assert_frame_equal(ours[table], frame)
    finally:
        cluster.stop()

    starts = _step_starts(root)
    # dask recomputes a finished task whose result lived on the killed worker when a task still to
    # run needs it: the planning step (no model call, no document) when the killed worker ran it.
    assert starts["plan_shards_op"] in (1, 2) and starts["collect_shards_op"] == 1, starts
    killed_shard = int(found[1].rsplit("_", 1)[1])
    assert starts[f"index_shard_{killed_shard}"] == 2, starts  # the killed shard ran again
    assert starts[f"index_shard_{1 - killed_shard}"] == 1, starts  # the other did not
    # Per document: a request quoting a text unit of the finished shard was sent once; the killed
    # shard's documents lost their answers with the worker's scratch cache and asked again after the kill.
    asked = _asked_per_document(_chat_texts(graphrag_server), expected["text_units"])
    for key in shards[1 - killed_shard]:
        assert max(asked[key].values()) == 1, key
    again = _asked_per_document(_chat_texts(graphrag_server)[killed_at:], expected["text_units"])
    assert again and set(again) <= shards[killed_shard]


def _step_starts(root: Path) -> dict[str, int]:
    """How many times each step of the project's last workers run started."""
    from graphrag_assets.core.settings import load_settings
    from graphrag_assets.pipeline.runtime.instance import open_instance

    instance = open_instance(load_settings(root, environ={}))
    try:
        run = next(run for run in instance.get_runs(limit=5) if run.job_name == WORKERS_JOB)
        counts: Counter = Counter()
        for entry in instance.all_logs(run.run_id, of_type=DagsterEventType.STEP_START):
            counts[entry.step_key] += 1
        return dict(counts)
    finally:
        instance.dispose()
