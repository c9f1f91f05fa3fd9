"""Loading what the query engines read: the index tables (DuckDB, read-only) and the search indexes.

A small index (text units up to ``query.in_memory_search_max_tokens`` tokens) is searched in
memory: its vectors come from the embedding tables DuckDB already holds and its lexical index is
built on load (``query/lexical.py``), so a command-line query never imports LanceDB, which costs
about a second. A larger index is searched through LanceDB (vectors and full-text index), opened
at the versions the published build recorded — when it recorded any: a build made while the index
was small has no LanceDB tables (``storage.lancedb_tables: auto``) and is searched in memory.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from graphrag_assets.core import schemas
from graphrag_assets.core.errors import UserError
from graphrag_assets.core.settings import Settings
from graphrag_assets.query.lexical import Bm25Index
from graphrag_assets.query.types import ArrayVectorIndex, QueryData, empty_index
from graphrag_assets.storage.corpus import vector_versions
from graphrag_assets.storage.database import connect, frame_of, reading, table_exists
from graphrag_assets.storage.vectors import ENTITY_TABLE, REPORT_TABLE, TEXT_UNIT_TABLE, LanceVectorIndex, lexical_index

QUERY_TABLES = {
    "entities": schemas.ENTITIES,
    "relationships": schemas.RELATIONSHIPS,
    "communities": schemas.COMMUNITIES,
    "community_reports": schemas.COMMUNITY_REPORTS,
    "text_units": schemas.TEXT_UNITS,
    "covariates": schemas.COVARIATES,
    "documents": schemas.DOCUMENTS,
}
TEXT_COLUMNS_SKIPPED = {"documents": ["text"]}  # the documents' full text is never needed to answer
EMBEDDING_TABLES = {
    ENTITY_TABLE: "entity_embeddings",
    TEXT_UNIT_TABLE: "text_unit_embeddings",
    REPORT_TABLE: "community_report_embeddings",
}


def load_query_data(settings: Settings) -> QueryData:
    """The index tables the query engines read and the project's three vector indexes."""
    with reading(settings.database_path):  # the database is opened once for tables and vectors
        return _load(settings)


def _load(settings: Settings) -> QueryData:
    frames: dict[str, pl.DataFrame] = {}
    with connect(settings.database_path, read_only=True) as conn:
        if not table_exists(conn, "entities"):
            raise UserError("the index has no graph yet; run 'graphrag-assets index' first.")
        for table, schema in QUERY_TABLES.items():
            if not table_exists(conn, table):
                frames[table] = schemas.empty_frame(schema)
                continue
            skipped = TEXT_COLUMNS_SKIPPED.get(table, [])
            columns = [c for c in schema if c not in skipped]
            present = {row[0] for row in conn.execute(f'describe "{table}"').fetchall()}
            select = ", ".join(f'"{c}"' for c in columns if c in present)
            frames[table] = schemas.conform(
                frame_of(conn.sql(f'select {select} from "{table}"')), {c: schema[c] for c in columns}
            )
    units = frames["text_units"]
    versions = vector_versions(settings.database_path)
    # A build that recorded no LanceDB tables (storage.lancedb_tables: auto on a small corpus) is
    # searched in memory whatever the limit says now: the limit may have been lowered since.
    if not versions or int(units["n_tokens"].sum() or 0) <= settings.query.in_memory_search_max_tokens:
        with connect(settings.database_path, read_only=True) as conn:
            vectors = {name: _vector_index(conn, table, name) for name, table in EMBEDDING_TABLES.items()}
        return QueryData(
            **frames,
            entity_description=vectors[ENTITY_TABLE],
            text_unit_text=vectors[TEXT_UNIT_TABLE],
            community_full_content=vectors[REPORT_TABLE],
            text_unit_lexical=Bm25Index(units["id"].to_list(), units["text"].fill_null("").to_list()),
        )
    lance = settings.lancedb_path
    return QueryData(
        **frames,
        entity_description=LanceVectorIndex(lance, ENTITY_TABLE, versions.get(ENTITY_TABLE)),
        text_unit_text=LanceVectorIndex(lance, TEXT_UNIT_TABLE, versions.get(TEXT_UNIT_TABLE)),
        community_full_content=LanceVectorIndex(lance, REPORT_TABLE, versions.get(REPORT_TABLE)),
        text_unit_lexical=lexical_index(lance, TEXT_UNIT_TABLE, versions.get(TEXT_UNIT_TABLE)),
    )


def _vector_index(conn, table: str, name: str) -> ArrayVectorIndex:
    """The vectors of an embedding table as an in-memory index (empty when the table is missing)."""
    if not table_exists(conn, table):
        return empty_index()
    frame = frame_of(conn.sql(f'select id, vector from "{table}" where vector is not null order by id'))
    if frame.is_empty():
        return empty_index()
    return ArrayVectorIndex(frame["id"].to_list(), np.vstack(frame["vector"].to_numpy()), name)
