"""Read-only SQL for users (``graphrag-assets sql``).

Only reading statements pass: ``SELECT`` in all its forms (``FROM t``, ``SHOW``, ``DESCRIBE``,
``SUMMARIZE``, ``WITH``) and ``EXPLAIN`` of one of them. Everything else is refused before it
reaches DuckDB, whatever wraps it: ``EXPLAIN ANALYZE`` runs the statement it explains (an
``EXPLAIN ANALYZE COPY ... TO`` writes its file), and a ``WITH`` clause can hold a ``DELETE``. The
statement kinds come from DuckDB's own parser (``extract_statements``, ``tokenize`` to find what
an ``EXPLAIN`` wraps, ``json_serialize_sql`` for the query nodes inside a ``SELECT``), not from
matching text.

DuckDB's own guarantees stand behind the gate: the connection is read-only, its configuration is
locked (``CALL enable_logging(...)`` or ``SELECT * FROM enable_logging(...)`` would write log
files; ``SET`` would lift the other limits), it has no temporary folder (with file access off,
DuckDB still lets a query write into the database's temporary folder), it installs no extensions,
and file and network access are off (``enable_external_access=false``) unless the user asks to
read files (``--allow-file-access``). With that flag, queries read files; writing stays refused.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import polars as pl

from graphrag_assets.core.errors import UserError
from graphrag_assets.storage.database import connect
from graphrag_assets.storage.sql_values import readable_frame

READING_STATEMENTS = {"SELECT", "EXPLAIN"}
# Query nodes a reading SELECT is made of; a WITH clause holding DELETE / INSERT / UPDATE adds
# another (DELETE_QUERY_NODE, ...), and so would any node kind a later DuckDB adds.
READING_QUERY_NODES = {"SELECT_NODE", "SET_OPERATION_NODE", "RECURSIVE_CTE_NODE", "CTE_NODE"}
EXPLAIN_MODIFIERS = {"ANALYZE", "ANALYSE"}


def connection_settings(allow_file_access: bool) -> dict[str, object]:
    """DuckDB settings that keep a user's query from writing anything or changing them."""
    # enable_external_access comes first: DuckDB 2.0.1 refuses a temp_directory set before it.
    settings: dict[str, object] = {} if allow_file_access else {"enable_external_access": False}
    return settings | {"temp_directory": "", "autoinstall_known_extensions": False, "lock_configuration": True}


def run_readonly_query(
    database: Path, query: str, *, allow_file_access: bool = False, nested_as_text: bool = False
) -> pl.DataFrame:
    """Run one reading statement and return its rows; anything else is refused with one sentence.

    ``nested_as_text``: lists, structs and maps come back as DuckDB's text for them (for CSV).
    """
    statement = _one_statement(query)
    refusal = _refusal(statement)
    if refusal:
        raise UserError(
            f"'sql' only reads (SELECT, SHOW, DESCRIBE, EXPLAIN) and refuses {refusal}; "
            f"open {database} with the DuckDB CLI to change data."
        )
    with connect(database, read_only=True, config=connection_settings(allow_file_access)) as conn:
        try:
            changing = _changing_query_nodes(conn, statement)
            if changing:
                raise UserError(
                    f"'sql' only reads and refuses {' and '.join(sorted(changing))} inside a query "
                    f"(a WITH clause that changes data); open {database} with the DuckDB CLI to change data."
                )
            return readable_frame(conn.sql(query), nested_as_text=nested_as_text)
        except duckdb.PermissionException as exc:
            if allow_file_access:  # file access is on: something else is off (settings, the temporary folder)
                raise UserError(f"the query failed: {str(exc).strip().splitlines()[0]}") from None
            raise UserError(
                "the query reads files or the network, which 'sql' does not allow by default; "
                "pass --allow-file-access if you mean it."
            ) from None
        except duckdb.Error as exc:
            first = str(exc).strip().splitlines()[0]
            raise UserError(f"the query failed: {first}") from None


def _one_statement(query: str) -> duckdb.Statement:
    try:
        statements = duckdb.extract_statements(query)
    except duckdb.Error as exc:
        raise UserError(f"the query is not valid SQL: {str(exc).splitlines()[0]}") from None
    if len(statements) != 1:
        raise UserError(f"give exactly one SQL statement (got {len(statements)}).")
    return statements[0]


def _refusal(statement: duckdb.Statement) -> str | None:
    """What makes the statement one that is refused (``"COPY statements"``), or None when it reads."""
    kind = statement.type.name.upper()
    if kind not in READING_STATEMENTS:
        words = _words(statement.query)
        first = words[0][1].upper() if words else kind
        return f"{kind} statements" if first in (kind, "WITH", "(") else f"{first} ({kind}) statements"
    if kind != "EXPLAIN":
        return None
    explained = _explained(statement.query)
    if explained is None:
        return "an EXPLAIN whose statement cannot be told apart"
    inner = _refusal(explained)
    return f"{inner}, also inside EXPLAIN (EXPLAIN ANALYZE runs them)" if inner else None


def _words(text: str) -> list[tuple[int, str]]:
    """The tokens of ``text`` (where each starts, its text) as DuckDB's tokenizer finds them:
    comments and string literals are not mistaken for words."""
    tokens = duckdb.tokenize(text)
    starts = [position for position, _ in tokens] + [len(text)]
    return [
        (start, text[start:end].strip())
        for (start, kind), end in zip(tokens, starts[1:], strict=True)
        if kind != duckdb.token_type.comment
    ]


def _explained(text: str) -> duckdb.Statement | None:
    """The statement an EXPLAIN wraps: ``EXPLAIN [ANALYZE] stmt`` or ``EXPLAIN (options) stmt``.

    It is the text after EXPLAIN and its modifiers that DuckDB parses as one statement. A
    parenthesis after EXPLAIN opens either options or a parenthesised query: the query is tried
    first, then what follows the options.
    """
    words = _words(text)
    index = 1  # words[0] is EXPLAIN
    if index < len(words) and words[index][1].upper() in EXPLAIN_MODIFIERS:
        index += 1
    candidates = [index]
    if index < len(words) and words[index][1].startswith("("):
        depth = 0
        for after, (_, word) in enumerate(words[index:], start=index + 1):
            depth += word.count("(") - word.count(")")
            if depth <= 0:
                candidates.append(after)
                break
    for candidate in candidates:
        if candidate >= len(words):
            continue
        try:
            statements = duckdb.extract_statements(text[words[candidate][0] :])
        except duckdb.Error:
            continue
        if len(statements) == 1:
            return statements[0]
    return None


def _changing_query_nodes(conn: duckdb.DuckDBPyConnection, statement: duckdb.Statement) -> set[str]:
    """Query nodes other than reading ones in the SELECTs of the statement (an EXPLAIN's included),
    named as the statements they are (``DELETE``).

    A statement DuckDB cannot serialise is left to the read-only connection, which refuses any
    change to the database.
    """
    if statement.type.name.upper() == "EXPLAIN":
        explained = _explained(statement.query)
        return _changing_query_nodes(conn, explained) if explained is not None else set()
    tree = json.loads(conn.execute("select json_serialize_sql(?)", [statement.query]).fetchall()[0][0])
    if tree.get("error"):
        return set()
    changing = (kind for kind in _node_kinds(tree) if kind not in READING_QUERY_NODES)
    return {kind.removesuffix("_NODE").removesuffix("_QUERY").replace("_", " ") for kind in changing}


def _node_kinds(tree: object) -> set[str]:
    kinds: set[str] = set()
    pending = [tree]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            kind = item.get("type")
            if isinstance(kind, str) and kind.endswith("_NODE"):
                kinds.add(kind)
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return kinds
