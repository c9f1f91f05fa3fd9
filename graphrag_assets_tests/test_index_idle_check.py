"""`index` with nothing to do answers without Dagster, and only when nothing needs Dagster's word.

The check (pipeline/idle_check.py) reads our tables and Dagster's SQLite files; every case that
needs the full path (a changed file, a pending or dead run, a held lock, a partition Dagster would
forget, a stale corpus build, --full) must get None, and the full path then does its work.
"""

from __future__ import annotations

import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from graphrag_assets.core.processes import ProcessId
from graphrag_assets.core.settings import Settings, load_settings
from graphrag_assets.pipeline.idle_check import nothing_to_index
from graphrag_assets.pipeline.indexing import index_project
from graphrag_assets.pipeline.runtime.dagster_files import DagsterState, read_sqlite_state
from graphrag_assets.project.index_run import IndexOptions
from graphrag_assets.project.locks import index_lock

PARTITIONS = "documents"


@pytest.fixture
def indexed(nlp_index: Path, tmp_path: Path) -> Path:
    root = tmp_path / "project"
    shutil.copytree(nlp_index, root)
    return root


def settings_of(root: Path) -> Settings:
    return load_settings(root, environ={})


def test_an_up_to_date_index_is_reported_without_runs(indexed: Path) -> None:
    settings = settings_of(indexed)
    report = nothing_to_index(settings, IndexOptions())
    assert report is not None
    full = index_project(settings)  # what the full path says about the same project
    assert full.runs == []
    assert report.as_dict() == {**full.as_dict(), "seconds": 0.0}


def test_the_cli_says_nothing_to_do_without_importing_dagster(indexed: Path) -> None:
    probe = (
        "import sys\nfrom graphrag_assets.cli.main import main\n"
        "try:\n    main(['index', '--root', sys.argv[1]])\nexcept SystemExit as done:\n    code = done.code\n"
        "print('dagster' in sys.modules, file=sys.stderr)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI")}
    done = subprocess.run(
        [sys.executable, "-c", probe, str(indexed)], capture_output=True, text=True, env=env, timeout=120
    )
    assert "nothing to do: the index is up to date" in done.stdout
    assert done.stderr.strip().splitlines()[-1] == "False"


def test_the_sqlite_state_matches_what_dagster_says(indexed: Path) -> None:
    from graphrag_assets.pipeline.runtime.instance import open_instance, pending_runs

    settings = settings_of(indexed)
    state = read_sqlite_state(settings, PARTITIONS)
    instance = open_instance(settings)
    assert state is not None
    assert state.partitions == list(instance.get_dynamic_partitions(PARTITIONS))
    assert state.pending_runs == pending_runs(instance) == 0


def test_a_changed_file_or_full_or_recluster_takes_the_full_path(indexed: Path) -> None:
    settings = settings_of(indexed)
    assert nothing_to_index(settings, IndexOptions(force_corpus=True)) is None
    assert nothing_to_index(settings, IndexOptions(recluster=True)) is None
    target = indexed / "data" / "input" / "letter_holm_to_varga.txt"
    target.write_text(target.read_text(encoding="utf-8") + "\nA postscript.\n", encoding="utf-8")
    assert nothing_to_index(settings, IndexOptions()) is None


def test_a_touched_file_takes_the_full_path_which_stores_its_stats(indexed: Path) -> None:
    settings = settings_of(indexed)
    os.utime(indexed / "data" / "input" / "letter_holm_to_varga.txt", ns=(1_000_000_000, 1_000_000_000))
    assert nothing_to_index(settings, IndexOptions()) is None
    assert index_project(settings).runs == []
    assert nothing_to_index(settings, IndexOptions()) is not None


def test_a_corpus_setting_change_takes_the_full_path(indexed: Path) -> None:
    with (indexed / "graphrag.yaml").open("a", encoding="utf-8") as handle:
        handle.write("communities:\n  max_cluster_size: 4\n")
    assert nothing_to_index(settings_of(indexed), IndexOptions()) is None


def test_a_held_index_lock_takes_the_full_path(indexed: Path) -> None:
    settings = settings_of(indexed)
    with index_lock(settings):
        assert nothing_to_index(settings, IndexOptions()) is None
    assert nothing_to_index(settings, IndexOptions()) is not None


def test_a_partition_dagster_would_forget_takes_the_full_path(indexed: Path) -> None:
    from graphrag_assets.pipeline.runtime.instance import open_instance

    settings = settings_of(indexed)
    instance = open_instance(settings)
    instance.add_dynamic_partitions(PARTITIONS, ["ghost.txt"])  # registered, but no such file
    assert nothing_to_index(settings, IndexOptions()) is None
    index_project(settings)
    assert "ghost.txt" not in instance.get_dynamic_partitions(PARTITIONS)
    assert nothing_to_index(settings, IndexOptions()) is not None


def test_a_run_left_started_by_a_dead_process_is_marked_failed_by_the_full_path(indexed: Path) -> None:
    from dagster import DagsterRunStatus
    from dagster._core.storage.dagster_run import DagsterRun

    from graphrag_assets.pipeline.runtime.instance import PROCESS_TAG, open_instance

    settings = settings_of(indexed)
    finished = subprocess.Popen(["true"])  # a process that has exited: its pid names no one
    finished.wait()
    dead = ProcessId(socket.gethostname(), finished.pid, None)
    assert dead.is_dead()
    instance = open_instance(settings)
    run_id = str(uuid.uuid4())
    instance.add_run(
        DagsterRun(
            job_name="corpus_job", run_id=run_id, status=DagsterRunStatus.STARTED, tags={PROCESS_TAG: dead.as_tag()}
        )
    )
    assert read_sqlite_state(settings, PARTITIONS).pending_runs == 1
    assert nothing_to_index(settings, IndexOptions()) is None
    messages: list[str] = []
    report = index_project(settings, announce=messages.append)
    assert report.runs == [] and any("whose process is gone" in m for m in messages)
    assert instance.get_run_by_id(run_id).status == DagsterRunStatus.FAILURE
    assert nothing_to_index(settings, IndexOptions()) is not None


def test_dagster_state_elsewhere_or_unreadable_means_ask_dagster(project: Path, tmp_path: Path) -> None:
    """Fast cases without an index: PostgreSQL storage, missing files, an unexpected schema."""
    from graphrag_assets.project.init_files import postgres_storage

    root = tmp_path / "fresh"
    shutil.copytree(project / "data" / "input", root / "data" / "input")
    (root / "graphrag.yaml").write_text("method: nlp\n", encoding="utf-8")
    assert read_sqlite_state(settings_of(root), PARTITIONS) is None  # no Dagster files yet
    storage = root / "data" / "dagster" / "storage" / "history"
    (storage / "runs").mkdir(parents=True)
    for name in ("runs.db", "runs/index.db"):
        sqlite3.connect(storage / name).execute("create table unrelated (x)").connection.commit()
    assert read_sqlite_state(settings_of(root), PARTITIONS) is None  # not Dagster's schema
    sqlite3.connect(storage / "runs.db").execute("create table runs (id, status)").connection.commit()
    index = sqlite3.connect(storage / "runs/index.db")
    index.execute("create table dynamic_partitions (id, partitions_def_name, partition)")
    index.execute("insert into dynamic_partitions values (1, 'documents', 'a.txt')").connection.commit()
    assert read_sqlite_state(settings_of(root), PARTITIONS) == DagsterState(0, ["a.txt"])
    (root / "dagster.yaml").write_text(
        postgres_storage("postgresql://user:secret@127.0.0.1:5432/dagster"), encoding="utf-8"
    )
    assert read_sqlite_state(settings_of(root), PARTITIONS) is None
