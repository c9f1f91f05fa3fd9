"""Document rows that readers see only once the build made from them is published.

Readers (queries, ``serve``, ``export``, ``sql``) must see one build whole: its graph, and the
documents, text units and text-unit vectors that graph cites. The per-document steps run before
the corpus step, so rows they wrote straight into ``documents``, ``text_units`` and
``text_unit_embeddings`` were seen with the previous graph until the next publish — or for good,
when the run was killed in between: a graph citing text units that no longer existed, and text
units without vectors.

So those three tables (``BUILD_DOCUMENT_TABLES``) take a document run's rows in
``_pending_<table>`` (a partition write, like any other) and the documents it rewrote or deleted
in ``_pending_keys``, in one transaction per write. The pipeline reads the tables through
:func:`~.pending_rows.working_source` — the published rows of the documents not pending, plus the pending rows —
and the corpus publish folds the pending rows in with the corpus tables in its one transaction
(:func:`merge_pending`). Other per-document tables (``source_files``, ``graph_extractions``,
``extraction_status``, ``document_steps``) are the pipeline's own state, not part of a build.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path

import duckdb
import polars as pl

from graphrag_assets.storage.database import connect, table_exists, transaction
from graphrag_assets.storage.pending_rows import BUILD_DOCUMENT_TABLES, KEY_COLUMN, PENDING_KEYS, PENDING_PREFIX
from graphrag_assets.storage.tables import quote, sync_columns, write_partitions


def _pending(table: str) -> str:
    return quote(PENDING_PREFIX + table)


def _note_documents(conn: duckdb.DuckDBPyConnection, table: str, keys_view: str) -> None:
    conn.execute(f"create table if not exists {quote(PENDING_KEYS)} (table_name varchar, document_key varchar)")
    conn.execute(
        f"delete from {quote(PENDING_KEYS)} where table_name = ? and document_key in (select key from {keys_view})",
        [table],
    )
    conn.execute(f"insert into {quote(PENDING_KEYS)} select ?, key from {keys_view}", [table])


def write_document_partitions(
    path: str | Path, table: str, frame: pl.DataFrame, partition_column: str, partition_keys: Sequence[str]
) -> None:
    """Replace the rows of ``partition_keys``: pending until published for ``BUILD_DOCUMENT_TABLES``,
    at once for the others (:func:`~graphrag_assets.storage.tables.write_partitions`)."""
    if table not in BUILD_DOCUMENT_TABLES or partition_column != KEY_COLUMN:
        write_partitions(path, table, frame, partition_column, partition_keys)
        return
    keys = list(partition_keys)
    if KEY_COLUMN not in frame.columns:
        if len(keys) != 1:
            raise ValueError(f"frame for {table} lacks partition column {KEY_COLUMN!r}")
        frame = frame.with_columns(pl.lit(keys[0], dtype=pl.String).alias(KEY_COLUMN))
    key_frame = pl.DataFrame({"key": keys}, schema={"key": pl.String})
    with connect(path) as conn, transaction(conn, _incoming=frame, _keys=key_frame):
        pending = PENDING_PREFIX + table
        if not table_exists(conn, pending):  # with the published columns, so both read as one table
            source = quote(table) if table_exists(conn, table) else "_incoming"
            conn.execute(f"create table {quote(pending)} as select * from {source} limit 0")
        sync_columns(conn, pending, "_incoming", retype=frame.height > 0)
        conn.execute(f"delete from {quote(pending)} where {KEY_COLUMN} in (select key from _keys)")
        if frame.height:
            conn.execute(f"insert into {quote(pending)} by name select * from _incoming")
        _note_documents(conn, table, "_keys")


def forget_pending(conn: duckdb.DuckDBPyConnection, keys_view: str, *, keep: bool) -> dict[str, int]:
    """Mark the documents of ``keys_view`` (with ``keep``: every other document) deleted from the
    build tables, pending the publish; rows of the published build they take away, per table."""
    operator = "not in" if keep else "in"
    counts: dict[str, int] = {}
    for table in BUILD_DOCUMENT_TABLES:
        known = [t for t in (table, PENDING_PREFIX + table) if table_exists(conn, t)]
        if not known:
            continue
        documents = " union ".join(f"select {KEY_COLUMN} as key from {quote(t)}" for t in known)
        conn.execute(
            f"create or replace temp table _gone as select key from ({documents}) "
            f"where key {operator} (select key from {keys_view})"
        )
        if table_exists(conn, table):
            count = conn.execute(
                f"select count(*) from {quote(table)} where {KEY_COLUMN} in (select key from _gone)"
            ).fetchall()[0][0]
            if count:
                counts[table] = int(count)
        if conn.execute("select count(*) from _gone").fetchall()[0][0]:
            if table_exists(conn, PENDING_PREFIX + table):
                conn.execute(f"delete from {_pending(table)} where {KEY_COLUMN} in (select key from _gone)")
            _note_documents(conn, table, "_gone")
        conn.execute("drop table _gone")
    return counts


def mark_deleted(path: str | Path, keys: Sequence[str], *, keep: bool = False) -> dict[str, int]:
    """:func:`forget_pending` for ``keys`` in one transaction of its own (nothing when there is no database)."""
    if not Path(path).exists():
        return {}
    key_frame = pl.DataFrame({"key": list(keys)}, schema={"key": pl.String})
    with connect(path) as conn, transaction(conn, _keys=key_frame):
        return forget_pending(conn, "_keys", keep=keep)


def merge_pending(conn: duckdb.DuckDBPyConnection, replaced: Collection[str] = ()) -> list[str]:
    """Fold the pending document rows into the build tables (inside the publish's transaction);
    returns the tables changed. Tables in ``replaced`` were published whole (an import) and their
    pending rows are dropped."""
    if not table_exists(conn, PENDING_KEYS):
        return []
    merged = []
    for table in BUILD_DOCUMENT_TABLES:
        pending = PENDING_PREFIX + table
        noted = conn.execute(f"select count(*) from {quote(PENDING_KEYS)} where table_name = ?", [table]).fetchall()[0][
            0
        ]
        if table in replaced:
            conn.execute(f"drop table if exists {quote(pending)}")
            continue
        if noted and table_exists(conn, table):
            conn.execute(
                f"delete from {quote(table)} where {KEY_COLUMN} in "
                f"(select document_key from {quote(PENDING_KEYS)} where table_name = ?)",
                [table],
            )
        if table_exists(conn, pending):
            if not table_exists(conn, table):
                conn.execute(f"create table {quote(table)} as select * from {quote(pending)} limit 0")
            else:
                rows = conn.execute(f"select count(*) from {quote(pending)}").fetchall()[0][0]
                sync_columns(conn, table, pending, retype=rows > 0)
            conn.execute(f"insert into {quote(table)} by name select * from {quote(pending)}")
            conn.execute(f"drop table {quote(pending)}")
        if noted:
            merged.append(table)
    conn.execute(f"drop table {quote(PENDING_KEYS)}")
    return merged


def has_pending(path: str | Path, *, read_only: bool = True) -> bool:
    """Whether document runs wrote rows that no build has published yet."""
    if not Path(path).exists():
        return False
    with connect(path, read_only=read_only) as conn:
        return table_exists(conn, PENDING_KEYS)
