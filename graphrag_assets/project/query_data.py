"""Loading what the query engines read: the index tables (DuckDB, read-only) and the search indexes.

A small index (text units up to ``query.in_memory_search_max_tokens`` tokens) is searched in
memory: its vectors come from the embedding tables DuckDB already holds and its lexical index is
built on load (``query/lexical.py``), so a command-line query never imports LanceDB, which costs
about a second. A larger index is searched by DuckDB: its vectors by SQL over the embedding tables
and its text units by the words the build stored (:mod:`graphrag_assets.storage.search_tables`). A
large build without stored words (made by older code) is searched through LanceDB (vectors and
full-text index), opened at the versions the published build recorded. A build made while the
index was small has no LanceDB tables (``storage.lancedb_tables: auto``) and is searched in memory.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from graphrag_assets.core import schemas
from graphrag_assets.core.errors import UserError
from graphrag_assets.core.settings import Settings
from graphrag_assets.query.array_index import ArrayVectorIndex, empty_index
from graphrag_assets.query.query_data import QueryData
from graphrag_assets.query.word_index import WordIndex
from graphrag_assets.storage import table_names as tables
from graphrag_assets.storage.corpus import vector_versions
from graphrag_assets.storage.database import reading
from graphrag_assets.storage.embedding_tables import vector_frames, vector_megabytes
from graphrag_assets.storage.index_lookups import StoredIndex, StoredVectors, StoredWords
from graphrag_assets.storage.index_reads import has_table
from graphrag_assets.storage.vectors import ENTITY_TABLE, REPORT_TABLE, TEXT_UNIT_TABLE, LanceVectorIndex, lexical_index

QUERY_TABLES = {
    tables.ENTITIES: schemas.ENTITIES,
    tables.RELATIONSHIPS: schemas.RELATIONSHIPS,
    tables.COMMUNITIES: schemas.COMMUNITIES,
    tables.COMMUNITY_REPORTS: schemas.COMMUNITY_REPORTS,
    tables.TEXT_UNITS: schemas.TEXT_UNITS,
    tables.COVARIATES: schemas.COVARIATES,
    tables.DOCUMENTS: schemas.DOCUMENTS,
}
COLUMNS_SKIPPED = {  # never needed to answer: the documents' full text, the ids of each community's relationships
    tables.DOCUMENTS: ["text"],
    tables.COMMUNITIES: ["relationship_ids"],
}
EMBEDDING_TABLES = {
    ENTITY_TABLE: tables.ENTITY_EMBEDDINGS,
    TEXT_UNIT_TABLE: tables.TEXT_UNIT_EMBEDDINGS,
    REPORT_TABLE: tables.COMMUNITY_REPORT_EMBEDDINGS,
}
SEARCHED = {  # the QueryData attribute searching each
    ENTITY_TABLE: "entity_description",
    TEXT_UNIT_TABLE: "text_unit_text",
    REPORT_TABLE: "community_full_content",
}


def load_query_data(settings: Settings) -> QueryData:
    """The project's three vector indexes, and its index tables read as a question needs them
    (:mod:`graphrag_assets.storage.index_lookups`)."""
    with reading(settings.database_path):  # the database is opened once for what is read now
        return _load(settings)


def _load(settings: Settings) -> QueryData:
    if not has_table(settings.database_path, tables.ENTITIES):
        raise UserError("the index has no graph yet; run 'graphrag-assets index' first.")
    schemas = {
        table: {c: t for c, t in schema.items() if c not in COLUMNS_SKIPPED.get(table, [])}
        for table, schema in QUERY_TABLES.items()
    }
    stored = StoredIndex(settings.database_path, schemas)
    versions = vector_versions(settings.database_path)
    # A build that recorded no LanceDB tables (storage.lancedb_tables: auto on a small corpus) is
    # searched in memory whatever the limit says now: the limit may have been lowered since.
    if not versions or stored.text_unit_tokens() <= settings.query.in_memory_search_max_tokens:
        data = QueryData(reader=stored)
        units = data.text_units
        stored_vectors = vector_frames(settings.database_path, list(EMBEDDING_TABLES.values()))
        for name, table in EMBEDDING_TABLES.items():
            setattr(data, SEARCHED[name], _vector_index(stored_vectors[table], name))
        from graphrag_assets.query.lexical import Bm25Index  # bm25s and scipy (~0.09 s): for a small build only

        data.text_unit_lexical = Bm25Index(units["id"].to_list(), units["text"].fill_null("").to_list())
        return data
    if stored.has_words:  # vectors and words searched by DuckDB: LanceDB is not even imported
        searched = {SEARCHED[name]: StoredVectors(stored, table) for name, table in EMBEDDING_TABLES.items()}
        return QueryData(**searched, text_unit_lexical=StoredWords(stored), reader=stored)
    lance = settings.lancedb_path
    return QueryData(
        entity_description=LanceVectorIndex(lance, ENTITY_TABLE, versions.get(ENTITY_TABLE)),
        text_unit_text=LanceVectorIndex(lance, TEXT_UNIT_TABLE, versions.get(TEXT_UNIT_TABLE)),
        community_full_content=LanceVectorIndex(lance, REPORT_TABLE, versions.get(REPORT_TABLE)),
        text_unit_lexical=lexical_index(lance, TEXT_UNIT_TABLE, versions.get(TEXT_UNIT_TABLE)),
        reader=stored,
    )


def search_in_memory(settings: Settings, data: QueryData) -> None:
    """Search ``data`` in memory where it searches in storage (a big build) and what it searches
    fits: its vectors, read from DuckDB as float32, within ``serve.in_memory_vectors_mb``; its
    stored words within ``serve.in_memory_words_mb``. For a server, which loads a build once: on the
    100,000-document index an exact vector search in storage took 50-90 ms a question and a BM25
    search by SQL 20-50 ms; in memory a few each."""
    lexical = data.text_unit_lexical
    if isinstance(lexical, StoredWords) and lexical.stored.words_megabytes() <= settings.serve.in_memory_words_mb:
        ids, terms, postings, average = lexical.stored.word_postings()
        data.text_unit_lexical = WordIndex(ids, terms, postings, average, lexical.stored.stopwords)
    if not isinstance(data.entity_description, (LanceVectorIndex, StoredVectors)):
        return
    if vector_megabytes(settings.database_path, list(EMBEDDING_TABLES.values())) > settings.serve.in_memory_vectors_mb:
        return
    for name, table in EMBEDDING_TABLES.items():
        frame = vector_frames(settings.database_path, [table])[table]
        if frame is not None and not frame.is_empty():  # else the search in storage, whatever made it
            setattr(data, SEARCHED[name], _vector_index(frame, name, "float32"))


def _vector_index(frame: pl.DataFrame | None, name: str, dtype: str = "float64") -> ArrayVectorIndex:
    """The vectors of an embedding table as an in-memory index (empty when the table is missing)."""
    if frame is None or frame.is_empty():
        return empty_index()
    return ArrayVectorIndex(frame["id"].to_list(), np.vstack(frame["vector"].to_numpy()), name, dtype)
