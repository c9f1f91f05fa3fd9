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
may lose the last events written), and the storage keeps its connections open between writes
(:class:`_ShardEngines` for the event log, :class:`KeptEngineRunStorage` for runs.db), closed when
the storage is disposed. Dagster creates an engine for every write and every ``has_table`` check:
518 engines in a cold index of *A Christmas Carol*, 18 now, which took a tenth of that index's CPU
time off (4.6 s instead of 5.1 s, medians of three A/B pairs).

Configured in ``dagster.yaml`` as ``storage: custom: {module: graphrag_assets.pipeline.runtime.event_log,
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
from functools import cached_property
from typing import Any

import yaml
from alembic.script import ScriptDirectory
from dagster import EventLogEntry, serialize_value
from sqlalchemy import create_engine
from sqlalchemy import event as sqlalchemy_event
from sqlalchemy.engine import Connection, Engine

from graphrag_assets.pipeline.runtime.dagster_private import (
    ASSET_CHECK_EVENTS,
    ASSET_EVENTS,
    EVENT_TYPE_TO_PIPELINE_RUN_STATUS,
    INDEX_SHARD_NAME,
    SQLITE_BUSY_TIMEOUT_SECONDS,
    ConfigurableClassData,
    DagsterSqliteStorage,
    SqlEventLogStorageTable,
    SqliteEventLogStorage,
    SqliteRunStorage,
    SqliteScheduleStorage,
    event_logs_directory,
    runs_directory,
    schedule_directory,
)

# Events Dagster may buffer before handing them to the storage as one batch (it reads the
# variable at every event, so setting it before the first run is enough).
BATCH_SIZE_VARIABLE = "DAGSTER_EVENT_BATCH_SIZE"
EVENT_BATCH_SIZE = 10_000


# The event kinds (``dagster_event_type`` of a row) the index shard stores besides the run's own shard.
_ASSET_EVENT_KINDS = frozenset(kind.value for kind in ASSET_EVENTS)
_CHECK_EVENT_KINDS = frozenset(kind.value for kind in ASSET_CHECK_EVENTS)
_RUN_STATUS_EVENT_KINDS = frozenset(kind.value for kind in EVENT_TYPE_TO_PIPELINE_RUN_STATUS)

OPEN_FILES = 8  # run shards kept open at most (a long-lived webserver writes many runs)


def _sync_normally(dbapi_connection: Any, _record: Any) -> None:
    if isinstance(dbapi_connection, sqlite3.Connection):
        # WAL from the start: Dagster switches a new file to WAL only after creating its tables,
        # which in rollback-journal mode costs several syncs per statement.
        dbapi_connection.execute("pragma journal_mode=WAL")
        dbapi_connection.execute("pragma synchronous=NORMAL")


def sync_sqlite_normally() -> None:
    """Give every SQLite connection SQLAlchemy opens in this process ``synchronous=NORMAL``.

    SQLAlchemy's connect event is per class here because Dagster's storages create engines of
    their own (the schedule storage one per call, every storage one when it sets up a file);
    Dagster is the only user of SQLAlchemy in our processes."""
    if not sqlalchemy_event.contains(Engine, "connect", _sync_normally):
        sqlalchemy_event.listen(Engine, "connect", _sync_normally)


_revision_maps: dict[tuple[str, tuple[str, ...]], Any] = {}


def _share_alembic_revision_maps() -> None:
    """Let every alembic script directory of this process share its revision map.

    Dagster checks and stamps the schema revision of each SQLite file it creates (runs, schedules,
    the event log's index and one file per run) through ``ScriptDirectory.from_config``, and each
    new script directory loads every revision script again: 11 times, 0.13 s of a cold index of
    *A Christmas Carol*. The scripts of one directory do not change while the process runs, so the
    first map read is shared; everything else about each script directory stays its own."""
    if getattr(ScriptDirectory.from_config, "_shares_revision_maps", False):
        return
    original = ScriptDirectory.from_config.__func__

    def from_config(cls: type[ScriptDirectory], config: Any) -> ScriptDirectory:
        script = original(cls, config)
        key = (str(script.dir), tuple(str(location) for location in script.version_locations))
        script.revision_map = _revision_maps.setdefault(key, script.revision_map)
        return script

    from_config._shares_revision_maps = True  # type: ignore[attr-defined]
    ScriptDirectory.from_config = classmethod(from_config)  # type: ignore[method-assign]


class _ShardEngines:
    """One engine per event-log shard, whose pool keeps its connection between writes.

    Dagster's own ``_connect`` creates an engine without a pool for every write (create, connect,
    set the pragmas, dispose), and closing that connection is then the file's last close, which
    checkpoints the WAL and syncs. Kept for the ``limit`` most recently written run shards and, for
    the storage's lifetime, for the index shard."""

    def __init__(self, limit: int = OPEN_FILES) -> None:
        self.limit = limit
        self._engines: OrderedDict[str, Engine] = OrderedDict()
        self._lock = threading.Lock()

    def engine(self, shard: str, conn_string: str) -> Engine:
        """The shard's engine (created on first use; past ``limit`` run shards, the least recently used one's is disposed)."""
        with self._lock:
            engine = self._engines.get(shard)
            if engine is not None:
                self._engines.move_to_end(shard)
                return engine
            engine = create_engine(conn_string, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS})
            self._engines[shard] = engine
            runs = [name for name in self._engines if name != INDEX_SHARD_NAME]
            for name in runs[: max(0, len(runs) - self.limit)]:
                self._engines.pop(name).dispose()
            return engine

    def close(self) -> None:
        with self._lock:
            for engine in self._engines.values():
                engine.dispose()
            self._engines.clear()


class _KeptEngine:
    """``connect`` for Dagster's SQLite run storage on one engine kept open, instead of a new engine
    per call (64 calls on runs.db in a cold index of *A Christmas Carol*). Not for the schedule
    storage: the instance never disposes that one (11 calls there)."""

    _conn_string: str

    @cached_property
    def _engine(self) -> Engine:
        return create_engine(self._conn_string)

    @contextmanager
    def connect(self) -> Iterator[Connection]:
        with self._engine.connect() as conn, conn.begin():
            yield conn

    def dispose(self) -> None:
        super().dispose()  # type: ignore[misc]
        if "_engine" in self.__dict__:
            self.__dict__.pop("_engine").dispose()


class KeptEngineRunStorage(_KeptEngine, SqliteRunStorage):
    """Dagster's SQLite run storage with a kept engine."""


def enable_event_batching() -> None:
    """Let Dagster batch a step's materializations and a run's planned events (unless the user set a size)."""
    os.environ.setdefault(BATCH_SIZE_VARIABLE, str(EVENT_BATCH_SIZE))


class BatchedSqliteEventLogStorage(SqliteEventLogStorage):
    """SQLite event log that writes a batch of events in one transaction per shard."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None) -> None:
        sync_sqlite_normally()
        _share_alembic_revision_maps()
        self._shard_engines = _ShardEngines()
        self._tables_present: set[str] = set()
        super().__init__(base_dir, inst_data=inst_data)

    @classmethod
    def from_config_value(
        cls, inst_data: ConfigurableClassData | None, config_value: Mapping[str, str]
    ) -> BatchedSqliteEventLogStorage:
        """This class (Dagster's returns a plain ``SqliteEventLogStorage``), so the class path in
        :attr:`BatchedSqliteStorage.event_storage_data` describes this storage."""
        return cls(inst_data=inst_data, **config_value)

    @contextmanager
    def _connect(self, shard: str) -> Iterator[Connection]:
        """Dagster's ``_connect`` (same lock, same first-use initialization, one transaction) on
        the shard's kept engine instead of a new one per write."""
        with self._db_lock:
            engine = self._shard_engines.engine(shard, self.conn_string_for_shard(shard))
            if shard not in self._initialized_dbs:
                self._initdb(engine)
                self._initialized_dbs.add(shard)
            with engine.connect() as conn, conn.begin():
                yield conn

    def has_table(self, table_name: str) -> bool:
        """Whether the index shard has ``table_name``, asked once per table that exists.

        Dagster asks before every dynamic-partitions read, asset-event write and asset-check
        lookup (91 times in a cold index of *A Christmas Carol*), each time on a new engine. A table
        does not go away while the storage is open (only a migration adds them), so a present one
        is remembered; an absent one is asked again. Must not take ``_db_lock``: Dagster asks while
        holding it, inside a write."""
        if table_name in self._tables_present:
            return True
        engine = self._shard_engines.engine(INDEX_SHARD_NAME, self.conn_string_for_shard(INDEX_SHARD_NAME))
        with engine.connect() as conn:
            present = bool(engine.dialect.has_table(conn, table_name))
        if present:
            self._tables_present.add(table_name)
        return present

    def dispose(self) -> None:
        super().dispose()
        self._shard_engines.close()

    def wipe(self) -> None:
        self._shard_engines.close()  # before the run shards' files are deleted
        super().wipe()

    def _event_to_row(self, event: EventLogEntry) -> dict[str, Any]:
        """The row Dagster's ``_event_to_row`` makes, reading the event's asset key and partition once.

        Dagster's reads each of them two or three times, and both are properties that dispatch on
        the event type: a fifth of the time spent storing a range run's events besides
        serializing them (two events per document and per-document asset)."""
        dagster_event = event.dagster_event
        asset_key = dagster_event.asset_key if dagster_event is not None else None
        return {
            "run_id": event.run_id,
            "event": serialize_value(event),
            "dagster_event_type": dagster_event.event_type_value if dagster_event is not None else None,
            "timestamp": self._event_insert_timestamp(event),
            "step_key": dagster_event.step_key if dagster_event is not None else event.step_key,
            "asset_key": asset_key.to_string() if asset_key else None,
            "partition": (dagster_event.partition or None) if dagster_event is not None else None,
        }

    def store_event_batch(self, events: Sequence[EventLogEntry]) -> None:
        by_run: dict[str, list[EventLogEntry]] = {}
        for event in events:
            by_run.setdefault(event.run_id, []).append(event)
        for run_id, run_events in by_run.items():
            self._store_run_batch(run_id, run_events)

    def _store_run_batch(self, run_id: str, events: list[EventLogEntry]) -> None:
        """The run shard gets every event; the index shard the asset, asset-check and run-status
        ones (sorted by the kind each row names, so no event is asked again)."""
        rows = [self._event_to_row(event) for event in events]
        with self.run_connection(run_id) as conn:
            conn.execute(SqlEventLogStorageTable.insert(), rows)
        asset = [(event, row) for event, row in zip(events, rows) if row["dagster_event_type"] in _ASSET_EVENT_KINDS]
        if asset:
            insert = SqlEventLogStorageTable.insert().returning(
                SqlEventLogStorageTable.c.id, sort_by_parameter_order=True
            )
            with self.index_transaction() as conn:
                event_ids = [row[0] for row in conn.execute(insert, [row for _, row in asset])]
                asset_events = [event for event, _ in asset]
                self._store_asset_event_tags(conn, asset_events, event_ids)
                # The asset's row keeps only the latest event of each kind, so the last one is enough.
                latest = {
                    (row["asset_key"], row["dagster_event_type"]): (event, event_id)
                    for (event, row), event_id in zip(asset, event_ids)
                }
                for event, event_id in latest.values():
                    self._store_asset_event(conn, event, event_id)
        for event, row in zip(events, rows):
            if row["dagster_event_type"] in _CHECK_EVENT_KINDS:
                with self.index_connection() as conn:
                    event_id = conn.execute(SqlEventLogStorageTable.insert().values(**row)).inserted_primary_key[0]
                self.store_asset_check_event(event, event_id)
            if row["dagster_event_type"] in _RUN_STATUS_EVENT_KINDS:
                with self.index_connection() as conn:
                    conn.execute(SqlEventLogStorageTable.insert().values(**row))


class BatchedSqliteStorage(DagsterSqliteStorage):
    """``storage: sqlite`` with :class:`BatchedSqliteEventLogStorage` as its event log and
    :class:`KeptEngineRunStorage` as its run storage."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None) -> None:
        """What ``DagsterSqliteStorage.__init__`` does, with this module's three storages (each
        creates and migrates its files on first use, as Dagster's do); calling that ``__init__``
        would first build Dagster's own three and set up a fresh project's files through them."""
        sync_sqlite_normally()
        _share_alembic_revision_maps()
        self.base_dir = base_dir
        self._run_storage = KeptEngineRunStorage.from_local(runs_directory(base_dir))
        self._event_log_storage = BatchedSqliteEventLogStorage(event_logs_directory(base_dir))
        self._schedule_storage = SqliteScheduleStorage.from_local(schedule_directory(base_dir))
        self._inst_data = inst_data
        super(DagsterSqliteStorage, self).__init__()
        enable_event_batching()

    @classmethod
    def from_config_value(
        cls, inst_data: ConfigurableClassData, config_value: Mapping[str, str]
    ) -> BatchedSqliteStorage:
        return cls.from_local(inst_data=inst_data, **config_value)

    @property
    def event_storage_data(self) -> ConfigurableClassData | None:
        return ConfigurableClassData(
            __name__,
            BatchedSqliteEventLogStorage.__name__,
            yaml.dump({"base_dir": event_logs_directory(self.base_dir)}),
        )
