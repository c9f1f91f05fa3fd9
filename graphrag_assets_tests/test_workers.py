"""``index --workers 2``: the document steps on two worker processes (Dagster's multiprocess
executor) give exactly the tables of the single-process build — offline and with the standard
method against the scripted server, after adds, edits and deletes, and when a worker is killed
(SIGKILL) in the middle of its shard: the run retries that shard alone."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from graphrag_assets.core.settings import load_settings
from graphrag_assets.pipeline.runtime.instance import open_instance
from graphrag_assets_testkit.builds import NEW_DOCUMENT, env_without_endpoint, published_tables, run_index
from graphrag_assets_testkit.processes import child_pids
from graphrag_assets_testkit.projects import make_project
from graphrag_assets_tests.conftest import make_llm_project

OFFLINE = "method: nlp\nllm:\n  embeddings: local\n"
STEP_SERVER = "forkserver"  # the process the multiprocess executor forks each step's process from
KILL_WAIT_SECONDS = 600  # a loaded machine takes minutes to start the index and its step processes


def assert_same_tables(built: Path, expected: Path) -> None:
    mine, theirs = published_tables(built), published_tables(expected)
    assert sorted(mine) == sorted(theirs)
    for table, frame in theirs.items():
        assert mine[table].equals(frame), f"{table} differs from the single-process build"


def offline_project(root: Path) -> Path:
    make_project(root)
    (root / "graphrag.yaml").write_text(OFFLINE, encoding="utf-8")
    return root


def edit_inputs(inputs: Path) -> None:
    """Change one file, add one, delete one."""
    letter = inputs / "letter_holm_to_varga.txt"
    letter.write_text(letter.read_text(encoding="utf-8") + "\nHelga Brandt read the letter aloud.\n", encoding="utf-8")
    (inputs / "new_arrival.txt").write_text(NEW_DOCUMENT, encoding="utf-8")
    (inputs / "council_minutes_2023-11-07.txt").unlink()


@pytest.mark.timeout(1200)
def test_offline_workers_equal_single_process_build_and_stay_equal_after_changes(
    nlp_index: Path, tmp_path: Path
) -> None:
    root = offline_project(tmp_path / "workers")
    result = run_index(root, "--workers", "2")
    assert result.returncode == 0, result.stderr
    assert "document_workers_job" in result.stdout
    assert_same_tables(root, nlp_index)
    assert not list((root / "data" / "exchange").glob("runs/*")), "the run's exchange folder is deleted"

    edit_inputs(root / "data" / "input")
    result = run_index(root, "--workers", "2")
    assert result.returncode == 0, result.stderr
    rebuild = offline_project(tmp_path / "rebuild")
    shutil.rmtree(rebuild / "data" / "input")
    shutil.copytree(root / "data" / "input", rebuild / "data" / "input")
    result = run_index(rebuild)
    assert result.returncode == 0, result.stderr
    assert_same_tables(root, rebuild)


@pytest.mark.timeout(1800)
def test_a_worker_killed_mid_shard_is_retried_alone(graphrag_server, standard_index: Path, tmp_path: Path) -> None:
    root = make_llm_project(tmp_path / "workers", graphrag_server.base_url)
    graphrag_server.reset()
    # One document's first extraction request hangs, so its shard is still running when the other ends.
    graphrag_server.add_fault("delay", seconds=2 * KILL_WAIT_SECONDS, match="Storm Odile", endpoint="chat")
    command = [sys.executable, "-m", "graphrag_assets.cli.main", "index", "--root", str(root), "--workers", "2"]
    index = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env_without_endpoint()
    )
    try:
        killed = kill_the_hanging_shard(graphrag_server, index.pid)
        stdout, stderr = index.communicate(timeout=KILL_WAIT_SECONDS)
    finally:
        if index.poll() is None:
            os.kill(index.pid, signal.SIGKILL)
    assert index.returncode == 0, stdout + stderr[-3000:]
    assert killed
    assert_same_tables(root, standard_index)
    starts = step_starts(root)
    shards = {key: count for key, count in starts.items() if key.startswith("index_shard")}
    assert sorted(shards.values()) == [1, 2], starts  # the killed shard ran again, the other once
    assert starts["collect_shards_op"] == 1


def kill_the_hanging_shard(server, index_pid: int) -> int:
    """Wait for the delayed request and for the other shard to end; SIGKILL the step process left."""
    deadline = time.monotonic() + KILL_WAIT_SECONDS
    while time.monotonic() < deadline:
        delayed = [call for call in server.calls("chat") if call.get("outcome") == "delay"]
        steps = [step for server in child_pids(index_pid, STEP_SERVER) for step in child_pids(server)]
        if delayed and len(steps) == 1:
            os.kill(steps[0], signal.SIGKILL)
            return steps[0]
        time.sleep(0.2)
    raise AssertionError("the delayed shard was never the only step running")


def step_starts(root: Path) -> dict[str, int]:
    """How many times each step of the project's last workers run started (a retry is a restart)."""
    instance = open_instance(load_settings(root, environ={}))
    try:
        runs = [r for r in instance.get_runs() if r.job_name == "document_workers_job"]
        run = runs[0]
        counts: dict[str, int] = {}
        for record in instance.all_logs(run.run_id):
            event = record.dagster_event
            if event is not None and event.event_type_value in ("STEP_START", "STEP_RESTARTED"):
                counts[event.step_key] = counts.get(event.step_key, 0) + 1
        return counts
    finally:
        instance.dispose()


def test_workers_setting_is_checked(tmp_path: Path) -> None:
    root = make_project(tmp_path / "project", with_sample=False)
    result = run_index(root, "--workers", "0")
    assert result.returncode != 0
    assert "workers.count" in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
