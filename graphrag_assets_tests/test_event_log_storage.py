"""The project's SQLite Dagster storage (pipeline/runtime/event_log.py): how it syncs and which files it keeps open."""

from __future__ import annotations

import os
from pathlib import Path

from dagster import DagsterInstance, job, op
from dagster._core.instance.ref import InstanceRef
from sqlalchemy import event
from sqlalchemy.engine import Engine

from graphrag_assets.pipeline.runtime import event_log


@op
def answer() -> int:
    return 42


@job
def tiny():
    answer()


def _instance(base: Path) -> DagsterInstance:
    storage = {
        "custom": {
            "module": event_log.__name__,
            "class": "BatchedSqliteStorage",
            "config": {"base_dir": str(base / "storage")},
        }
    }
    overrides = {
        "storage": storage,
        "telemetry": {"enabled": False},
        "local_artifact_storage": {
            "module": "dagster._core.storage.root",
            "class": "LocalArtifactStorage",
            "config": {"base_dir": str(base)},
        },
    }
    return DagsterInstance.from_ref(InstanceRef.from_dir(str(base), overrides=overrides))


def _open_db_files(base: Path) -> set[str]:
    found = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(str(base)) and target.endswith(".db"):
            found.add(os.path.basename(target))
    return found


def test_connections_sync_normally_and_written_files_stay_open_until_disposed(tmp_path: Path) -> None:
    instance = _instance(tmp_path)
    result = tiny.execute_in_process(instance=instance)
    assert result.success
    storage = instance.event_log_storage
    with storage.index_connection() as conn:
        assert conn.exec_driver_sql("pragma synchronous").scalar() == 1  # NORMAL (FULL is 2)
        assert conn.exec_driver_sql("pragma journal_mode").scalar() == "wal"
    held = _open_db_files(tmp_path)
    assert {f"{result.run_id}.db", "index.db", "runs.db"} <= held
    # what was written is there for another reader (the webserver, the next index)
    other = _instance(tmp_path)
    assert [e.dagster_event_type for e in other.all_logs(result.run_id) if e.is_dagster_event][
        -1
    ].value == "PIPELINE_SUCCESS"
    other.dispose()
    instance.dispose()
    assert _open_db_files(tmp_path) == set()


def test_wipe_closes_the_run_files_before_deleting_them_and_runs_still_write(tmp_path: Path) -> None:
    instance = _instance(tmp_path)
    first = tiny.execute_in_process(instance=instance)
    instance.event_log_storage.wipe()
    assert f"{first.run_id}.db" not in _open_db_files(tmp_path)
    second = tiny.execute_in_process(instance=instance)
    assert second.success and instance.all_logs(second.run_id)
    instance.dispose()


def test_at_most_a_few_run_files_are_held_open(tmp_path: Path) -> None:
    instance = _instance(tmp_path)
    runs = [tiny.execute_in_process(instance=instance).run_id for _ in range(event_log.OPEN_FILES + 2)]
    held = _open_db_files(tmp_path)
    assert f"{runs[-1]}.db" in held and f"{runs[0]}.db" not in held
    assert len([name for name in held if name not in ("index.db", "runs.db", "schedules.db")]) <= event_log.OPEN_FILES
    instance.dispose()


def test_a_run_opens_few_sqlite_connections(tmp_path: Path) -> None:
    """The storages keep their engines: a run opens its own shard, not a connection per write
    (Dagster's SQLite storages opened 34 for this one-op run)."""
    opened: list[object] = []

    def count(dbapi_connection: object, _record: object) -> None:
        opened.append(dbapi_connection)

    instance = _instance(tmp_path)
    tiny.execute_in_process(instance=instance)
    event.listen(Engine, "connect", count)
    try:
        for _ in range(2):
            before = len(opened)
            assert tiny.execute_in_process(instance=instance).success
            assert len(opened) - before <= 3
    finally:
        event.remove(Engine, "connect", count)
        instance.dispose()


def test_alembic_revision_scripts_are_read_once_per_process(tmp_path: Path) -> None:
    """Dagster checks and stamps every new SQLite file through a new alembic script directory;
    with the storage in use they share one revision map instead of reading the scripts again."""
    from alembic.script import ScriptDirectory
    from dagster._core.storage.runs.sqlite import sqlite_run_storage
    from dagster._core.storage.sql import get_alembic_config

    instance = _instance(tmp_path)
    assert tiny.execute_in_process(instance=instance).success
    first = ScriptDirectory.from_config(get_alembic_config(sqlite_run_storage.__file__))
    second = ScriptDirectory.from_config(get_alembic_config(sqlite_run_storage.__file__))
    assert first is not second and first.revision_map is second.revision_map
    assert first.get_current_head()  # the shared map still resolves the head revision
    instance.dispose()
