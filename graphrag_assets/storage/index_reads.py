"""Reading the index tables whole, for the query engines, the exports and ``status``.

Each function opens one read-only connection for everything it reads, so a reader sees one
committed state of the database (the corpus tables are published in one transaction).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from graphrag_assets.storage.database import connect, frame_of, table_exists
from graphrag_assets.storage.table_names import ENTITIES
from graphrag_assets.storage.tables import quote


def has_table(path: Path, table: str, *, read_only: bool = True) -> bool:
    """Whether the database exists and holds ``table``."""
    if not path.exists():
        return False
    with connect(path, read_only=read_only) as conn:
        return table_exists(conn, table)


def read_index_tables(
    path: Path, wanted: Mapping[str, Sequence[str] | None], *, required: str = ENTITIES
) -> dict[str, pl.DataFrame] | None:
    """The tables of ``wanted`` that exist, each with the wanted columns it has (``None``: all);
    None when ``required`` does not exist (nothing was indexed yet)."""
    frames: dict[str, pl.DataFrame] = {}
    with connect(path, read_only=True) as conn:
        if not table_exists(conn, required):
            return None
        for table, columns in wanted.items():
            if not table_exists(conn, table):
                continue
            if columns is None:
                select = "*"
            else:
                present = {row[0] for row in conn.execute(f"describe {quote(table)}").fetchall()}
                select = ", ".join(quote(c) for c in columns if c in present)
            frames[table] = frame_of(conn.sql(f"select {select} from {quote(table)}"))
    return frames


def _row_counts(conn: Any, tables: Sequence[str]) -> dict[str, int]:
    """Rows of each of ``tables`` the database has, in that order, counted in one query."""
    present = {
        row[0]
        for row in conn.execute(
            "select table_name from information_schema.tables where table_schema = 'main'"
        ).fetchall()
    }
    found = [table for table in tables if table in present]
    if not found:
        return {}
    counts = conn.execute(
        " union all ".join(f"select {i}, count(*) from {quote(t)}" for i, t in enumerate(found))
    ).fetchall()
    return {found[i]: int(n) for i, n in sorted(counts)}


def table_summary(
    path: Path, counted: Sequence[str], read: Sequence[str]
) -> tuple[dict[str, int], dict[str, pl.DataFrame | None]]:
    """Row counts of the ``counted`` tables that exist and the ``read`` tables whole (None when
    missing), from one read-only connection."""
    with connect(path, read_only=True) as conn:
        counts = _row_counts(conn, counted)
        frames = {
            table: frame_of(conn.sql(f"select * from {quote(table)}")) if table_exists(conn, table) else None
            for table in read
        }
    return counts, frames
