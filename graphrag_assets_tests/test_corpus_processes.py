"""The corpus steps in processes of their own (``index.corpus_processes``).

Each step runs in another process than ``index`` and than the other steps (the pid Dagster records
with each step's start), and the build equals the one made in a single process. A step that fails
in its process publishes nothing and is named in one sentence; the next ``index`` finishes the
build. A step process dies with the ``index`` that started it. ``auto`` decides by the corpus's size.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from dagster import DagsterEventType
from polars.testing import assert_frame_equal

from graphrag_assets.core.settings import load_settings
from graphrag_assets.pipeline.corpus_processes import (
    PROCESSES_FROM_DOCUMENTS,
    PROCESSES_FROM_RELATIONSHIPS,
    wants_processes,
)
from graphrag_assets.pipeline.indexing import index_project
from graphrag_assets.pipeline.partitions import CORPUS_JOB
from graphrag_assets.pipeline.runtime.instance import open_instance
from graphrag_assets.pipeline.runtime.step_server import START_METHOD, start_step_server
from graphrag_assets.storage.corpus import staged_tables
from graphrag_assets_testkit.builds import CORPUS_TABLES, NEW_DOCUMENT, published_tables, run_index
from graphrag_assets_testkit.projects import make_project
from graphrag_assets_testkit.publish_fault import IN_THE_PUBLISH

NLP_SETTINGS = "method: nlp\nllm:\n  embeddings: local\n"
CORPUS_STEPS = {
    "graph",
    "communities",
    "community_reports",
    "entity_embeddings",
    "community_report_embeddings",
    "corpus_manifest",
}


def processes_setting(mode: str) -> str:
    return f"index:\n  corpus_processes: {mode}\n"


def _project(root: Path, mode: str) -> Path:
    make_project(root)
    (root / "graphrag.yaml").write_text(NLP_SETTINGS + processes_setting(mode), encoding="utf-8")
    return root


def _step_pids(root: Path, run_id: str) -> dict[str, int]:
    """The pid of the process each step of the run started in."""
    instance = open_instance(load_settings(root, environ={}))
    try:
        records = instance.get_records_for_run(run_id, of_type=DagsterEventType.STEP_START, limit=100).records
        events = [record.event_log_entry.dagster_event for record in records]
        return {event.step_key: event.pid for event in events}
    finally:
        instance.dispose()


def test_auto_runs_the_steps_apart_from_a_big_corpus_on(tmp_path: Path) -> None:
    def settings(mode: str):
        return load_settings(tmp_path, environ={}, overrides={"index": {"corpus_processes": mode}})

    def not_counted() -> int:
        raise AssertionError("the relationships are counted only when the documents did not decide")

    auto = load_settings(tmp_path, environ={})
    assert auto.index.corpus_processes == "auto"
    assert not wants_processes(auto, 8, lambda: 737)
    assert wants_processes(auto, PROCESSES_FROM_DOCUMENTS, not_counted)
    assert not wants_processes(auto, PROCESSES_FROM_DOCUMENTS - 1, lambda: PROCESSES_FROM_RELATIONSHIPS - 1)
    assert wants_processes(auto, 1, lambda: PROCESSES_FROM_RELATIONSHIPS)  # one big file: its graph decides
    assert wants_processes(settings("always"), 1, not_counted)
    assert not wants_processes(settings("never"), 10 * PROCESSES_FROM_DOCUMENTS, not_counted)


@pytest.mark.slow
def test_each_corpus_step_runs_in_a_process_of_its_own_and_builds_the_same_tables(tmp_path: Path) -> None:
    apart = _project(tmp_path / "apart", "always")
    together = _project(tmp_path / "together", "never")
    corpus_runs = {}
    for root in (apart, together):
        report = index_project(load_settings(root, environ={}))
        assert report.success, report.as_dict()
        corpus_runs[root] = next(run["run_id"] for run in report.runs if run["job"] == CORPUS_JOB)

    pids = _step_pids(apart, corpus_runs[apart])
    assert set(pids) == CORPUS_STEPS
    assert len(set(pids.values())) == len(CORPUS_STEPS) and os.getpid() not in pids.values(), pids
    assert set(_step_pids(together, corpus_runs[together]).values()) == {os.getpid()}

    expected, ours = published_tables(together), published_tables(apart)
    assert sorted(ours) == sorted(expected)
    for table, frame in expected.items():
        assert_frame_equal(ours[table], frame)


@pytest.mark.slow
@pytest.mark.parametrize("fault", ["raise", "kill"])
def test_a_step_failing_in_its_process_publishes_nothing_and_the_next_index_finishes(
    nlp_index: Path, tmp_path: Path, fault: str
) -> None:
    root = tmp_path / "project"
    shutil.copytree(nlp_index, root)
    with (root / "graphrag.yaml").open("a", encoding="utf-8") as settings:
        settings.write(processes_setting("always"))
    (root / "data" / "input" / "marrow_log.txt").write_text(NEW_DOCUMENT, encoding="utf-8")
    before = published_tables(root)

    failed = run_index(root, fault=(f"step-{fault}", *IN_THE_PUBLISH))  # the publish's process fails in its transaction
    assert failed.returncode == 1, failed.stderr
    said = [line for line in failed.stdout.splitlines() if "corpus_job" in line]
    assert len(said) == 1 and "FAILED" in said[0], failed.stdout
    reason = said[0].split("FAILED", 1)[1]
    killed = "the process of step corpus_manifest was killed (SIGKILL, perhaps for lack of memory) before the step"
    assert ("injected fault at 'alter table' 2" if fault == "raise" else killed) in reason, reason
    assert "Traceback" not in failed.stderr and "dagster._core" not in failed.stdout
    after = published_tables(root)
    for table in CORPUS_TABLES:  # the new document's own rows are in: its run succeeded
        assert_frame_equal(after[table], before[table])
    assert "entities" in staged_tables(root / "data" / "graphrag.duckdb", read_only=True)

    finished = run_index(root)
    assert finished.returncode == 0, finished.stderr
    clean = _project(tmp_path / "clean", "never")
    (clean / "data" / "input" / "marrow_log.txt").write_text(NEW_DOCUMENT, encoding="utf-8")
    assert run_index(clean).returncode == 0
    expected, ours = published_tables(clean), published_tables(root)
    for table, frame in expected.items():
        assert_frame_equal(ours[table], frame)


STEP_OF_A_KILLED_RUN = """
import os, sys, time
from graphrag_assets.pipeline.corpus_processes import end_with_process

run_pid = os.getpid()
step = os.fork()
if step == 0:
    end_with_process(run_pid)
    time.sleep(120)
    os._exit(0)
print(step, flush=True)
time.sleep(120)
"""


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    # a zombie has ended (it waits for its new parent to reap it) once its last thread has
    return "State:\tZ" not in status or "Threads:\t1\n" not in status


def test_a_step_process_dies_with_the_process_that_started_the_run() -> None:
    run = subprocess.Popen([sys.executable, "-c", STEP_OF_A_KILLED_RUN], stdout=subprocess.PIPE, text=True)
    step = int(run.stdout.readline())
    try:
        time.sleep(0.5)
        assert _alive(step)  # the run's process lives: so does the step
        run.kill()  # kill -9, as the OOM killer does
        run.wait(timeout=10)
        deadline = time.monotonic() + 10
        while _alive(step) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(step)
    finally:
        run.kill()
        if _alive(step):
            os.kill(step, signal.SIGKILL)


def progress_bar_setting() -> bool:
    import duckdb

    with duckdb.connect() as conn:
        return conn.execute("select current_setting('enable_progress_bar')").fetchone()[0]


def test_duckdb_in_a_step_process_prints_no_progress_bar_on_stdout() -> None:
    start_step_server(["duckdb"])  # imported by the server, as the pipeline's modules import it
    with multiprocessing.get_context(START_METHOD).Pool(1) as pool:
        assert pool.apply(progress_bar_setting) is False
