"""Reading and writing whole tables or partitions of tables in the project database.

These functions hold the storage rules in one place, for the IO manager and for the few steps that
write outside it (row deletion for removed documents, the LLM cache):

- tables live in DuckDB's default schema with plain names, so ``SELECT * FROM text_units`` works
  from the DuckDB CLI and nothing depends on the database file's name;
- a write of a partition (or of a whole table) is one transaction: readers see the old rows or the
  new rows, never a mix, and a failure leaves the old rows in place;
- rows are inserted by column name, never by position;
- an empty frame still creates its table with the right columns.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import duckdb
import polars as pl

from graphrag_assets.storage.database import (
    LOCK_WAIT_SECONDS,
    FrameStream,
    connect,
    frame_of,
    table_exists,
    transaction,
)
from graphrag_assets.storage.pending_rows import working_source


def quote(identifier: str) -> str:
    """Quote an SQL identifier (table or column name)."""
    return '"' + identifier.replace('"', '""') + '"'


_FIXED_ARRAY = re.compile(r"^[A-Z]+\[\d+\]$")


def sync_columns(conn: duckdb.DuckDBPyConnection, table: str, frame_view: str, *, retype: bool) -> None:
    """Make the table accept the frame: add the columns it lacks and, with ``retype``, change the
    size of fixed-size array columns (embedding vectors) whose size differs.

    A changed size means the rows were written with other settings (another embedding model gives
    vectors of another size, ``FLOAT[1536]`` instead of ``FLOAT[512]``). Those rows' values cannot
    be cast, so the column is emptied (NULL) for them; their documents are re-run because the
    settings fingerprint changed too. An empty frame carries no evidence of a new type, so it
    never retypes (its placeholder types are not the real ones).
    """
    existing = {row[0]: row[1] for row in conn.execute(f"describe {quote(table)}").fetchall()}
    for name, dtype, *_ in conn.execute(f"describe {quote(frame_view)}").fetchall():
        if name not in existing:
            conn.execute(f"alter table {quote(table)} add column {quote(name)} {dtype}")
        elif retype and existing[name] != dtype and _FIXED_ARRAY.match(existing[name]) and _FIXED_ARRAY.match(dtype):
            conn.execute(f"alter table {quote(table)} alter {quote(name)} type {dtype} using NULL")


def write_table(path: str | Path, table: str, frame: pl.DataFrame) -> None:
    """Replace the whole table with ``frame`` atomically."""
    with connect(path) as conn, transaction(conn, _incoming=frame):
        conn.execute(f"create or replace table {quote(table)} as select * from _incoming")


def write_partitions(
    path: str | Path, table: str, frame: pl.DataFrame, partition_column: str, partition_keys: Sequence[str]
) -> None:
    """Replace the rows of ``partition_keys`` in ``table`` with ``frame`` in one transaction.

    Every row of ``frame`` must belong to one of ``partition_keys`` (a frame without the partition
    column gets it filled in when exactly one key is written).
    """
    keys = list(partition_keys)
    if partition_column not in frame.columns:
        if len(keys) != 1:
            raise ValueError(f"frame for {table} lacks partition column {partition_column!r}")
        frame = frame.with_columns(pl.lit(keys[0], dtype=pl.String).alias(partition_column))
    stray = set(frame.get_column(partition_column).unique().to_list()) - set(keys)
    if stray:
        raise ValueError(
            f"rows for partitions {sorted(stray)[:3]} cannot be written while writing {keys[:3]} of {table}"
        )
    key_frame = pl.DataFrame({"key": keys}, schema={"key": pl.String})
    with connect(path) as conn, transaction(conn, _incoming=frame, _keys=key_frame):
        if not table_exists(conn, table):
            conn.execute(f"create table {quote(table)} as select * from _incoming limit 0")
        else:
            sync_columns(conn, table, "_incoming", retype=frame.height > 0)
        conn.execute(f"delete from {quote(table)} where {quote(partition_column)} in (select key from _keys)")
        if frame.height:
            conn.execute(f"insert into {quote(table)} by name select * from _incoming")


def read_table(
    path: str | Path,
    table: str,
    *,
    partition_column: str | None = None,
    partition_keys: Sequence[str] | None = None,
    columns: Sequence[str] | None = None,
    read_only: bool = False,
    wait_seconds: float = LOCK_WAIT_SECONDS,
) -> pl.DataFrame | None:
    """The table (or the rows of some partitions) as a polars frame; None when it does not exist.

    ``columns``: only these. A polars string column costs 16 bytes a row even where it is null, so
    a wide table whose reader needs a few of its columns is cheaper read that way.
    """
    if read_only and not Path(path).exists():
        return None
    selected = "*" if columns is None else ", ".join(quote(column) for column in columns)
    with connect(path, read_only=read_only, wait_seconds=wait_seconds) as conn:
        source = working_source(conn, table)  # with rows of documents not published yet
        if source is None:
            return None
        if partition_column and partition_keys is not None:
            conn.register("_keys", FrameStream(pl.DataFrame({"key": list(partition_keys)}, schema={"key": pl.String})))
            try:
                return frame_of(
                    conn.sql(
                        f"select {selected} from {source} where {quote(partition_column)} in (select key from _keys)"
                    )
                )
            finally:
                conn.unregister("_keys")
        return frame_of(conn.sql(f"select {selected} from {source}"))


def _delete_by_keys(
    path: str | Path, tables: Sequence[str], partition_column: str, keys: Sequence[str], *, keep: bool
) -> dict[str, int]:
    """Delete, in one transaction, the rows whose partition is in ``keys`` (or not in, with ``keep``)."""
    deleted: dict[str, int] = {}
    if not Path(path).exists():
        return deleted
    operator = "not in" if keep else "in"
    key_frame = pl.DataFrame({"key": list(keys)}, schema={"key": pl.String})
    with connect(path) as conn, transaction(conn, _keys=key_frame):
        for table in tables:
            if not table_exists(conn, table):
                continue
            where = f"{quote(partition_column)} {operator} (select key from _keys)"
            count = conn.execute(f"select count(*) from {quote(table)} where {where}").fetchall()[0][0]
            if count:
                conn.execute(f"delete from {quote(table)} where {where}")
                deleted[table] = int(count)
    return deleted


def delete_partitions(
    path: str | Path, tables: Sequence[str], partition_column: str, partition_keys: Sequence[str]
) -> dict[str, int]:
    """Delete the rows of ``partition_keys`` from each existing table, in one transaction.

    Dagster forgets a deleted dynamic partition but not the rows written for it; this removes them.
    Returns the number of rows deleted per table (tables without such rows are left out).
    """
    return _delete_by_keys(path, tables, partition_column, partition_keys, keep=False)


def purge_partitions_except(
    path: str | Path, tables: Sequence[str], partition_column: str, keep: Sequence[str]
) -> dict[str, int]:
    """Delete rows whose partition is not in ``keep`` (documents removed since they were written)."""
    return _delete_by_keys(path, tables, partition_column, keep, keep=True)
