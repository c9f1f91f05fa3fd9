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

from graphrag_assets.core.settings import Settings
from graphrag_assets.storage import vectors
from graphrag_assets.storage.embedding_tables import text_unit_size, text_unit_vectors


def text_units_kept(settings: Settings) -> bool:
    """Whether per-document steps publish and delete text-unit vectors in LanceDB."""
    return settings.storage.lancedb_tables == "always" or vectors.table_built(
        settings.lancedb_path, vectors.TEXT_UNIT_TABLE
    )


def lancedb_wanted(settings: Settings, *, read_only: bool = False, wait_seconds: float = 30.0) -> bool:
    """Whether this index keeps LanceDB tables: ``always``, tables already built, or text units over the limit."""
    if text_units_kept(settings):
        return True
    rows, tokens = text_unit_size(settings.database_path, read_only=read_only, wait_seconds=wait_seconds)
    return rows > 0 and settings.lancedb_tables_for(tokens)


def lancedb_missing(settings: Settings, *, wait_seconds: float = 30.0) -> bool:
    """LanceDB tables are wanted but the text-unit table was never built: a corpus run builds it.

    True after the threshold is lowered or ``always`` is switched on, with nothing else changed.
    """
    if vectors.table_built(settings.lancedb_path, vectors.TEXT_UNIT_TABLE):
        return False
    rows, tokens = text_unit_size(settings.database_path, read_only=True, wait_seconds=wait_seconds)
    return rows > 0 and settings.lancedb_tables_for(tokens)


def build_text_unit_table(settings: Settings) -> vectors.PublishResult:
    """Write every text unit's vector (with its text, under the full-text index) from DuckDB in one write."""
    embedded, _ = text_unit_size(settings.database_path, read_only=False, wait_seconds=30.0)  # pending rows too
    if not embedded:
        return vectors.PublishResult(0, 0, 0, 0)
    return vectors.create_from_frames(
        settings.lancedb_path, vectors.TEXT_UNIT_TABLE, text_unit_vectors(settings.database_path)
    )
