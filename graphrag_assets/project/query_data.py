"""Loading what the query engines read: the index tables (DuckDB, read-only) and vector indexes."""

from __future__ import annotations

import polars as pl

from graphrag_assets.core import schemas
from graphrag_assets.core.errors import UserError
from graphrag_assets.core.settings import Settings
from graphrag_assets.query.types import QueryData
from graphrag_assets.storage.database import connect, table_exists
from graphrag_assets.storage.corpus import vector_versions
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


def load_query_data(settings: Settings) -> QueryData:
    """The index tables the query engines read and the project's three vector indexes."""
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
            frames[table] = schemas.conform(conn.sql(f'select {select} from "{table}"').pl(), {c: schema[c] for c in columns})
    lance = settings.lancedb_path
    versions = vector_versions(settings.database_path)
    return QueryData(
        **frames,
        entity_description=LanceVectorIndex(lance, ENTITY_TABLE, versions.get(ENTITY_TABLE)),
        text_unit_text=LanceVectorIndex(lance, TEXT_UNIT_TABLE),
        community_full_content=LanceVectorIndex(lance, REPORT_TABLE, versions.get(REPORT_TABLE)),
        text_unit_lexical=lexical_index(lance, TEXT_UNIT_TABLE),
    )
