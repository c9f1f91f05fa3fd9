"""The last step of a corpus run: publish the build (``corpus_manifest``).

Every corpus-wide table was staged (``_staged_<table>``) by the steps before. This step merges
the corpus vectors into LanceDB (when the index keeps LanceDB tables: ``storage.lancedb_tables``),
then replaces the published tables with the staged ones and writes the manifest (the documents the
build was made from) in one DuckDB transaction. Until it commits, ``status``, ``index`` and
queries see the previous build; a run interrupted anywhere before leaves staged tables behind,
which ``status`` reports and ``index`` finishes (model calls already made are answered by the
cache). When documents were removed since the previous build, LanceDB's older versions are
cleaned up so their vectors cannot be read any more, and cached answers that this build no longer
uses are deleted (see :mod:`graphrag_assets.storage.cache_owners`).
"""

from collections.abc import Callable
from typing import Any

import polars as pl
from dagster import AssetExecutionContext, AssetIn, MaterializeResult, MetadataValue, asset

from graphrag_assets.core.progress import Counter
from graphrag_assets.core.tokens import release_tokenizers
from graphrag_assets.pipeline.resources import GraphRAGProject
from graphrag_assets.project.fingerprints import corpus_fingerprint
from graphrag_assets.project.lancedb_tables import build_text_unit_table, lancedb_wanted
from graphrag_assets.project.walk_graph import store_walk_graph
from graphrag_assets.storage import vectors
from graphrag_assets.storage.cache_owners import settle_corpus_run
from graphrag_assets.storage.corpus import publish_corpus, read_staged, record_vector_versions
from graphrag_assets.storage.search_tables import write_search_tables
from graphrag_assets.storage.tables import read_table

CORPUS_VECTORS = {"entity_embeddings": vectors.ENTITY_TABLE, "community_report_embeddings": vectors.REPORT_TABLE}
STAGED_ASSETS = [
    "entities",
    "relationships",
    "covariates",
    "entity_aliases",
    "communities",
    "community_reports",
    *CORPUS_VECTORS,
]


@asset(
    ins={"source_files": AssetIn(), "extraction_status": AssetIn()},
    deps=STAGED_ASSETS,
    group_name="graph",
    description="The documents (and content hashes) the published corpus build was made from, and those left out because "
    "their extraction failed. Materializing it publishes the staged corpus tables in one transaction.",
)
def corpus_manifest(
    context: AssetExecutionContext,
    project: GraphRAGProject,
    source_files: pl.DataFrame,
    extraction_status: pl.DataFrame,
) -> MaterializeResult:
    settings = project.settings
    # No step after this one counts tokens: the tokenizer's 22 MB go before the run's end
    # checkpoints the database, the highest point of an index's memory otherwise.
    release_tokenizers()
    progress = Counter("publish the build", 1, context.log).start()
    manifest = build_manifest(source_files, extraction_status).with_columns(
        pl.lit(corpus_fingerprint(settings), dtype=pl.String).alias("settings_fingerprint")
    )
    previous = read_table(settings.database_path, "corpus_manifest")
    merged, versions = _publish_vectors(settings) if lancedb_wanted(settings) else ({}, {})
    run_id = context.run.run_id if context.run else ""
    tokenized: list[int] = []  # what the search tables' writer reports, from inside the transaction
    published = publish_corpus(
        settings.database_path,
        manifest,
        {"run_id": run_id, "settings_fingerprint": corpus_fingerprint(settings), "vector_versions": versions},
        with_build=_search_tables_writer(tokenized) if versions else None,
    )
    walk_edges = store_walk_graph(settings.database_path)  # local search's ranking graph, for this build
    removed = _removed_documents(previous, manifest)
    cache_rows_deleted = settle_corpus_run(settings.database_path, run_id, documents_removed=bool(removed))
    if removed:
        compacted = vectors.compact(settings.lancedb_path, [*CORPUS_VECTORS.values(), vectors.TEXT_UNIT_TABLE])
        record_vector_versions(settings.database_path, {t: v for t, v in compacted.items() if t in versions})
    progress.step()
    left_out = manifest.filter(pl.col("status") == "failed")["document_key"].to_list()
    return MaterializeResult(
        metadata={
            "documents": manifest.height,
            "left_out": len(left_out),
            "published_tables": MetadataValue.json(published),
            "removed_documents": MetadataValue.json(removed),
            "cache_rows_deleted": MetadataValue.json(cache_rows_deleted),
            "ranking_walk_edges": walk_edges,
            "text_units_tokenized": sum(tokenized),
            **{f"lancedb/{table}/rows": result.rows for table, result in merged.items()},
            **{f"lancedb/{table}/inserted": result.inserted for table, result in merged.items()},
            **{f"lancedb/{table}/updated": result.updated for table, result in merged.items()},
            **{f"lancedb/{table}/deleted": result.deleted for table, result in merged.items()},
        }
    )


def _search_tables_writer(tokenized: list[int]) -> Callable[[Any], None]:
    """What writes a big build's search tables in its publishing transaction (so that its queries
    search by SQL instead of importing LanceDB), noting the text units it tokenized."""
    from graphrag_assets.query.lexical import STOPWORDS  # bm25s: only for a build that needs it

    return lambda conn: tokenized.append(write_search_tables(conn, STOPWORDS))


def _publish_vectors(settings) -> tuple[dict[str, vectors.PublishResult], dict[str, int]]:
    """Merge the staged corpus vectors into LanceDB, building the text-unit table first when it is missing.

    The text-unit table is built here, from every vector DuckDB holds, when the index has just come
    to need LanceDB (see :mod:`graphrag_assets.project.lancedb_tables`); otherwise the document runs
    keep it. Returns what was merged per table and every table's version, which the build records
    (so queries know the build has LanceDB tables).
    """
    merged: dict[str, vectors.PublishResult] = {}
    if not vectors.table_built(settings.lancedb_path, vectors.TEXT_UNIT_TABLE):
        merged[vectors.TEXT_UNIT_TABLE] = build_text_unit_table(settings)
    for asset_name, table in CORPUS_VECTORS.items():
        frame = read_staged(settings.database_path, asset_name)
        if frame is not None:
            merged[table] = vectors.publish(settings.lancedb_path, table, frame.select("id", "vector", "text_hash"))
    versions = {table: result.version for table, result in merged.items() if result.version}
    text_units = vectors.version(settings.lancedb_path, vectors.TEXT_UNIT_TABLE)
    return merged, {**versions, **({vectors.TEXT_UNIT_TABLE: text_units} if text_units else {})}


def build_manifest(source_files: pl.DataFrame, extraction_status: pl.DataFrame) -> pl.DataFrame:
    """One row per document file: its content hash and whether the build includes it."""
    status = extraction_status.select("document_key", pl.col("status").alias("extraction"), "error")
    return (
        source_files.select("document_key", "path", "content_hash", pl.col("status").alias("ingestion"))
        .join(status, on="document_key", how="left")
        .with_columns(
            pl.when(pl.col("extraction") == "failed")
            .then(pl.lit("failed"))
            .when(pl.col("ingestion") == "ingested")
            .then(pl.lit("included"))
            .otherwise(pl.lit("skipped"))
            .alias("status")
        )
        .select("document_key", "path", "content_hash", "status", "error")
        .sort("document_key")
    )


def _removed_documents(previous: pl.DataFrame | None, manifest: pl.DataFrame) -> list[str]:
    """Documents of the previous build that this build no longer has."""
    if previous is None:
        return []
    return sorted(set(previous["document_key"].to_list()) - set(manifest["document_key"].to_list()))
