"""A big build's search tables (:mod:`graphrag_assets.storage.search_tables`) written for a build
that has none: one published by code before them, or with another format.

Its next corpus run would write them with the build; ``index`` writes them without one, so an
upgraded index is searched by SQL without waiting for a document to change (27 s at 100,000
documents, once).
"""

from __future__ import annotations

from graphrag_assets.core.settings import Settings
from graphrag_assets.storage.search_tables import search_tables_due, sync_search_tables


def due(settings: Settings) -> bool:
    """Whether the published build should have search tables and has none this code reads."""
    return search_tables_due(settings.database_path)


def write_if_due(settings: Settings) -> int | None:
    """Write them when :func:`due`; returns the text units tokenized (None: not due)."""
    if not due(settings):
        return None
    from graphrag_assets.query.lexical import STOPWORDS  # bm25s: only for a build that needs it

    return sync_search_tables(settings.database_path, STOPWORDS)
