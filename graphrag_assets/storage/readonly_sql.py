"""Read-only SQL for users (``graphrag-assets sql``)."""

from __future__ import annotations

from pathlib import Path

import duckdb
import polars as pl

from graphrag_assets.core.errors import UserError
from graphrag_assets.storage.database import connect

_READ_TYPES = {"SELECT", "EXPLAIN", "PRAGMA", "CALL"}


def run_readonly_query(database: Path, query: str) -> pl.DataFrame:
    """Run one read-only statement and return its rows; writes are refused before they reach DuckDB."""
    try:
        statements = duckdb.extract_statements(query)
    except duckdb.Error as exc:
        raise UserError(f"the query is not valid SQL: {str(exc).splitlines()[0]}") from None
    if len(statements) != 1:
        raise UserError(f"give exactly one SQL statement (got {len(statements)}).")
    kind = statements[0].type.name.upper()
    if kind not in _READ_TYPES:
        raise UserError(
            f"'sql' is read-only and refuses {kind} statements; open {database} with the DuckDB CLI to change data."
        )
    with connect(database, read_only=True) as conn:
        try:
            return conn.sql(query).pl()
        except duckdb.Error as exc:
            first = str(exc).strip().splitlines()[0]
            raise UserError(f"the query failed: {first}") from None
