"""The ``llm_usage`` table: one row per (step run, purpose, model) with what was asked and paid.

The counters themselves and what they mean are :mod:`graphrag_assets.llm.usage`; this module holds
the table's shape and every statement on it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from graphrag_assets.storage.database import FrameStream, connect, table_exists
from graphrag_assets.storage.response_cache import create_cache_tables
from graphrag_assets.storage.table_names import USAGE

USAGE_TABLE_DDL = f"""
create table if not exists {USAGE} (
    run_id VARCHAR,
    asset_key VARCHAR,
    partition_key VARCHAR,
    purpose VARCHAR,
    model VARCHAR,
    requests BIGINT,
    cache_hits BIGINT,
    retries BIGINT,
    failures BIGINT,
    prompt_tokens BIGINT,
    completion_tokens BIGINT,
    embedding_tokens BIGINT,
    cost_usd DOUBLE,
    recorded_at TIMESTAMP,
    truncated BIGINT
)
"""
# The counter columns, zero on a row that only records outcomes.
COUNT_COLUMNS = (
    "requests",
    "cache_hits",
    "retries",
    "failures",
    "prompt_tokens",
    "completion_tokens",
    "embedding_tokens",
    "cost_usd",
    "truncated",
)
# Filled on some rows only: what a step did with its outputs (for ``community_report``: reports
# reused, regenerated and deleted, and a JSON object of regeneration reasons). Added to tables
# created before these columns existed.
OUTCOME_COLUMNS = {"reused": "BIGINT", "regenerated": "BIGINT", "deleted": "BIGINT", "reasons": "VARCHAR"}


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


def ensure_usage_table(conn: Any) -> None:
    """Create ``llm_usage``, or add the columns a table made by an older version lacks."""
    conn.execute(USAGE_TABLE_DDL)
    for column, kind in {"truncated": "BIGINT", **OUTCOME_COLUMNS}.items():
        conn.execute(f"alter table {USAGE} add column if not exists {column} {kind}")


def create_model_tables(db_path: Path) -> None:
    """Create ``llm_usage`` and the response cache tables, empty, if they do not exist yet.

    An offline index makes no model calls, but ``SELECT … FROM llm_usage`` should answer "nothing"
    rather than "no such table".
    """
    with connect(db_path) as conn:
        ensure_usage_table(conn)
        create_cache_tables(conn)


def append_usage(db_path: str | Path, frame: pl.DataFrame) -> None:
    """Append ``frame``'s rows (columns by name; ``recorded_at`` is set here)."""
    frame = frame.with_columns(pl.lit(_now(), pl.Datetime("us")).alias("recorded_at"))
    with connect(db_path) as conn:
        ensure_usage_table(conn)
        conn.register("usage_rows", FrameStream(frame))
        conn.execute(f"insert into {USAGE} by name select * from usage_rows")
        conn.unregister("usage_rows")


def _truncated_sum(conn: Any) -> str:
    """``sum(truncated)``, or 0 on a table written before the column existed (read-only: not altered)."""
    columns = {row[0] for row in conn.execute(f"describe {USAGE}").fetchall()}
    return "coalesce(sum(truncated), 0)::bigint" if "truncated" in columns else "0::bigint"


def purpose_totals(db_path: Path, run_ids: list[str]) -> list[tuple[Any, ...]]:
    """(purpose, requests, cache hits, failures, prompt tokens, completion tokens, cost, truncated)
    summed over ``run_ids``, by purpose."""
    if not run_ids or not Path(db_path).exists():
        return []
    with connect(db_path, read_only=True) as conn:
        if not table_exists(conn, USAGE):
            return []
        conn.register("_runs", FrameStream(pl.DataFrame({"run_id": run_ids})))
        return conn.sql(
            "select purpose, sum(requests)::bigint, sum(cache_hits)::bigint, sum(failures)::bigint, "
            "sum(prompt_tokens + embedding_tokens)::bigint, sum(completion_tokens)::bigint, sum(cost_usd), "
            f"{_truncated_sum(conn)} from {USAGE} where run_id in (select run_id from _runs) group by purpose order by purpose"
        ).fetchall()


def last_run_totals(db_path: Path, assets: Sequence[str]) -> list[tuple[Any, ...]]:
    """(purpose, requests, cache hits, truncated) of the latest run that wrote one of ``assets``."""
    if not Path(db_path).exists():
        return []
    with connect(db_path, read_only=True) as conn:
        if not table_exists(conn, USAGE):
            return []
        return conn.execute(
            f"with last as (select run_id from {USAGE} where list_contains(?, asset_key) "
            "order by recorded_at desc limit 1) "
            f"select purpose, sum(requests)::bigint, sum(cache_hits)::bigint, {_truncated_sum(conn)} from {USAGE} "
            "where run_id in (select run_id from last) group by purpose order by purpose",
            [list(assets)],
        ).fetchall()


def set_outcomes(db_path: str | Path, run_id: str, asset_key: str, purpose: str, values: Mapping[str, Any]) -> None:
    """Set ``values`` (outcome columns) on the first row of (run, asset, purpose), adding a row of
    zero counts when there is none."""
    with connect(db_path) as conn:
        ensure_usage_table(conn)
        where = "run_id = ? and asset_key = ? and purpose = ?"
        found = conn.execute(f"select min(rowid) from {USAGE} where {where}", [run_id, asset_key, purpose]).fetchone()
        if found is None or found[0] is None:
            zeros = ", ".join("0" for _ in COUNT_COLUMNS)
            conn.execute(
                f"insert into {USAGE} (run_id, asset_key, partition_key, purpose, model, {', '.join(COUNT_COLUMNS)}, recorded_at) "
                f"values (?, ?, null, ?, '', {zeros}, ?)",
                [run_id, asset_key, purpose, _now()],
            )
            found = conn.execute(
                f"select min(rowid) from {USAGE} where {where}", [run_id, asset_key, purpose]
            ).fetchone()
        assignments = ", ".join(f"{column} = ?" for column in values)
        conn.execute(f"update {USAGE} set {assignments} where rowid = ?", [*values.values(), found[0]])


def latest_outcomes(db_path: Path, run_ids: list[str]) -> tuple[Any, ...] | None:
    """(reused, regenerated, deleted, reasons) last recorded by these runs; None when none was."""
    if not run_ids or not Path(db_path).exists():
        return None
    with connect(db_path, read_only=True) as conn:
        if not table_exists(conn, USAGE):
            return None
        columns = {
            row[0]
            for row in conn.sql(
                f"select column_name from information_schema.columns where table_name = '{USAGE}'"
            ).fetchall()
        }
        if "reused" not in columns:
            return None
        conn.register("_runs", FrameStream(pl.DataFrame({"run_id": run_ids})))
        rows = conn.sql(
            f"select reused, regenerated, deleted, reasons from {USAGE} where run_id in (select run_id from _runs) "
            "and reused is not null order by recorded_at desc limit 1"
        ).fetchall()
    return rows[0] if rows else None
