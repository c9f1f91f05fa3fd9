"""The ``llm_capabilities`` table: what each (endpoint, model, kind) was found to accept, as JSON.

What the values mean and when they are learned is :mod:`graphrag_assets.llm.capabilities`; this
module holds the table and its two statements.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from graphrag_assets.storage.database import connect, table_exists
from graphrag_assets.storage.table_names import CAPABILITIES

CAPABILITIES_DDL = f"""
create table if not exists {CAPABILITIES} (
    endpoint VARCHAR,
    model VARCHAR,
    kind VARCHAR,
    capabilities VARCHAR,
    detected_at TIMESTAMP,
    primary key (endpoint, model, kind)
)
"""


def read_capabilities(path: Path, wait_seconds: float) -> list[tuple[str, str, str, str]]:
    """Every (endpoint, model, kind, capabilities JSON) row; empty without the table.

    Read-write like the response cache's writer: DuckDB refuses a read-only connection next to a
    read-write one in the same process.
    """
    with connect(path, wait_seconds=wait_seconds) as conn:
        if not table_exists(conn, CAPABILITIES):
            return []
        return conn.execute(f"select endpoint, model, kind, capabilities from {CAPABILITIES}").fetchall()


def write_capabilities(path: Path, key: tuple[str, str, str], text: str, wait_seconds: float) -> None:
    """Insert or replace the row of ``key`` (endpoint, model, kind) with ``text``, stamped now."""
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    with connect(path, wait_seconds=wait_seconds) as conn:
        conn.execute(CAPABILITIES_DDL)
        conn.execute(f"insert or replace into {CAPABILITIES} values (?, ?, ?, ?, ?)", [*key, text, now])
