"""Corpus-wide graph: ``entities``, ``relationships`` and ``covariates`` (the first step of a corpus run).

Always recomputed from every document's extraction rows, so the result after any sequence of
additions, edits and deletions equals a from-scratch build; description summaries are cached
model calls, so only entities whose set of descriptions changed cost a call.

Entity resolution (``resolution.enabled``) runs here, between merging the records and
summarizing, and writes ``entity_aliases``: it is a function of the same extraction rows and
must always agree with ``entities``, so it is an output of this step rather than a step of its
own (which would also cost Dagster a step and a table round trip per run).
"""

import polars as pl
from dagster import (
    AssetCheckResult,
    AssetCheckSpec,
    AssetExecutionContext,
    AssetIn,
    AssetOut,
    MetadataValue,
    Nothing,
    Output,
    multi_asset,
)

from graphrag_assets.core.buckets import is_bucket_key
from graphrag_assets.core.errors import UserError
from graphrag_assets.core.made_ahead import made_ahead
from graphrag_assets.index.corpus_graph import (
    CorpusGraph,
    extraction_columns,
    noun_graph,
    noun_graph_needs_models,
    summarized_graph,
)
from graphrag_assets.index.graph_checks import GraphReport, check_graph
from graphrag_assets.index.methods import method_steps
from graphrag_assets.index.phrase_descriptions import DESCRIPTIONS, UNITS, Stored
from graphrag_assets.index.resolution_clusters import largest_clusters
from graphrag_assets.pipeline.assets.metadata import preview
from graphrag_assets.pipeline.assets.model_session import ModelSession
from graphrag_assets.pipeline.partitions import PARTITIONS_NAME, STAGED_METADATA
from graphrag_assets.pipeline.resources import GraphRAGProject
from graphrag_assets.storage.corpus import (
    batches_memory_limit,
    begin_corpus_run,
    read_kept_rows,
    staged_graph_problems,
    staged_top_rows,
    write_staged,
    write_staged_batches,
)
from graphrag_assets.storage.database import let_go
from graphrag_assets.storage.documents import indexed_documents, keep_only_documents
from graphrag_assets.storage.table_names import GRAPH_EXTRACTIONS, PHRASE_DESCRIPTIONS, PHRASE_UNITS
from graphrag_assets.storage.tables import read_table

PREVIEW_COLUMNS = ("source", "target", "weight", "description")
LET_GO_RELATIONSHIPS = 100_000  # from this many, the step closes the database when it ends (see the end of graph)

CHECKS = [
    AssetCheckSpec(
        "relationship_endpoints_exist",
        asset="relationships",
        description="Every relationship's source and target is an entity.",
    ),
    AssetCheckSpec("unique_entity_titles", asset="entities", description="No two entities share a title."),
    AssetCheckSpec(
        "degrees_match_relationships",
        asset="entities",
        description="Entity degrees and combined degrees agree with the relationships.",
    ),
]


@multi_asset(
    outs={
        "entities": AssetOut(
            description="Entities merged across all documents (MS GraphRAG v3 columns); descriptions summarized when an entity has several.",
            metadata=STAGED_METADATA,
        ),
        "relationships": AssetOut(
            description="Relationships merged across all documents, undirected (source < target), weights summed (MS GraphRAG v3 columns).",
            metadata=STAGED_METADATA,
        ),
        "covariates": AssetOut(
            description="Claims extracted when extraction.claims.enabled (MS GraphRAG v3 columns).",
            metadata=STAGED_METADATA,
        ),
        "entity_aliases": AssetOut(
            description="Entity resolution: every name merged into another entity, with the method, score and reason (empty when resolution is off).",
            metadata=STAGED_METADATA,
        ),
    },
    ins={
        # read by the step itself, only the columns its method uses (extraction_columns)
        "graph_extractions": AssetIn(dagster_type=Nothing),
        "extraction_status": AssetIn(),
        "text_units": AssetIn(),
    },
    check_specs=CHECKS,
    group_name="graph",
    can_subset=False,
)
def graph(
    context: AssetExecutionContext,
    project: GraphRAGProject,
    extraction_status: pl.DataFrame,
    text_units: pl.DataFrame,
):
    settings = project.settings
    method = settings.resolved_method
    begin_corpus_run(settings.database_path, context.run.run_id if context.run else "")
    kept_documents = _kept_documents(context, settings)
    purged = keep_only_documents(settings.database_path, settings.lancedb_path, kept_documents)
    left_out = sorted(extraction_status.filter(pl.col("status") == "failed")["document_key"].to_list())
    extractions = read_table(
        settings.database_path,
        GRAPH_EXTRACTIONS,
        partition_column="document_key",
        partition_keys=sorted(set(kept_documents) - set(left_out)),
        columns=extraction_columns(settings),
    )
    if extractions is None:  # written with extraction_status, which Dagster has just loaded
        raise UserError(
            f"The index {settings.database_path} has no graph_extractions table; run `graphrag-assets index` again."
        )
    metadata: dict = {
        "method": method,
        "left_out_documents": MetadataValue.json(left_out),
        "purged_rows": MetadataValue.json(purged),
    }
    built = _build(context, settings, extractions, text_units)
    del extractions
    if built.descriptions is not None:
        write_staged(settings.database_path, PHRASE_DESCRIPTIONS, built.descriptions.descriptions)
        write_staged(settings.database_path, PHRASE_UNITS, built.descriptions.units)
    entities, aliases, covariates = built.entities, built.aliases, built.covariates
    relationships = built.relationships
    metadata.update(built.metadata)
    yield Output(
        entities,
        output_name="entities",
        metadata={
            **metadata,
            "entities": entities.height,
            "types": MetadataValue.json(
                dict(entities.group_by("type").agg(pl.len()).sort("len", descending=True).head(20).iter_rows())
            ),
            "preview": preview(
                entities.sort("degree", descending=True).select("title", "type", "degree", "frequency", "description")
            ),
        },
    )
    if isinstance(relationships, pl.DataFrame):
        relationship_count = relationships.height
        report = check_graph(entities, relationships)
        yield Output(
            relationships,
            output_name="relationships",
            metadata={
                "relationships": relationships.height,
                "preview": preview(relationships.sort("combined_degree", descending=True).select(*PREVIEW_COLUMNS)),
            },
        )
    else:
        # the nlp graph's relationships: written batch by batch, never held whole; the checks and
        # the preview read the written table in DuckDB
        batches = made_ahead(relationships.batches())  # the next batch is made while DuckDB writes one
        limit = batches_memory_limit(relationships.count)
        written = write_staged_batches(settings.database_path, "relationships", batches, limit, checkpoint=True)
        del batches
        del relationships, built
        relationship_count = written
        report = _written_graph_report(settings.database_path, entities)
        top = staged_top_rows(
            settings.database_path, "relationships", PREVIEW_COLUMNS, "combined_degree desc, human_readable_id", 5
        )
        yield Output(
            None,  # written already
            output_name="relationships",
            metadata={
                "table": MetadataValue.text("relationships"),
                "dagster/row_count": written,
                "relationships": written,
                "preview": preview(top),
            },
        )
    yield Output(covariates, output_name="covariates", metadata={"covariates": covariates.height})
    yield Output(aliases, output_name="entity_aliases", metadata=_alias_metadata(settings, aliases))
    yield AssetCheckResult(
        check_name="relationship_endpoints_exist",
        asset_key="relationships",
        passed=not report.orphan_relationships,
        metadata={"orphans": len(report.orphan_relationships)},
    )
    yield AssetCheckResult(
        check_name="unique_entity_titles",
        asset_key="entities",
        passed=not report.duplicate_titles,
        metadata={"duplicates": MetadataValue.json(report.duplicate_titles[:20])},
    )
    yield AssetCheckResult(
        check_name="degrees_match_relationships",
        asset_key="entities",
        passed=not report.degree_mismatches,
        metadata={"mismatches": len(report.degree_mismatches)},
    )
    # DuckDB's cache of the tables this step read and wrote would stay in this process while the
    # next step (communities) reads the relationships afresh in batches: a 30 MB text file's index
    # started the communities step ~120 MB lower with it let go (bench/bench_large_file.py). A
    # small graph's cache is small, and letting go costs a checkpoint and a reopen (~0.1 s of a
    # 5 s cold index of A Christmas Carol), so only a big one is let go.
    if relationship_count >= LET_GO_RELATIONSHIPS:
        let_go(settings.database_path)


def _written_graph_report(database_path, entities: pl.DataFrame) -> GraphReport:
    """:func:`check_graph`'s report on the staged relationships, checked by DuckDB."""
    problems = staged_graph_problems(database_path, entities)
    return GraphReport(
        orphan_relationships=problems["orphan_relationships"],
        duplicate_titles=problems["duplicate_titles"],
        degree_mismatches=problems["entity_degree_mismatches"] + problems["relationship_degree_mismatches"],
    )


def _build(
    context: AssetExecutionContext, settings, extractions: pl.DataFrame, text_units: pl.DataFrame
) -> CorpusGraph:
    """The graph (:mod:`graphrag_assets.index.corpus_graph`), its model calls made through a session
    of this step (persisted to ``llm_usage``, shown as metadata) when it makes any."""
    summarized = method_steps(settings.resolved_method).graph == "summarized"
    stored = None
    if not summarized:
        stored = Stored(
            read_kept_rows(settings.database_path, PHRASE_DESCRIPTIONS, list(DESCRIPTIONS)),
            read_kept_rows(settings.database_path, PHRASE_UNITS, list(UNITS)),
        )
    if not summarized and not noun_graph_needs_models(settings):
        return noun_graph(settings, extractions, text_units, None, context.log, stored)
    with ModelSession(context, settings) as session:
        if summarized:
            built = summarized_graph(settings, extractions, session, context.log)
        else:
            built = noun_graph(settings, extractions, text_units, session, context.log, stored)
    built.metadata = {**session.metadata(), **built.metadata}
    return built


def _alias_metadata(settings, aliases: pl.DataFrame) -> dict:
    clusters = largest_clusters(aliases)
    lines = ["| canonical | size | aliases |", "|---|---|---|"]
    lines += [f"| {c['canonical']} | {c['size']} | {', '.join(c['aliases'])[:300]} |" for c in clusters]
    return {
        "resolution": "on" if settings.resolution.enabled else "off",
        "aliases": aliases.height,
        "canonical_entities": aliases.get_column("canonical_title").n_unique() if aliases.height else 0,
        "largest_groups": MetadataValue.md("\n".join(lines) if clusters else "_(no merges)_"),
        "preview": preview(aliases.select("alias", "canonical_title", "method", "score", "reason")),
    }


def _kept_documents(context: AssetExecutionContext, settings) -> list[str]:
    """The documents of the current partitions: the graph reads their rows only, and the step
    removes the rows of the others (documents whose partition the sensor or schedule deleted)
    first, which keeps the per-document tables and LanceDB in step with the graph. In bucket mode
    a bucket's run removes its deleted documents itself, and the partitions name no documents: the
    documents kept are those that still have a ``source_files`` row.
    """
    keep = list(context.instance.get_dynamic_partitions(PARTITIONS_NAME))
    if any(is_bucket_key(key) for key in keep):
        keep = indexed_documents(settings.database_path)
    return keep
