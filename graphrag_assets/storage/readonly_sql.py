"""Read-only SQL for users (``graphrag-assets sql``).

Only reading statements pass (``SELECT`` in all its forms — ``FROM t``, ``SHOW``, ``DESCRIBE``,
``SUMMARIZE``, ``WITH`` — and ``EXPLAIN``); everything else is refused before it reaches DuckDB.
A read-only connection alone is not enough: ``CALL enable_logging(...)`` writes files and
``read_text('/etc/shadow')`` reads any file the user can. So the connection also runs with
DuckDB's file and network access off (``enable_external_access=false``) and its configuration
locked, unless the user asks for file access (``--allow-file-access``).
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import polars as pl

from graphrag_assets.core.errors import UserError
from graphrag_assets.storage.database import connect, frame_of

READING_STATEMENTS = {"SELECT", "EXPLAIN"}


def run_readonly_query(database: Path, query: str, *, allow_file_access: bool = False) -> pl.DataFrame:
    """Run one reading statement and return its rows; anything else is refused with one sentence."""
    try:
        statements = duckdb.extract_statements(query)
    except duckdb.Error as exc:
        raise UserError(f"the query is not valid SQL: {str(exc).splitlines()[0]}") from None
    if len(statements) != 1:
        raise UserError(f"give exactly one SQL statement (got {len(statements)}).")
    kind = statements[0].type.name.upper()
    if kind not in READING_STATEMENTS:
        raise UserError(
            f"'sql' only reads (SELECT, SHOW, DESCRIBE, EXPLAIN) and refuses {kind} statements; "
            f"open {database} with the DuckDB CLI to change data."
        )
    config = {} if allow_file_access else {"enable_external_access": False, "lock_configuration": True}
    with connect(database, read_only=True, config=config) as conn:
        try:
            return frame_of(conn.sql(query))
        except duckdb.PermissionException:
            raise UserError(
                "the query reads files or the network, which 'sql' does not allow by default; "
                "pass --allow-file-access if you mean it."
            ) from None
        except duckdb.Error as exc:
            first = str(exc).strip().splitlines()[0]
            raise UserError(f"the query failed: {first}") from None
