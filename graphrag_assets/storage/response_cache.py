"""The response cache's tables and every statement that reads or writes them.

The cache's behaviour (content keys, batched lookups, the writer thread) is
:mod:`graphrag_assets.llm.cache`; who owns its rows is :mod:`graphrag_assets.storage.cache_owners`.
This module only holds the SQL, so a reading command such as ``status`` can create the tables
(``llm/usage.py``) without the cache module and numpy.

An embedding is stored as its little-endian float32 bytes (``BLOB``), as the model sent it. A
``FLOAT[]`` column, used before, came back from DuckDB as a list of Python floats per row: a
lookup of 573 cached vectors of 1,536 dimensions took 115 ms and +47 MB, against 16 ms and
+13 MB as bytes; of 20,000, 4.2 s and +1.5 GB against 0.37 s and +0.4 GB
(``bench/bench_embedding_cache.py``). A cache written before is rewritten once, by the first
process that writes to it (:func:`store_vectors_as_bytes`); until then its rows are read as lists.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from graphrag_assets.core.float32 import to_le_bytes
from graphrag_assets.storage.cache_owners import add_owners, clear_owners
from graphrag_assets.storage.database import connect, frame_of, table_exists, transaction
from graphrag_assets.storage.table_names import CHAT_CACHE, EMBEDDING_CACHE

CHAT_TABLE_DDL = f"""
create table if not exists {CHAT_CACHE} (
    key VARCHAR PRIMARY KEY,
    kind VARCHAR,
    model VARCHAR,
    purpose VARCHAR,
    response VARCHAR,
    prompt_tokens BIGINT,
    completion_tokens BIGINT,
    created_at TIMESTAMP
)
"""
EMBEDDING_TABLE_DDL = f"""
create table if not exists {EMBEDDING_CACHE} (
    key VARCHAR PRIMARY KEY,
    model VARCHAR,
    vector BLOB
)
"""
# Rows go in as one list parameter per column, which DuckDB unnests without pyarrow or a polars
# frame. A key written again replaces its row by a delete and an insert in one transaction, not
# ``insert or replace``, whose conflict handling made DuckDB take twice the memory to write 573
# vectors, and ten times the time for 20,000 (``bench/bench_embedding_cache.py``).
INSERT_EMBEDDING_ROWS = f"""
insert into {EMBEDDING_CACHE} by name
select unnest($1::VARCHAR[]) as key, unnest($2::VARCHAR[]) as model, unnest($3::BLOB[]) as vector
"""
_INSERT_CHAT_ROWS = f"""
insert into {CHAT_CACHE} by name
select unnest($1::VARCHAR[]) as key, 'chat' as kind, unnest($2::VARCHAR[]) as model, unnest($3::VARCHAR[]) as purpose,
    unnest($4::VARCHAR[]) as response, unnest($5::BIGINT[]) as prompt_tokens,
    unnest($6::BIGINT[]) as completion_tokens, unnest($7::TIMESTAMP[]) as created_at
"""
_LIST_TABLE = f"{EMBEDDING_CACHE}_float_lists"  # the old table while it is rewritten
_MIGRATION_ROWS = 20_000  # rows rewritten at a time (120 MB of vectors at 1,536 dimensions)
_LOOKUP_COLUMNS = {CHAT_CACHE: "key, response, prompt_tokens, completion_tokens", EMBEDDING_CACHE: "key, vector"}


@dataclass(frozen=True)
class ChatRow:
    key: str
    model: str
    purpose: str
    response: str
    prompt_tokens: int
    completion_tokens: int
    created_at: dt.datetime


@dataclass(frozen=True)
class EmbeddingRow:
    key: str
    model: str
    vector: Any  # a float32 buffer: a view, an array('f') or numpy's (core/float32.py)


@dataclass
class CacheBatch:
    """Rows to write in one transaction: answers, vectors and (key, table, scope, owner) ownerships.

    ``new_keys``: keys the writer believes no cache row and no ownership has yet (answers to calls
    that missed). Their rows are inserted without first deleting rows of the same key, and their
    ownerships without first looking for the same ownership: two statements of the four a write
    of fresh answers needs, which the model calls wait for (see ``llm/cache.py``). A wrong belief
    (another process cached the same key meanwhile) costs a retry of the whole batch the slow way.
    """

    chat: Sequence[ChatRow] = ()
    embeddings: Sequence[EmbeddingRow] = ()
    owners: Iterable[tuple[str, str, str, str]] = ()
    new_keys: frozenset[str] = frozenset()


def create_cache_tables(conn: Any) -> None:
    """Create both cache tables, empty, where they do not exist."""
    conn.execute(CHAT_TABLE_DDL)
    conn.execute(EMBEDDING_TABLE_DDL)


def cached_keys(path: Path, table: str) -> set[str]:
    """Every key of a cache table (empty without the database or the table)."""
    if not path.exists():
        return set()
    with connect(path) as conn:
        if not table_exists(conn, table):
            return set()
        return {row[0] for row in conn.execute(f"select key from {table}").fetchall()}


def cached_rows(path: Path, table: str, keys: list[str]) -> list[tuple[Any, ...]]:
    """The rows of ``keys``: (key, response, prompt_tokens, completion_tokens) or (key, vector)."""
    if not keys or not path.exists():
        return []
    with connect(path) as conn:
        if not table_exists(conn, table):
            return []
        return conn.execute(
            f"select {_LOOKUP_COLUMNS[table]} from {table} where key in (select unnest(?::VARCHAR[]))", [keys]
        ).fetchall()


def write_batch(path: Path, batch: CacheBatch, *, create: bool, create_owners: bool) -> bool:
    """Write ``batch`` in one transaction, replacing rows of the same keys; True when it held owners.

    ``create``: create (and migrate) the cache tables first; ``create_owners``: the owners table.
    A writer passes False once it knows they exist, since these statements cost a write each time.
    """
    with connect(path) as conn:
        if create:
            create_cache_tables(conn)
            store_vectors_as_bytes(conn)
        batch = replace(batch, owners=list(batch.owners))  # read twice when the first attempt fails
        if batch.new_keys:
            try:
                return _write_rows(conn, batch, create_owners)
            except duckdb.ConstraintException:  # a "new" key was cached meanwhile: replace, as below
                pass
        return _write_rows(conn, replace(batch, new_keys=frozenset()), create_owners)


def _write_rows(conn: Any, batch: CacheBatch, create_owners: bool) -> bool:
    new = batch.new_keys
    with transaction(conn):
        chat = list(batch.chat)
        if chat:
            _replace_rows(
                conn,
                CHAT_CACHE,
                chat,
                new,
                _INSERT_CHAT_ROWS,
                lambda rows: [
                    [r.model for r in rows],
                    [r.purpose for r in rows],
                    [r.response for r in rows],
                    [r.prompt_tokens for r in rows],
                    [r.completion_tokens for r in rows],
                    [r.created_at for r in rows],
                ],
            )
        embeddings = list(batch.embeddings)
        if embeddings:
            _replace_rows(
                conn,
                EMBEDDING_CACHE,
                embeddings,
                new,
                INSERT_EMBEDDING_ROWS,
                lambda rows: [[r.model for r in rows], [to_le_bytes(r.vector) for r in rows]],
            )
        owners = list(batch.owners)
        fresh = [row for row in owners if row[0] in new]
        known = [row for row in owners if row[0] not in new]
        added = add_owners(conn, fresh, create=create_owners, fresh=True)
        return bool(added + add_owners(conn, known, create=create_owners and not added))


def _replace_rows(
    conn: Any, table: str, rows: list[Any], new: frozenset[str], insert: str, columns: Callable[[list[Any]], list[Any]]
) -> None:
    """Insert ``rows`` (dataclasses with a ``key``), deleting rows of the same keys first unless new."""
    old = [r.key for r in rows if r.key not in new]
    if old:
        conn.execute(f"delete from {table} where key in (select unnest(?::VARCHAR[]))", [old])
    conn.execute(insert, [[r.key for r in rows], *columns(rows)])


def empty_cache(path: Path) -> int:
    """Delete every cached answer and vector and every ownership; returns the cache rows deleted."""
    deleted = 0
    with connect(path) as conn:
        for table in (CHAT_CACHE, EMBEDDING_CACHE):
            if table_exists(conn, table):
                deleted += int(conn.execute(f'select count(*) from "{table}"').fetchone()[0])
                conn.execute(f'delete from "{table}"')
        clear_owners(conn)
    return deleted


def store_vectors_as_bytes(conn: Any) -> None:
    """Rewrite an embedding cache whose vectors are ``FLOAT[]`` lists as bytes, in one transaction
    (nothing to do for a cache without the table or already in bytes)."""
    found = conn.execute(
        "select data_type from information_schema.columns where table_schema = 'main' and table_name = ? and column_name = 'vector'",
        [EMBEDDING_CACHE],
    ).fetchall()
    if not found or found[0][0] == "BLOB":
        return
    with transaction(conn):
        conn.execute(f"alter table {EMBEDDING_CACHE} rename to {_LIST_TABLE}")
        conn.execute(EMBEDDING_TABLE_DDL)
        (last,) = conn.execute(f"select coalesce(max(rowid), -1) from {_LIST_TABLE}").fetchall()[0]
        for start in range(0, last + 1, _MIGRATION_ROWS):
            chunk = frame_of(
                conn.sql(
                    f"select key, model, vector from {_LIST_TABLE} where rowid >= {start} and rowid < {start + _MIGRATION_ROWS}"
                )
            )
            chunk = chunk.with_columns(pl.col("vector").list.len().alias("size"))
            for (size,), group in chunk.group_by("size"):
                vectors = (
                    [None] * group.height
                    if not size
                    else [
                        row.tobytes()
                        for row in group["vector"].list.to_array(size).to_numpy().astype("<f4", copy=False)
                    ]
                )
                conn.execute(INSERT_EMBEDDING_ROWS, [group["key"].to_list(), group["model"].to_list(), vectors])
        conn.execute(f"drop table {_LIST_TABLE}")
