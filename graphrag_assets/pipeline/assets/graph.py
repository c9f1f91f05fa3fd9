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
    Output,
    multi_asset,
)

from graphrag_assets.core import schemas
from graphrag_assets.core.buckets import is_bucket_key
from graphrag_assets.core.errors import UserError
from graphrag_assets.core.progress import Counter, warn
from graphrag_assets.index.entity_resolution import (
    Resolution,
    merged_profiles,
    noun_phrase_profiles,
    resolution_options,
    resolve_with_model,
    resolve_with_rules,
)
from graphrag_assets.index.graph_checks import check_graph
from graphrag_assets.index.graph_merge import finalize_covariates, finalize_graph, merge_graph
from graphrag_assets.index.methods import method_steps
from graphrag_assets.index.noun_phrases import NOUN_PHRASE_TYPE
from graphrag_assets.index.resolution_clusters import apply_aliases, kept_aliases, largest_clusters, with_aliases
from graphrag_assets.index.resolution_rules import NameEvidence
from graphrag_assets.index.summarize import SummaryOptions, distinct_descriptions, summarize_all, summary_options
from graphrag_assets.pipeline.assets.metadata import preview
from graphrag_assets.pipeline.assets.model_session import ModelSession
from graphrag_assets.pipeline.partitions import PARTITIONS_NAME, STAGED_METADATA
from graphrag_assets.pipeline.resources import GraphRAGProject
from graphrag_assets.storage.corpus import begin_corpus_run
from graphrag_assets.storage.documents import indexed_documents, keep_only_documents

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
        "graph_extractions": AssetIn(),
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
    graph_extractions: pl.DataFrame,
    extraction_status: pl.DataFrame,
    text_units: pl.DataFrame,
):
    settings = project.settings
    method = settings.resolved_method
    begin_corpus_run(settings.database_path, context.run.run_id if context.run else "")
    purged = _purge_removed_documents(context, settings)
    left_out = sorted(extraction_status.filter(pl.col("status") == "failed")["document_key"].to_list())
    extractions = graph_extractions.filter(~pl.col("document_key").is_in(left_out))
    metadata: dict = {
        "method": method,
        "left_out_documents": MetadataValue.json(left_out),
        "purged_rows": MetadataValue.json(purged),
    }
    if method_steps(method).graph == "summarized":
        entities, relationships, covariates, aliases, extra = _standard_graph(context, settings, extractions)
    else:
        entities, relationships, covariates, aliases, extra = _noun_graph(context, settings, extractions, text_units)
    entities = with_aliases(entities, aliases)
    metadata.update(extra)

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
    yield Output(
        relationships,
        output_name="relationships",
        metadata={
            "relationships": relationships.height,
            "preview": preview(
                relationships.sort("combined_degree", descending=True).select(
                    "source", "target", "weight", "description"
                )
            ),
        },
    )
    yield Output(covariates, output_name="covariates", metadata={"covariates": covariates.height})
    yield Output(aliases, output_name="entity_aliases", metadata=_alias_metadata(settings, aliases))
    report = check_graph(entities, relationships)
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


def _standard_graph(context, settings, extractions: pl.DataFrame):
    merged = merge_graph(extractions)
    aliases = schemas.empty_frame(schemas.ENTITY_ALIASES)
    resolution_metadata: dict = {}
    with ModelSession(context, settings) as session:
        if settings.resolution.enabled:
            profiles = merged_profiles(merged.entities)
            texts = (d for descriptions in profiles.get_column("descriptions").to_list() for d in descriptions)
            resolution, resolution_metadata = _resolve(context, settings, profiles, texts, session)
            aliases = resolution.aliases
            if not aliases.is_empty():
                extractions = apply_aliases(extractions, aliases)
                merged = merge_graph(extractions)
        entity_items = [(row[0], row[1] or []) for row in merged.entities.select("title", "descriptions").iter_rows()]
        relationship_items = [
            ((row[0], row[1]), row[2] or [])
            for row in merged.relationships.select("source", "target", "descriptions").iter_rows()
        ]
        needs_model = [item for item in entity_items + relationship_items if len(distinct_descriptions(item[1])) > 1]
        summaries: dict = {}
        if needs_model:
            progress = Counter("summarize descriptions", len(needs_model), context.log).start()
            summaries = session.run(
                _summaries_with_progress(
                    session.chat, needs_model, summary_options(settings), settings.llm.concurrency * 4, progress
                )
            )
    entity_summaries = {k: v for k, v in summaries.items() if isinstance(k, str)}
    relationship_summaries = {k: v for k, v in summaries.items() if isinstance(k, tuple)}
    entities, relationships = finalize_graph(
        merged.entities, merged.relationships, entity_summaries, relationship_summaries
    )
    claims = extractions.filter(pl.col("record_type") == "claim")
    covariates = finalize_covariates(claims) if not claims.is_empty() else schemas.empty_frame(schemas.COVARIATES)
    stats = merged.stats
    metadata = {
        **session.metadata(),
        **resolution_metadata,
        "summaries_needed": len(needs_model),
        "self_loops_dropped": stats.self_loops_dropped,
        "orphan_relationships_dropped": stats.orphan_relationships_dropped,
        "entities_with_several_types": stats.entities_with_several_types,
    }
    return entities, relationships, covariates, aliases, metadata


def _resolve(
    context, settings, profiles: pl.DataFrame, evidence_texts, session: ModelSession | None = None
) -> tuple[Resolution, dict]:
    """Entity resolution by the model's verdicts or the offline rules, as the settings say.

    The model's calls go through ``session`` when given, else through a session of their own,
    whose usage is returned as metadata (the rules make no calls: no session, no metadata).
    """
    options = resolution_options(settings)
    progress = Counter("entity resolution", 1, context.log).start()
    usage: dict = {}
    if options.template is None:
        resolution = resolve_with_rules(profiles, NameEvidence.from_texts(evidence_texts), options)
    elif session is not None:
        resolution = session.run(resolve_with_model(session.chat, session.embedder, profiles, options))
    else:
        with ModelSession(context, settings) as own:
            resolution = own.run(resolve_with_model(own.chat, own.embedder, profiles, options))
        usage = own.metadata()
    progress.step()
    metadata = {
        **usage,
        "resolution/candidate_pairs": resolution.candidate_pairs,
        "resolution/groups_judged_by_model": resolution.groups,
        "resolution/unusable_answers": resolution.unusable_answers,
        "resolution/entities_before": profiles.height,
        "resolution/entities_merged": resolution.merged_entities,
    }
    return resolution, metadata


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


async def _summaries_with_progress(model, items, options: SummaryOptions, step: int, progress: Counter) -> dict:
    """Summaries in chunks of ``step`` items, so progress moves while a large corpus is summarized."""
    results: dict = {}
    for start in range(0, len(items), step):
        batch = items[start : start + step]
        results.update(await summarize_all(model, batch, options))
        progress.step(len(batch))
    return results


def _noun_graph(context, settings, extractions: pl.DataFrame, text_units: pl.DataFrame):
    from graphrag_assets.index.nlp_graph import code_noun_graph, materialize, prune_codes  # numpy: the nlp method only

    ordered_units = text_units.sort("document_key", "chunk_index").select("id", "text")
    # three steps (build, prune, relationships) and one per text unit (the entity descriptions)
    progress = Counter("noun-phrase graph", 3 + ordered_units.height, context.log).start()
    aliases = schemas.empty_frame(schemas.ENTITY_ALIASES)
    metadata: dict = {}
    if settings.resolution.enabled:
        profiles = noun_phrase_profiles(extractions, NOUN_PHRASE_TYPE)
        resolution, metadata = _resolve(context, settings, profiles, ordered_units.get_column("text").to_list())
        aliases = resolution.aliases
        extractions = apply_aliases(extractions, aliases)
    graph = code_noun_graph(extractions, normalize_edge_weights=settings.nlp.normalize_edge_weights)
    progress.step()
    try:
        kept = prune_codes(graph, settings.nlp.prune)
    except UserError as exc:
        # A small corpus can lose every node to the frequency rules; an unpruned graph is more
        # useful to a newcomer than a failed run.
        warn(f"{exc} Using the unpruned noun-phrase graph instead.", context.log)
        kept = None
    progress.step()
    before = (graph.node_count, graph.edge_count)
    entities, relationships = materialize(graph, kept, ordered_units, progress.step)
    del graph
    progress.step()
    metadata.update(
        {
            "nodes_before_pruning": before[0],
            "edges_before_pruning": before[1],
        }
    )
    return entities, relationships, schemas.empty_frame(schemas.COVARIATES), kept_aliases(aliases, entities), metadata


def _purge_removed_documents(context: AssetExecutionContext, settings) -> dict[str, int]:
    """Rows of documents whose partition was deleted (by the sensor or schedule) are removed here.

    The inputs of this step were already loaded for the current partitions only, so the graph
    never sees those rows; this keeps the per-document tables and LanceDB in step with it. In
    bucket mode a bucket's run removes its deleted documents itself, and the partitions name no
    documents: the documents kept are those that still have a ``source_files`` row.
    """
    keep = list(context.instance.get_dynamic_partitions(PARTITIONS_NAME))
    if any(is_bucket_key(key) for key in keep):
        keep = indexed_documents(settings.database_path)
    return keep_only_documents(settings.database_path, settings.lancedb_path, keep)
