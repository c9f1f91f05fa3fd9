"""The extractive reports' name votes, kept from one build to the next inside DuckDB.

``report_name_votes`` holds how each text unit spells its entities (see
:mod:`graphrag_assets.index.extractive_reuse`): at 100,000 documents 3.5 M rows. An update keeps
the rows of the units whose titles did not change and adds those of the units it counts. Read into
polars and written back, the kept rows were ~820 MB of an update's reports in
``bench/profile_reports_step.py``; here DuckDB copies them into the staged table and sums them per
title under the staging memory limit, and only the units and the totals come out.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from graphrag_assets.storage.corpus import STAGE_MEMORY_LIMIT, has_columns, staged_name
from graphrag_assets.storage.database import FrameStream, connect
from graphrag_assets.storage.table_names import REPORT_NAME_VOTES
from graphrag_assets.storage.tables import quote

# the table's columns, in the order they are stored (those of the rows appended to it)
COLUMNS = {"unit": "varchar", "titles_hash": "varchar", "title": "varchar", "votes": "integer"}
KEY_COLUMNS = ("unit", "titles_hash")


def stage_kept_votes(path: str | Path, keys: pl.DataFrame) -> tuple[set[str], dict[str, int]]:
    """Stage the published votes of the units in ``keys`` (``unit``, ``titles_hash``: each unit
    under the hash of the titles it has now) as this run's ``report_name_votes``; returns those
    units and each title's votes summed over them. A build without the table (or written by code
    before its columns) keeps none: the staged table starts empty."""
    staged = staged_name(REPORT_NAME_VOTES)
    with connect(path) as conn:
        if not has_columns(conn, REPORT_NAME_VOTES, list(COLUMNS)):
            columns = ", ".join(f"{name} {kind}" for name, kind in COLUMNS.items())
            conn.execute(f"create or replace table {staged} ({columns})")
            return set(), {}
        conn.register("_keys", FrameStream(keys.select(KEY_COLUMNS)))
        try:
            conn.execute(f"set memory_limit = '{STAGE_MEMORY_LIMIT}'")
            selection = ", ".join(f"v.{name}::{kind} as {name}" for name, kind in COLUMNS.items())
            conn.execute(
                f"create or replace table {staged} as select {selection} from {quote(REPORT_NAME_VOTES)} v "
                f"semi join _keys k using ({', '.join(KEY_COLUMNS)})"
            )
            units = {row[0] for row in conn.execute(f"select distinct unit from {staged}").fetchall()}
            sums = f"select title, sum(votes)::bigint from {staged} where title is not null group by title"
            return units, dict(conn.execute(sums).fetchall())
        finally:
            conn.unregister("_keys")
            conn.execute("reset memory_limit")
