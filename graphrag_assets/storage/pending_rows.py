"""Where the rows of the build's document tables are while a build is being made (see :mod:`.pending`).

Apart from :mod:`.pending` so that :func:`~graphrag_assets.storage.tables.read_table` can read a
table as the pipeline sees it without the writes (which build on ``tables``).
"""

from __future__ import annotations

import duckdb

from graphrag_assets.storage.database import existing_tables

BUILD_DOCUMENT_TABLES = ("documents", "text_units", "text_unit_embeddings")
PENDING_PREFIX = "_pending_"
PENDING_KEYS = "_pending_keys"  # (table_name, document_key): rows replaced or deleted (not "_pending_" + a table)
KEY_COLUMN = "document_key"


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def working_source(conn: duckdb.DuckDBPyConnection, table: str) -> str | None:
    """SQL (a table name or a subquery) for ``table`` as the pipeline sees it: the published rows
    of the documents not pending plus the pending rows; None when neither exists."""
    existing = existing_tables(conn, [table, PENDING_PREFIX + table, PENDING_KEYS])
    published, pending = table in existing, PENDING_PREFIX + table in existing
    if table not in BUILD_DOCUMENT_TABLES or PENDING_KEYS not in existing:
        return _quote(table) if published else None
    parts = []
    if published:
        retyped = _retyped(conn, table, PENDING_PREFIX + table) if pending else ""
        parts.append(
            f"select *{retyped} from {_quote(table)} where {KEY_COLUMN} not in "
            f"(select document_key from {_quote(PENDING_KEYS)} where table_name = '{table}')"
        )
    if pending:
        parts.append(f"select * from {_quote(PENDING_PREFIX + table)}")
    return f"({' union all by name '.join(parts)})" if parts else None


def _retyped(conn: duckdb.DuckDBPyConnection, table: str, pending: str) -> str:
    """A ``replace`` clause giving the published columns the pending rows' types where they differ:
    vectors of another size (another embedding model) read as NULL, as a partition write leaves them."""
    if not conn.execute(f"select count(*) from {_quote(pending)}").fetchall()[0][0]:
        return ""  # no rows: its placeholder types are not the real ones
    published = dict(row[:2] for row in conn.execute(f"describe {_quote(table)}").fetchall())
    changed = [
        f"try_cast({_quote(name)} as {dtype}) as {_quote(name)}"
        for name, dtype, *_ in conn.execute(f"describe {_quote(pending)}").fetchall()
        if name in published and published[name] != dtype
    ]
    return f" replace ({', '.join(changed)})" if changed else ""
