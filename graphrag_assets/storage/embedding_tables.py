"""Reading the embedding tables DuckDB holds: their size, and their vectors for a search index.

DuckDB holds every vector; LanceDB is only a search index over them, built from these reads
(:mod:`graphrag_assets.project.lancedb_tables`), and a small index is searched in memory from them
(:mod:`graphrag_assets.project.query_data`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl

from graphrag_assets.storage.database import connect, frame_of, table_exists
from graphrag_assets.storage.pending_rows import working_source
from graphrag_assets.storage.table_names import TEXT_UNIT_EMBEDDINGS, TEXT_UNITS
from graphrag_assets.storage.tables import quote

TEXT_UNIT_BATCH_ROWS = 50_000  # rows per batch streamed from DuckDB into the new text-unit table


def text_unit_size(path: Path, *, read_only: bool, wait_seconds: float) -> tuple[int, int]:
    """(embedded text units, tokens of all text units), as the query side counts them, with the
    rows pending for the build being made (:mod:`.pending`)."""
    if not path.exists():
        return 0, 0
    with connect(path, read_only=read_only, wait_seconds=wait_seconds) as conn:
        units, embeddings = working_source(conn, TEXT_UNITS), working_source(conn, TEXT_UNIT_EMBEDDINGS)
        if units is None or embeddings is None:
            return 0, 0
        tokens = conn.execute(f"select coalesce(sum(n_tokens), 0) from {units}").fetchone()[0]
        rows = conn.execute(f"select count(*) from {embeddings} where vector is not null").fetchone()[0]
    return int(rows), int(tokens)


def text_unit_vectors(path: Path) -> Iterator[pl.DataFrame]:
    """Every embedded text unit (id, vector, text_hash, document_key, text), in batches, ordered by
    document and id, with the rows the build being made publishes (:mod:`.pending`); nothing when
    the embedding table does not exist. The connection is held while the batches are consumed."""
    with connect(path) as conn:
        embeddings = working_source(conn, TEXT_UNIT_EMBEDDINGS)
        if embeddings is None:
            return
        units = working_source(conn, TEXT_UNITS) or "(select '' as id, '' as text where false)"
        reader = conn.sql(
            "select e.id, e.vector, e.text_hash, e.document_key, coalesce(t.text, '') as text "
            f"from {embeddings} e left join {units} t on t.id = e.id "
            "where e.vector is not null order by e.document_key, e.id"
        ).to_arrow_reader(TEXT_UNIT_BATCH_ROWS)
        for batch in reader:
            if batch.num_rows:
                yield pl.from_arrow(batch)


def vector_megabytes(path: Path, tables: list[str]) -> float:
    """What the vectors of the embedding ``tables`` take as float32, in MB (missing tables: 0)."""
    with connect(path, read_only=True) as conn:
        total = 0
        for table in tables:
            if table_exists(conn, table):
                sql = f"select coalesce(sum(len(vector)), 0) from {quote(table)} where vector is not null"
                total += conn.execute(sql).fetchall()[0][0]
    return total * 4 / 1e6


def vector_frames(path: Path, tables: list[str]) -> dict[str, pl.DataFrame | None]:
    """(id, vector) of every row with a vector, by id, of each embedding table (None when missing)."""
    with connect(path, read_only=True) as conn:
        return {table: _vectors(conn, table) for table in tables}


def _vectors(conn: Any, table: str) -> pl.DataFrame | None:
    if not table_exists(conn, table):
        return None
    return frame_of(conn.sql(f"select id, vector from {quote(table)} where vector is not null order by id"))
