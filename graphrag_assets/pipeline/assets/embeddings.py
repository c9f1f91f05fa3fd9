"""Embeddings of text units (per document), entities and community reports (corpus-wide).

Stored in DuckDB as the system of record (``FLOAT[n]``, n taken from the model's output) and,
when the index keeps LanceDB tables (:mod:`graphrag_assets.project.lancedb_tables`), merged into
LanceDB: changed rows are updated, new ones inserted, rows whose source is gone deleted.
Text-unit vectors are merged by their document run once their table exists (the corpus run builds
it when the index first needs it); the corpus-wide ones by the corpus run's last step, when the
build is published (``publish.py``). Calls are cached by content, so only new or changed texts
cost anything.
"""

from dataclasses import dataclass

import polars as pl
from dagster import AssetExecutionContext, AssetIn, AssetKey, MetadataValue, asset

from graphrag_assets.core import schemas
from graphrag_assets.core.progress import Counter
from graphrag_assets.core.settings import Settings
from graphrag_assets.index.embedding_texts import (
    embed_frame,
    entity_texts,
    report_texts,
    reusable_vectors,
    text_unit_texts,
    with_text,
)
from graphrag_assets.llm.cache import own_embedded_texts
from graphrag_assets.pipeline.assets.metadata import describe_partitions
from graphrag_assets.pipeline.assets.model_session import ModelSession, StepScope, step_scope
from graphrag_assets.pipeline.io_manager import DocumentRows
from graphrag_assets.pipeline.partitions import DOCUMENT_PARTITIONS, PARTITION_METADATA, SINGLE_RUN, STAGED_METADATA
from graphrag_assets.pipeline.resources import GraphRAGProject
from graphrag_assets.project.document_work import step_work
from graphrag_assets.project.lancedb_tables import text_units_kept
from graphrag_assets.storage import vectors
from graphrag_assets.storage.corpus import read_kept_rows
from graphrag_assets.storage.tables import read_table


def _embed(scope: StepScope, texts: pl.DataFrame, purpose: str, table: str | None = None):
    """Embed ``texts``; the published ``table``'s vectors of unchanged texts are reused when the
    model allows it (:func:`~graphrag_assets.index.embedding_texts.reusable_vectors`)."""
    progress = Counter(purpose.replace("_", " "), texts.height, scope.log).start()
    with ModelSession(scope) as session:
        embedder = session.embedder
        kept = None
        if table and texts.height and getattr(embedder, "reproducible", False):  # else nothing to read
            stored = read_kept_rows(scope.settings.database_path, table, ("text_hash", "vector"))
            kept = reusable_vectors(embedder, stored)
        frame = session.run(embed_frame(embedder, texts, purpose=purpose, kept=kept)) if texts.height else None
        model_name = embedder.model
    progress.step(texts.height)
    if frame is None:  # nothing to embed: the placeholder vector type never retypes a stored table
        frame = pl.DataFrame(
            schema={
                **{c: texts.schema[c] for c in texts.columns if c != "text"},
                "text_hash": pl.String,
                "vector": pl.Array(pl.Float32, 1),
            }
        )
    frame = frame.with_columns(pl.lit(model_name, dtype=pl.String).alias("model"))
    usage = session.metadata()
    if table:
        usage["vectors_reused"] = 0 if kept is None else frame.join(kept, on="text_hash", how="semi").height
    return frame, usage


def _dimension(frame: pl.DataFrame) -> int:
    return frame.schema["vector"].size if isinstance(frame.schema.get("vector"), pl.Array) else 0


def _publish_metadata(result: vectors.PublishResult, frame: pl.DataFrame) -> dict:
    return {
        "lancedb/inserted": result.inserted,
        "lancedb/updated": result.updated,
        "lancedb/deleted": result.deleted,
        "lancedb/rows": result.rows,
    }


@asset(
    deps=[AssetKey("text_units")],
    partitions_def=DOCUMENT_PARTITIONS,
    backfill_policy=SINGLE_RUN,
    group_name="embeddings",
    metadata=PARTITION_METADATA,
    description=f"Embedding of every text unit's text; published to LanceDB table '{vectors.TEXT_UNIT_TABLE}' "
    "when the index keeps LanceDB tables.",
)
def text_unit_embeddings(context: AssetExecutionContext, project: GraphRAGProject) -> DocumentRows:
    settings = project.settings
    keys = step_work(settings, list(context.partition_keys), "text_unit_embeddings")
    text_units = read_table(settings.database_path, "text_units", partition_column="document_key", partition_keys=keys)
    partitions = list(context.partition_keys)
    scope = step_scope(context, settings, partitions[0] if len(partitions) == 1 else None)
    vectors_made = embed_text_units(scope, text_units)
    published = publish_text_unit_vectors(settings, vectors_made, keys)
    frame = vectors_made.frame
    describe_partitions(
        context,
        "text_unit_embeddings",
        frame,
        lambda rows, bucketed: {"rows": rows.height, "dimension": _dimension(frame)},
        run_wide={**vectors_made.usage, **published},
    )
    return DocumentRows(frame, keys)


@dataclass(frozen=True)
class TextUnitVectors:
    """The embeddings of some documents' text units, the texts they were made from, and the step's model usage."""

    frame: pl.DataFrame
    texts: pl.DataFrame
    usage: dict


def embed_text_units(scope: StepScope, text_units: pl.DataFrame | None) -> TextUnitVectors:
    """Embed ``text_units`` and record their documents as owners of the cached vectors: the body of
    the ``text_unit_embeddings`` asset without Dagster, so a worker's shard runs the very same step."""
    settings = scope.settings
    texts = text_unit_texts(text_units if text_units is not None else schemas.empty_frame(schemas.TEXT_UNITS))
    frame, usage = _embed(scope, texts, "embed_text_units")
    own_embedded_texts(
        settings.database_path,
        frame["model"][0] if frame.height else "",
        texts.select("text", "document_key").iter_rows(),
    )
    return TextUnitVectors(frame, texts, usage)


def publish_text_unit_vectors(settings: Settings, made: TextUnitVectors, keys: list[str]) -> dict:
    """Merge the vectors of documents ``keys`` into LanceDB when the index keeps its tables; what changed there."""
    if not text_units_kept(settings):
        return {}
    result = vectors.publish(
        settings.lancedb_path,
        vectors.TEXT_UNIT_TABLE,
        with_text(made.frame.select("id", "vector", "text_hash", "document_key"), made.texts),
        scope_column="document_key",
        scope_keys=keys,
    )
    return _publish_metadata(result, made.frame)


@asset(
    ins={"entities": AssetIn()},
    group_name="embeddings",
    metadata=STAGED_METADATA,
    description=f"Embedding of each entity's 'title: description'; published to LanceDB table '{vectors.ENTITY_TABLE}'.",
)
def entity_embeddings(context: AssetExecutionContext, project: GraphRAGProject, entities: pl.DataFrame) -> pl.DataFrame:
    return _corpus_embeddings(context, project.settings, entity_texts(entities), "embed_entities", "entity_embeddings")


@asset(
    ins={"community_reports": AssetIn()},
    group_name="embeddings",
    metadata=STAGED_METADATA,
    description=f"Embedding of each community report's full_content; published to LanceDB table '{vectors.REPORT_TABLE}'.",
)
def community_report_embeddings(
    context: AssetExecutionContext, project: GraphRAGProject, community_reports: pl.DataFrame
) -> pl.DataFrame:
    return _corpus_embeddings(
        context, project.settings, report_texts(community_reports), "embed_reports", "community_report_embeddings"
    )


def _corpus_embeddings(
    context: AssetExecutionContext, settings, texts: pl.DataFrame, purpose: str, table: str
) -> pl.DataFrame:
    """Embed a corpus-wide table's texts (merged into LanceDB when the build is published); the
    last build's ``table`` gives the vectors of texts that did not change."""
    frame, usage = _embed(step_scope(context, settings), texts, purpose, table)
    model = MetadataValue.text(frame["model"][0] if frame.height else "")
    context.add_output_metadata({**usage, "rows": frame.height, "dimension": _dimension(frame), "model": model})
    return frame
