"""Dagster's SQLite storage with batched event writes (the project's default instance storage).

Dagster writes one event per asset and partition it plans and materializes (two per document and
per-document asset), and its SQLite event log opens a new engine, writes and commits (an fsync)
for every event on the run's shard and again on the index shard. Measured here: 12 events per
document, about 15 ms each, which made a 1,000-document index spend 190 s of its 310 s storing
events. Dagster can hand a step's materializations and a run's planned events to the storage as
one batch (when ``DAGSTER_EVENT_BATCH_SIZE`` is set), but only its Postgres storage writes a batch
at once; the SQLite storage falls back to one event at a time. :class:`BatchedSqliteEventLogStorage`
writes a batch with one transaction per shard and stores exactly the rows ``store_event`` stores,
so the UI, sensors and the asset queries read it unchanged.

Every commit also used to cost two fsyncs: SQLite syncs the WAL on commit (``synchronous=FULL``,
its default) and checkpoints it when the last connection to a file closes, and Dagster opens and
closes a connection for every write; a new run's file was also created in rollback-journal mode
(Dagster switches it to WAL after creating its tables). Measured here (issue 14): 25 ms per
open-insert-commit-close, 0.2 ms with ``synchronous=NORMAL`` while another connection to the file
stays open; 1,335 fdatasync calls for eleven one-op runs, 283 now; SQLite storage was about a
fifth of a cold index's main-thread time (py-spy). So every SQLite connection SQLAlchemy opens
in a process using this storage (Dagster's storages are its only user) is put in WAL mode with
``synchronous=NORMAL`` (the database stays consistent after a crash or power loss; a power loss
may lose the last events written), and the storage keeps one idle connection open to the files it
writes (:class:`_OpenFiles`), closed when the storage is disposed.

Configured in ``dagster.yaml`` as ``storage: custom: {module: graphrag_assets.pipeline.event_log,
class: BatchedSqliteStorage, config: {base_dir: ...}}``; the layout on disk is that of
``storage: sqlite``, so a project can switch between the two.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import yaml
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine
from dagster._core.events import ASSET_CHECK_EVENTS, ASSET_EVENTS, EVENT_TYPE_TO_PIPELINE_RUN_STATUS
from dagster._core.events.log import EventLogEntry
from dagster._core.storage.event_log.schema import SqlEventLogStorageTable
from dagster._core.storage.event_log.sqlite.sqlite_event_log import INDEX_SHARD_NAME, SqliteEventLogStorage
from dagster._core.storage.sqlite_storage import DagsterSqliteStorage, _event_logs_directory, _runs_directory
from dagster._serdes import ConfigurableClassData

# Events Dagster may buffer before handing them to the storage as one batch (it reads the
# variable at every event, so setting it before the first run is enough).
BATCH_SIZE_VARIABLE = "DAGSTER_EVENT_BATCH_SIZE"
EVENT_BATCH_SIZE = 10_000


OPEN_FILES = 8  # run shards kept open at most (a long-lived webserver writes many runs)


def _sync_normally(dbapi_connection: Any, _record: Any) -> None:
    if isinstance(dbapi_connection, sqlite3.Connection):
        # WAL from the start: Dagster switches a new file to WAL only after creating its tables,
        # which in rollback-journal mode costs several syncs per statement.
        dbapi_connection.execute("pragma journal_mode=WAL")
        dbapi_connection.execute("pragma synchronous=NORMAL")


def sync_sqlite_normally() -> None:
    """Give every SQLite connection SQLAlchemy opens in this process ``synchronous=NORMAL``.

    SQLAlchemy's connect event is per class here because Dagster's storages create a new engine
    for each write; Dagster is the only user of SQLAlchemy in our processes."""
    if not event.contains(Engine, "connect", _sync_normally):
        event.listen(Engine, "connect", _sync_normally)


class _OpenFiles:
    """Idle connections to the SQLite files a storage writes, so that closing Dagster's
    connection after a write is never the last close (which checkpoints the WAL and syncs).

    Run shards are held for the ``limit`` most recently written runs; ``pinned`` files (the index
    shard, runs.db) for the storage's lifetime."""

    def __init__(self, limit: int = OPEN_FILES) -> None:
        self.limit = limit
        self._recent: OrderedDict[str, sqlite3.Connection] = OrderedDict()
        self._pinned: dict[str, sqlite3.Connection] = {}
        self._lock = threading.Lock()

    def hold(self, path: str, *, pinned: bool = False) -> None:
        with self._lock:
            if path in self._pinned:
                return
            if path in self._recent:
                self._recent.move_to_end(path)
                return
            if not os.path.exists(path):  # Dagster creates (and initializes) the file itself
                return
            connection = sqlite3.connect(path, check_same_thread=False)
            # Reading opens the WAL index: only then does the connection count as one still using
            # the file when another closes (an open that never read does not).
            connection.execute("select count(*) from sqlite_master").fetchall()
            if pinned:
                self._pinned[path] = connection
                return
            self._recent[path] = connection
            while len(self._recent) > self.limit:
                self._recent.popitem(last=False)[1].close()

    def close(self) -> None:
        with self._lock:
            for connection in [*self._recent.values(), *self._pinned.values()]:
                connection.close()
            self._recent.clear()
            self._pinned.clear()


def enable_event_batching() -> None:
    """Let Dagster batch a step's materializations and a run's planned events (unless the user set a size)."""
    os.environ.setdefault(BATCH_SIZE_VARIABLE, str(EVENT_BATCH_SIZE))


class BatchedSqliteEventLogStorage(SqliteEventLogStorage):
    """SQLite event log that writes a batch of events in one transaction per shard."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None) -> None:
        sync_sqlite_normally()
        super().__init__(base_dir, inst_data=inst_data)
        self._open_files = _OpenFiles()

    @contextmanager
    def _connect(self, shard: str) -> Iterator[Connection]:
        with super()._connect(shard) as conn:
            yield conn
        self._open_files.hold(self.path_for_shard(shard), pinned=shard == INDEX_SHARD_NAME)

    def dispose(self) -> None:
        super().dispose()
        self._open_files.close()

    def wipe(self) -> None:
        self._open_files.close()  # before the run shards' files are deleted
        super().wipe()

    def hold_file(self, path: str) -> None:
        """Keep ``path`` (another SQLite file of this instance) open until the storage is disposed."""
        self._open_files.hold(path, pinned=True)

    def store_event_batch(self, events: Sequence[EventLogEntry]) -> None:
        by_run: dict[str, list[EventLogEntry]] = {}
        for event in events:
            by_run.setdefault(event.run_id, []).append(event)
        for run_id, run_events in by_run.items():
            self._store_run_batch(run_id, run_events)

    def _store_run_batch(self, run_id: str, events: list[EventLogEntry]) -> None:
        rows = [self._event_to_row(event) for event in events]
        with self.run_connection(run_id) as conn:
            conn.execute(SqlEventLogStorageTable.insert(), rows)
        asset = [(event, row) for event, row in zip(events, rows) if event.is_dagster_event and event.dagster_event_type in ASSET_EVENTS]
        if asset:
            insert = SqlEventLogStorageTable.insert().returning(SqlEventLogStorageTable.c.id, sort_by_parameter_order=True)
            with self.index_transaction() as conn:
                event_ids = [row[0] for row in conn.execute(insert, [row for _, row in asset])]
                asset_events = [event for event, _ in asset]
                self._store_asset_event_tags(conn, asset_events, event_ids)
                # The asset's row keeps only the latest event of each kind, so the last one is enough.
                latest = {(event.dagster_event.asset_key, event.dagster_event_type): (event, event_id) for event, event_id in zip(asset_events, event_ids)}
                for event, event_id in latest.values():
                    self._store_asset_event(conn, event, event_id)
        for event in events:
            if event.is_dagster_event and event.dagster_event_type in ASSET_CHECK_EVENTS:
                with self.index_connection() as conn:
                    event_id = conn.execute(self.prepare_insert_event(event)).inserted_primary_key[0]
                self.store_asset_check_event(event, event_id)
            if event.is_dagster_event and event.dagster_event_type in EVENT_TYPE_TO_PIPELINE_RUN_STATUS:
                with self.index_connection() as conn:
                    conn.execute(self.prepare_insert_event(event))


class BatchedSqliteStorage(DagsterSqliteStorage):
    """``storage: sqlite`` with :class:`BatchedSqliteEventLogStorage` as its event log."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None) -> None:
        sync_sqlite_normally()
        super().__init__(base_dir, inst_data=inst_data)
        self._event_log_storage = BatchedSqliteEventLogStorage(_event_logs_directory(base_dir))
        # Held by the event log, which the instance keeps (it drops this composite object).
        self._event_log_storage.hold_file(os.path.join(_runs_directory(base_dir), "runs.db"))
        enable_event_batching()

    @classmethod
    def from_config_value(cls, inst_data: ConfigurableClassData, config_value: Mapping[str, str]) -> "BatchedSqliteStorage":
        return cls.from_local(inst_data=inst_data, **config_value)

    @property
    def event_storage_data(self) -> ConfigurableClassData | None:
        return ConfigurableClassData(
            __name__, BatchedSqliteEventLogStorage.__name__, yaml.dump({"base_dir": _event_logs_directory(self.base_dir)})
        )
