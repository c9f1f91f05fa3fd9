"""The response cache's DuckDB tables, apart from the cache itself.

The usage tables are created with them (``llm/usage.py``) by commands that only read, such as
``status``; the cache module brings numpy with it, which a reading command does not load.

An embedding is stored as its little-endian float32 bytes (``BLOB``), as the model sent it. A
``FLOAT[]`` column, used before, came back from DuckDB as a list of Python floats per row: a
lookup of 573 cached vectors of 1,536 dimensions took 115 ms and +47 MB, against 16 ms and
+13 MB as bytes; of 20,000, 4.2 s and +1.5 GB against 0.37 s and +0.4 GB
(``bench/bench_embedding_cache.py``). A cache written before is rewritten once, by the first
process that writes to it (:func:`store_vectors_as_bytes`); until then its rows are read as lists.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from graphrag_assets.storage.cache_owners import CHAT_TABLE, EMBEDDING_TABLE
from graphrag_assets.storage.database import frame_of, transaction

CHAT_TABLE_DDL = f"""
create table if not exists {CHAT_TABLE} (
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
create table if not exists {EMBEDDING_TABLE} (
    key VARCHAR PRIMARY KEY,
    model VARCHAR,
    vector BLOB
)
"""
INSERT_EMBEDDING_ROWS = f"""
insert into {EMBEDDING_TABLE} by name
select unnest($1::VARCHAR[]) as key, unnest($2::VARCHAR[]) as model, unnest($3::BLOB[]) as vector
"""
_LIST_TABLE = f"{EMBEDDING_TABLE}_float_lists"  # the old table while it is rewritten
_MIGRATION_ROWS = 20_000  # rows rewritten at a time (120 MB of vectors at 1,536 dimensions)


def store_vectors_as_bytes(conn: Any) -> None:
    """Rewrite an embedding cache whose vectors are ``FLOAT[]`` lists as bytes, in one transaction
    (nothing to do for a cache without the table or already in bytes)."""
    found = conn.execute(
        "select data_type from information_schema.columns where table_schema = 'main' and table_name = ? and column_name = 'vector'",
        [EMBEDDING_TABLE],
    ).fetchall()
    if not found or found[0][0] == "BLOB":
        return
    with transaction(conn):
        conn.execute(f"alter table {EMBEDDING_TABLE} rename to {_LIST_TABLE}")
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
