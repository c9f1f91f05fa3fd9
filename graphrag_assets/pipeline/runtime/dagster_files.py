"""Where the project's Dagster instance keeps its state, and what can be read there without Dagster.

``graphrag-assets index`` with nothing to do should not pay for importing Dagster (about a second):
with the default storage (SQLite files under ``data/dagster/storage``, see
:func:`graphrag_assets.pipeline.runtime.instance.open_instance`), whether runs are pending and which
document partitions are registered are two read-only queries on those files. Anything unexpected
(PostgreSQL storage, a missing file, another schema) answers ``None``, and the caller asks Dagster.
"""

from __future__ import annotations

import importlib.util
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import yaml

from graphrag_assets.core.errors import UserError
from graphrag_assets.core.settings import Settings

DAGSTER_DIR = "data/dagster"
# Dagster's SQLite storage layout under its base_dir (see dagster_private.runs_directory and
# event_logs_directory; graphrag_assets_tests/test_dagster_private.py checks that they agree).
RUNS_DB = "storage/history/runs.db"
EVENT_INDEX_DB = "storage/history/runs/index.db"
# DagsterRunStatus values of a run that is queued or in progress (instance.PENDING is made of them).
PENDING_STATUSES = ("QUEUED", "NOT_STARTED", "STARTING", "STARTED")


@dataclass(frozen=True)
class DagsterState:
    pending_runs: int  # queued or in progress, however old, dead processes included
    partitions: list[str]  # registered keys of the dynamic partitions definition, in order


def uses_postgres(settings: Settings) -> bool:
    """Whether the project's dagster.yaml keeps Dagster's state in PostgreSQL (checks the extra is installed)."""
    path = settings.root / "dagster.yaml"
    if not path.exists():
        return False
    try:
        config = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise UserError(
            f"{path} is not valid YAML ({exc.__class__.__name__}); fix it or write it again with graphrag-assets init --force."
        ) from exc
    storage = config.get("storage") if isinstance(config, dict) else None
    if not (isinstance(storage, dict) and "postgres" in storage):
        return False
    if importlib.util.find_spec("dagster_postgres") is None:
        raise UserError(
            f"{path} keeps Dagster's state in PostgreSQL, but dagster-postgres is not installed: pip install 'graphrag-assets[postgres]'."
        )
    return True


def read_sqlite_state(settings: Settings, partitions_name: str) -> DagsterState | None:
    """Pending runs and registered ``partitions_name`` keys, read from the SQLite files (None when
    the instance keeps its state elsewhere or the files are not what we expect)."""
    base = settings.path(DAGSTER_DIR)
    runs, index = base / RUNS_DB, base / EVENT_INDEX_DB
    if uses_postgres(settings) or not runs.is_file() or not index.is_file():
        return None
    marks = ", ".join("?" for _ in PENDING_STATUSES)
    try:
        (pending,) = _query(runs, f"select count(*) from runs where status in ({marks})", PENDING_STATUSES)[0]
        rows = _query(
            index,
            "select partition from dynamic_partitions where partitions_def_name = ? order by id",
            (partitions_name,),
        )
    except sqlite3.Error:
        return None
    return DagsterState(int(pending), [row[0] for row in rows])


def _query(path: Path, sql: str, parameters: tuple) -> list[tuple]:
    """Rows of a read-only query (``mode=ro``: never creates, migrates or locks the file for writing)."""
    connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        return connection.execute(sql, parameters).fetchall()
    finally:
        connection.close()
