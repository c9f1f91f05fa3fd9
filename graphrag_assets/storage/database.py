"""DuckDB connections.

DuckDB lets one process write a database file, or several processes read it. Every connection
here is short-lived (opened for one read or one write, then closed) so that an indexing run never
holds the file while it waits on a model, and readers (CLI, query job) retry briefly while a run
is writing. The database instance behind them stays warm while the process keeps using the file
and is let go of within a fraction of a second after (:mod:`graphrag_assets.storage.warm`).
"""

from __future__ import annotations

import contextlib
import errno
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import duckdb
import polars as pl

from graphrag_assets.core.errors import UserError
from graphrag_assets.storage.warm import (
    REST_SECONDS,
    InstanceBusy,
    Lease,
    release,
    signal_waiting,
    stop_waiting,
    warm_instances,
)

LOCK_WAIT_SECONDS = 30.0
# Retries while the file is locked back off up to this: shorter than the rest a process using the
# file gives others (storage/warm.py), so a waiting reader does not sleep through it.
RETRY_CAP_SECONDS = REST_SECONDS * 2 / 3
# DuckDB result types polars cannot take through the Arrow C stream (it aborts the process with a
# panic instead of raising): results holding one go through pyarrow.
_NOT_STREAMABLE = ("INTERVAL", "UNION")


def frame_of(relation: duckdb.DuckDBPyRelation) -> pl.DataFrame:
    """A query result as a polars frame, through the Arrow C stream interface where possible.

    ``relation.pl()`` converts through pyarrow, and importing pyarrow (with numpy) is about a
    quarter of the time a reading command such as ``status`` or ``sql`` takes; the stream gives
    the same frame without it.
    """
    if any(word in str(dtype) for dtype in relation.types for word in _NOT_STREAMABLE):
        return relation.pl()
    return pl.DataFrame(relation)


class FrameStream:
    """A polars frame as DuckDB scans it without pyarrow: through the Arrow C stream interface.

    DuckDB reads a polars frame given to ``register`` (or named in a query) by converting it with
    ``to_arrow()``, which imports pyarrow: +25 MB resident at import, in an indexing process that
    needs pyarrow for nothing else (without it, the cold index of ``bench/profile_index.py`` peaked
    at 381 MB instead of 413, medians of 8 runs each). DuckDB takes any object with
    ``__arrow_c_stream__`` without pyarrow; each scan asks polars for a fresh stream, so a
    registered view can be read more than once.
    A frame with a column of polars' ``Null`` type (all None, nested or not) still goes through
    pyarrow: DuckDB 2.0.1 rejects polars' export of such a column that holds rows (a null count without
    a validity bitmap).
    """

    __slots__ = ("frame",)

    def __init__(self, frame: pl.DataFrame) -> None:
        self.frame = frame

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        if any(_holds_null_type(dtype) for dtype in self.frame.dtypes):
            return self.frame.to_arrow().__arrow_c_stream__(requested_schema)
        return self.frame.__arrow_c_stream__(requested_schema)


def _holds_null_type(dtype: pl.DataType) -> bool:
    if dtype == pl.Null:
        return True
    if isinstance(dtype, (pl.List, pl.Array)):
        return _holds_null_type(dtype.inner)
    if isinstance(dtype, pl.Struct):
        return any(_holds_null_type(field.dtype) for field in dtype.fields)
    return False


def _is_lock_error(exc: Exception) -> bool:
    text = str(exc).lower()
    return (
        "lock" in text
        or "conflicting" in text
        or "being used by another process" in text
        or "different configuration" in text
    )


@contextlib.contextmanager
def connect(
    path: str | Path,
    *,
    read_only: bool = False,
    wait_seconds: float = LOCK_WAIT_SECONDS,
    config: dict[str, object] | None = None,
) -> Iterator[duckdb.DuckDBPyConnection]:
    """Open the database file, retrying with backoff while another process holds its lock.

    ``config`` holds DuckDB settings applied when the connection opens (e.g. no file access).
    Inside :func:`reading`, a read-only connection without ``config`` is the block's shared one.
    """
    path = Path(path)
    shared = _shared_reader(path) if read_only and not config else None
    if shared is not None:
        yield shared
        return
    if read_only and not path.exists():
        raise UserError(f"no index database at {path}; run 'graphrag-assets index' first.")
    if not read_only:
        path.parent.mkdir(parents=True, exist_ok=True)
    key = str(path.resolve())
    try:
        lease = _acquire(path, key, read_only=read_only, wait_seconds=wait_seconds, config=config)
        try:
            yield lease.conn
        finally:
            warm_instances().give_back(lease)
    except (duckdb.Error, OSError) as exc:
        if is_disk_full(exc):
            raise disk_full(path.parent) from exc
        raise


# How "no space left" reads in the errors of DuckDB, LanceDB (Rust IO errors) and SQLite.
_DISK_FULL_WORDS = ("no space left on device", "database or disk is full", "disk full")


def is_disk_full(exc: BaseException) -> bool:
    """Whether ``exc`` says the disk is full (OSError ENOSPC, or a library's message saying so)."""
    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
        return True
    return any(words in str(exc).lower() for words in _DISK_FULL_WORDS)


def disk_full(folder: Path) -> UserError:
    """The one sentence a full disk gets: the write failed before anything was published (a
    build commits in one transaction), so freeing space and indexing again is all it takes."""
    return UserError(f"the disk holding {folder} is full; free space and run index again (nothing was published).")


def _acquire(path: Path, key: str, *, read_only: bool, wait_seconds: float, config: dict[str, object] | None) -> Lease:
    """A lease on the file, retrying while it is locked; while another process holds it, this one
    signals that it waits (so that process lets go at the end of its hold, see storage/warm.py)."""
    deadline = time.monotonic() + wait_seconds
    delay = 0.05
    signalled = False
    try:
        while True:
            try:
                return warm_instances().acquire(key, read_only=read_only, config=config)
            except (duckdb.IOException, duckdb.ConnectionException, InstanceBusy) as exc:
                # ConnectionException / InstanceBusy: this process already has the file open with other
                # settings (a short-lived cache write while a server reads, say); like a lock, it passes.
                busy = isinstance(exc, InstanceBusy) or _is_lock_error(exc)
                if not busy or time.monotonic() >= deadline:
                    if busy:
                        raise UserError(
                            f"the index database {path} is locked by another process (an indexing run?); "
                            f"wait for it to finish and try again."
                        ) from None
                    raise
                if isinstance(exc, duckdb.IOException):  # the lock is another process's
                    signal_waiting(key)
                    signalled = True
                time.sleep(delay)
                delay = min(delay * 2, RETRY_CAP_SECONDS)
    finally:
        if signalled:
            stop_waiting(key)


def let_go(path: str | Path | None = None) -> None:
    """Close the warm instance of ``path`` (of every file when None), so the file is checkpointed
    and other processes may open it; connections in use close it when they finish."""
    release(None if path is None else str(Path(path).resolve()))


_readers = threading.local()  # path -> the read-only connection a reading() block shares, per thread


def _shared_reader(path: Path) -> duckdb.DuckDBPyConnection | None:
    return getattr(_readers, "open", {}).get(path.resolve())


@contextlib.contextmanager
def reading(path: str | Path) -> Iterator[None]:
    """Within the block, this thread's read-only connections to ``path`` are one connection.

    A command such as ``status`` reads a dozen tables through functions that each open the file;
    every open costs ~10 ms (more under load) and reads the catalog again. The block opens it once
    (when it exists) and closes it at the end. It is for reading only: DuckDB refuses, within one
    process, a writer or another configuration of a file that is open read-only. Other threads open
    their own connections (a DuckDB connection is not shared across threads). The block's connection
    comes from the warm instance (:mod:`graphrag_assets.storage.warm`): inside an indexing run it is
    one on the run's read-write instance; otherwise a write inside the block raises
    ``ConnectionConflict`` at once (it used to wait 30 s for itself).
    """
    path = Path(path)
    if not path.exists() or _shared_reader(path) is not None:
        yield
        return
    with connect(path, read_only=True) as conn:
        opened = _readers.__dict__.setdefault("open", {})
        opened[path.resolve()] = conn
        try:
            yield
        finally:
            del opened[path.resolve()]


@contextlib.contextmanager
def transaction(conn: duckdb.DuckDBPyConnection, **frames: pl.DataFrame) -> Iterator[duckdb.DuckDBPyConnection]:
    """One transaction on ``conn`` with ``frames`` registered as views by name; rolled back on error.

    Readers never see part of what the block writes: they see the state before or after it.
    """
    for name, frame in frames.items():
        conn.register(name, FrameStream(frame))
    conn.execute("begin transaction")
    try:
        yield conn
        conn.execute("commit")
    except BaseException:
        # A commit that failed (a full disk) has ended the transaction already: the rollback's own
        # error ("no transaction is active") must not hide the cause.
        with contextlib.suppress(duckdb.Error):
            conn.execute("rollback")
        raise
    finally:
        for name in frames:
            conn.unregister(name)


def table_exists(conn: duckdb.DuckDBPyConnection, table: str) -> bool:
    return bool(existing_tables(conn, [table]))


def existing_tables(conn: duckdb.DuckDBPyConnection, tables: Sequence[str]) -> set[str]:
    """Which of ``tables`` exist, asked in one query (each query of the catalog costs ~1 ms)."""
    marks = ", ".join("?" for _ in tables)
    rows = conn.execute(
        f"select table_name from information_schema.tables where table_schema = 'main' and table_name in ({marks})",
        list(tables),
    ).fetchall()
    return {row[0] for row in rows}


def rewrite_compact(path: str | Path) -> None:
    """Copy the database into a fresh file and swap it in, so the space of deleted rows is returned.

    DuckDB reuses the blocks of deleted rows but never shortens its file; a copy holds only live
    data. The copy is written beside the file and renamed over it in one step, so a failure leaves
    the original untouched; readers that still have the old file open keep reading it.
    """
    path = Path(path)
    fresh = path.with_name(path.name + ".compact")
    fresh.unlink(missing_ok=True)
    try:
        with connect(path) as conn:
            conn.execute("checkpoint")
            source = conn.execute("select current_database()").fetchone()[0]
            conn.execute(f"attach '{fresh}' as compact_copy")
            conn.execute(f'copy from database "{source}" to compact_copy')
            conn.execute("detach compact_copy")
        let_go(path)  # a warm instance would go on reading the old file after the swap
        fresh.replace(path)
    finally:
        fresh.unlink(missing_ok=True)
