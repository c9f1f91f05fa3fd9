"""The rows a worker's shard takes from the index and gives back: response-cache rows with their
owners, and ``llm_usage`` rows.

A shard (:mod:`graphrag_assets.pipeline.workers_shard`) runs against a scratch database of its
own. It starts with the cache rows its documents own, so a re-run is answered from the cache on
any machine, and everything the scratch database's cache holds at the end goes back to the index,
where rows of the same key are replaced (content-keyed rows of one key hold the same answer) and
ownerships already recorded are not doubled.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import polars as pl

from graphrag_assets.core.ownership import DOCUMENT
from graphrag_assets.storage.cache_owners import CACHE_TABLES, OWNERS_DDL
from graphrag_assets.storage.database import connect, frame_of, table_exists, transaction
from graphrag_assets.storage.response_cache import create_cache_tables
from graphrag_assets.storage.table_names import CACHE_OWNERS, USAGE
from graphrag_assets.storage.usage import ensure_usage_table


def cache_rows_of(path: str | Path, documents: Sequence[str]) -> dict[str, pl.DataFrame]:
    """The cache rows (per cache table) and ownership rows that ``documents`` own; empty without a cache."""
    if not Path(path).exists() or not documents:
        return {}
    owners = pl.DataFrame({"owner": list(documents)}, schema={"owner": pl.String})
    out: dict[str, pl.DataFrame] = {}
    with connect(path) as conn, transaction(conn, _documents=owners):
        if not table_exists(conn, CACHE_OWNERS):
            return {}
        owned = f"select * from {CACHE_OWNERS} where scope = '{DOCUMENT}' and owner in (select owner from _documents)"
        out[CACHE_OWNERS] = frame_of(conn.sql(owned))
        for table in CACHE_TABLES:
            if table_exists(conn, table):
                keys = f"select key from ({owned}) where cache_table = '{table}'"
                out[table] = frame_of(conn.sql(f"select * from {table} where key in ({keys})"))
    return out


def all_cache_rows(path: str | Path) -> dict[str, pl.DataFrame]:
    """Every cache and ownership row of a (scratch) database."""
    if not Path(path).exists():
        return {}
    with connect(path) as conn:
        return {
            table: frame_of(conn.sql(f"select * from {table}"))
            for table in (*CACHE_TABLES, CACHE_OWNERS)
            if table_exists(conn, table)
        }


def add_cache_rows(path: str | Path, tables: Mapping[str, pl.DataFrame]) -> None:
    """Write cache rows (replacing rows of the same key) and ownerships (skipping those recorded), in one transaction."""
    if not any(frame.height for frame in tables.values()):
        return
    with connect(path) as conn:
        create_cache_tables(conn)
        conn.execute(OWNERS_DDL)
        with transaction(conn, **{f"_{table}": frame for table, frame in tables.items()}):
            for table in CACHE_TABLES:
                if table in tables and tables[table].height:
                    conn.execute(f"delete from {table} where key in (select key from _{table})")
                    conn.execute(f"insert into {table} by name select * from _{table}")
            if CACHE_OWNERS in tables and tables[CACHE_OWNERS].height:
                conn.execute(
                    f"insert into {CACHE_OWNERS} by name (select distinct key, cache_table, scope, owner from _{CACHE_OWNERS} "
                    f"except select key, cache_table, scope, owner from {CACHE_OWNERS})"
                )


def usage_rows(path: str | Path) -> pl.DataFrame | None:
    """Every ``llm_usage`` row of a (scratch) database; None without one."""
    if not Path(path).exists():
        return None
    with connect(path) as conn:
        return frame_of(conn.sql(f"select * from {USAGE}")) if table_exists(conn, USAGE) else None


def add_usage_rows(path: str | Path, frame: pl.DataFrame) -> None:
    """Append ``llm_usage`` rows as they were recorded (their own ``recorded_at``)."""
    if not frame.height:
        return
    with connect(path) as conn:
        ensure_usage_table(conn)
        with transaction(conn, _usage=frame):
            conn.execute(f"insert into {USAGE} by name select * from _usage")
