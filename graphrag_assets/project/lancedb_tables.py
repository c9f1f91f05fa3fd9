"""Whether the index keeps LanceDB tables (``storage.lancedb_tables``), and building them late.

DuckDB holds every vector (the embedding tables); LanceDB is only a search index over them. A
small index — text units of at most ``query.in_memory_search_max_tokens`` tokens, the limit under
which queries search in memory (:mod:`graphrag_assets.project.query_data`) — never reads it, so
with ``auto`` its tables are not written and an index run does not import LanceDB at all (about a
second and 120 MB). Once the text units exceed the limit, the corpus run that publishes the build
writes the text-unit table from DuckDB in one go and the corpus tables as usual; from then on the
tables exist and every run keeps them in sync, even if the corpus shrinks again. ``always`` writes
them on every run, whatever the size.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import polars as pl

from graphrag_assets.core.settings import Settings
from graphrag_assets.storage import vectors
from graphrag_assets.storage.database import connect
from graphrag_assets.storage.pending_rows import working_source

TEXT_UNIT_BATCH_ROWS = 50_000  # rows per batch streamed from DuckDB into the new text-unit table


def text_units_kept(settings: Settings) -> bool:
    """Whether per-document steps publish and delete text-unit vectors in LanceDB."""
    return settings.storage.lancedb_tables == "always" or vectors.table_built(
        settings.lancedb_path, vectors.TEXT_UNIT_TABLE
    )


def _text_unit_size(database: Path, *, read_only: bool, wait_seconds: float) -> tuple[int, int]:
    """(embedded text units, tokens of all text units), as the query side counts them."""
    if not database.exists():
        return 0, 0
    with connect(database, read_only=read_only, wait_seconds=wait_seconds) as conn:
        units, embeddings = working_source(conn, "text_units"), working_source(conn, "text_unit_embeddings")
        if units is None or embeddings is None:
            return 0, 0
        tokens = conn.execute(f"select coalesce(sum(n_tokens), 0) from {units}").fetchone()[0]
        rows = conn.execute(f"select count(*) from {embeddings} where vector is not null").fetchone()[0]
    return int(rows), int(tokens)


def lancedb_wanted(settings: Settings, *, read_only: bool = False, wait_seconds: float = 30.0) -> bool:
    """Whether this index keeps LanceDB tables: ``always``, tables already built, or text units over the limit."""
    if text_units_kept(settings):
        return True
    rows, tokens = _text_unit_size(settings.database_path, read_only=read_only, wait_seconds=wait_seconds)
    return rows > 0 and settings.lancedb_tables_for(tokens)


def lancedb_missing(settings: Settings, *, wait_seconds: float = 30.0) -> bool:
    """LanceDB tables are wanted but the text-unit table was never built: a corpus run builds it.

    True after the threshold is lowered or ``always`` is switched on, with nothing else changed.
    """
    if vectors.table_built(settings.lancedb_path, vectors.TEXT_UNIT_TABLE):
        return False
    rows, tokens = _text_unit_size(settings.database_path, read_only=True, wait_seconds=wait_seconds)
    return rows > 0 and settings.lancedb_tables_for(tokens)


def build_text_unit_table(settings: Settings) -> vectors.PublishResult:
    """Write every text unit's vector (with its text, under the full-text index) from DuckDB in one write."""
    with connect(settings.database_path) as conn:
        embeddings = working_source(conn, "text_unit_embeddings")  # with the rows the build publishes
        if embeddings is None:
            return vectors.PublishResult(0, 0, 0, 0)
        units = working_source(conn, "text_units") or "(select '' as id, '' as text where false)"
        reader = conn.sql(
            "select e.id, e.vector, e.text_hash, e.document_key, coalesce(t.text, '') as text "
            f"from {embeddings} e left join {units} t on t.id = e.id "
            "where e.vector is not null order by e.document_key, e.id"
        ).to_arrow_reader(TEXT_UNIT_BATCH_ROWS)
        return vectors.create_from_frames(settings.lancedb_path, vectors.TEXT_UNIT_TABLE, _frames(reader))


def _frames(reader) -> Iterator[pl.DataFrame]:
    for batch in reader:
        if batch.num_rows:
            yield pl.from_arrow(batch)
