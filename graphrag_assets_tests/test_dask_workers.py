"""The dask engine: Dagster steps run on the worker processes of a real dask.distributed cluster.

The cluster (a scheduler and two single-threaded workers on loopback) is started by the session
fixture and stopped by PID; the steps reach it through dagster-dask's executor, as `workers.engine:
dask` does. The index built there must equal the one built in one process, table by table.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from dagster import DagsterEventType, DagsterInstance, In, Nothing, execute_job, job, op, reconstructable
from dagster_dask import dask_executor
from polars.testing import assert_frame_equal

from graphrag_assets.pipeline.workers import WORKERS_JOB
from graphrag_assets_testkit.builds import published_tables, run_index
from graphrag_assets_testkit.dask_cluster import DaskCluster, dask_cluster  # noqa: F401 - the fixture
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
    assert _shard_step_pids(root) == dask_cluster.worker_pids()


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
