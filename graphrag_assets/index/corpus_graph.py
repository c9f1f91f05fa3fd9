"""Building the corpus-wide graph from every document's extraction records (the ``graph`` step's work).

Two ways, by method (:mod:`.methods`): the standard method merges the model's entity and
relationship records and summarizes descriptions with the model; the fast and nlp methods build a
noun-phrase co-occurrence graph. Entity resolution (``resolution.enabled``) runs in between, by the
model's verdicts or the offline rules.

Pure: no Dagster, no storage. Model calls go through ``models`` (anything with ``chat``,
``embedder`` and ``run``: the pipeline passes a step's model session, which accounts for them),
progress and warnings through ``log``; the step turns :class:`CorpusGraph` into its outputs.
"""

from __future__ import annotations

import logging
from collections.abc import Coroutine, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import polars as pl

from graphrag_assets.core import schemas
from graphrag_assets.core.errors import UserError
from graphrag_assets.core.progress import Counter, warn
from graphrag_assets.core.settings import Settings
from graphrag_assets.index.entity_resolution import (
    Resolution,
    merged_profiles,
    noun_phrase_profiles,
    resolution_options,
    resolve_with_model,
    resolve_with_rules,
)
from graphrag_assets.index.graph_merge import finalize_covariates, finalize_graph, merge_graph
from graphrag_assets.index.methods import method_steps
from graphrag_assets.index.noun_phrases import NOUN_PHRASE_TYPE
from graphrag_assets.index.resolution_clusters import apply_aliases, kept_aliases, with_aliases
from graphrag_assets.index.resolution_rules import NameEvidence
from graphrag_assets.index.summarize import SummaryOptions, distinct_descriptions, summarize_all, summary_options

if TYPE_CHECKING:
    from graphrag_assets.index.nlp_graph import RelationshipBatches
    from graphrag_assets.index.phrase_descriptions import Described, Stored  # numpy: the nlp method only

T = TypeVar("T")


class GraphModels(Protocol):
    """The models a graph build calls: a chat model, an embedder, and a way to run their coroutines."""

    chat: Any
    embedder: Any

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T: ...


@dataclass
class CorpusGraph:
    """The step's four tables, and what it is worth showing about how they were built.

    The nlp method's relationships come as batches to write one after another (millions of
    rows: see :class:`~graphrag_assets.index.nlp_graph.RelationshipBatches`).
    """

    entities: pl.DataFrame
    relationships: pl.DataFrame | RelationshipBatches
    covariates: pl.DataFrame
    aliases: pl.DataFrame
    metadata: dict[str, Any] = field(default_factory=dict)
    descriptions: Described | None = None  # the nlp method's phrase descriptions, to store for the next build


NOUN_GRAPH_COLUMNS = ("text_unit_id", "record_type", "title", "type")
"""The ``graph_extractions`` columns :func:`noun_graph` reads (the step selects documents by
``document_key`` without reading it). At 100,000 documents (3.9 M rows, most of the others null)
reading every column cost the graph step ~600 MB of its peak."""


def extraction_columns(settings: Settings) -> tuple[str, ...] | None:
    """The ``graph_extractions`` columns the method's graph reads (None: all of them)."""
    return None if method_steps(settings.resolved_method).graph == "summarized" else NOUN_GRAPH_COLUMNS


def noun_graph_needs_models(settings: Settings) -> bool:
    """The nlp method calls a model only to resolve entities by the model's verdicts."""
    return settings.resolution.enabled and resolution_options(settings).template is not None


def summarized_graph(
    settings: Settings, extractions: pl.DataFrame, models: GraphModels, log: logging.Logger | None
) -> CorpusGraph:
    """The standard method's graph: merged records, resolved, descriptions summarized."""
    merged = merge_graph(extractions)
    aliases = schemas.empty_frame(schemas.ENTITY_ALIASES)
    metadata: dict[str, Any] = {}
    if settings.resolution.enabled:
        profiles = merged_profiles(merged.entities)
        texts = (d for descriptions in profiles.get_column("descriptions").to_list() for d in descriptions)
        resolution, metadata = _resolve(settings, profiles, texts, models, log)
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
        progress = Counter("summarize descriptions", len(needs_model), log).start()
        summaries = models.run(
            _summaries_with_progress(
                models.chat, needs_model, summary_options(settings), settings.llm.concurrency * 4, progress
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
    metadata.update(
        {
            "summaries_needed": len(needs_model),
            "self_loops_dropped": stats.self_loops_dropped,
            "orphan_relationships_dropped": stats.orphan_relationships_dropped,
            "entities_with_several_types": stats.entities_with_several_types,
        }
    )
    return CorpusGraph(with_aliases(entities, aliases), relationships, covariates, aliases, metadata)


def noun_graph(
    settings: Settings,
    extractions: pl.DataFrame,
    text_units: pl.DataFrame,
    models: GraphModels | None,
    log: logging.Logger | None,
    stored_descriptions: Stored | None = None,
) -> CorpusGraph:
    """The fast and nlp methods' graph: noun phrases that occur together, pruned (``models``: see
    :func:`noun_graph_needs_models`). ``stored_descriptions`` are the previous build's (see
    :mod:`.phrase_descriptions`): phrases whose units did not change keep theirs."""
    from graphrag_assets.index.nlp_graph import code_noun_graph, kept_part, materialize_batches, prune_codes
    from graphrag_assets.index.phrase_descriptions import phrase_descriptions

    ordered_units = text_units.sort("document_key", "chunk_index").select("id", "text")
    # three steps (build, prune, relationships) and one per text unit (the entity descriptions)
    progress = Counter("noun-phrase graph", 3 + ordered_units.height, log).start()
    aliases = schemas.empty_frame(schemas.ENTITY_ALIASES)
    metadata: dict[str, Any] = {}
    if settings.resolution.enabled:
        profiles = noun_phrase_profiles(extractions, NOUN_PHRASE_TYPE)
        resolution, metadata = _resolve(settings, profiles, ordered_units.get_column("text").to_list(), models, log)
        aliases = resolution.aliases
        extractions = apply_aliases(extractions, aliases)
    graph = code_noun_graph(extractions, normalize_edge_weights=settings.nlp.normalize_edge_weights)
    progress.step()
    try:
        kept = prune_codes(graph, settings.nlp.prune)
    except UserError as exc:
        # A small corpus can lose every node to the frequency rules; an unpruned graph is more
        # useful to a newcomer than a failed run.
        warn(f"{exc} Using the unpruned noun-phrase graph instead.", log)
        kept = None
    progress.step()
    before = (graph.node_count, graph.edge_count)
    if kept is not None:
        graph, kept = kept_part(graph, kept)  # the unpruned arrays are freed here
    described = phrase_descriptions(graph.mentions, ordered_units, stored_descriptions, progress.step)
    entities, relationships = materialize_batches(graph, kept, described.descriptions)
    del graph  # the batches hold what they need of it
    progress.step()
    metadata.update(
        {
            "nodes_before_pruning": before[0],
            "edges_before_pruning": before[1],
            "descriptions_kept": described.kept,
        }
    )
    kept_alias_rows = kept_aliases(aliases, entities)
    return CorpusGraph(
        with_aliases(entities, kept_alias_rows),
        relationships,
        schemas.empty_frame(schemas.COVARIATES),
        kept_alias_rows,
        metadata,
        described,
    )


def _resolve(
    settings: Settings,
    profiles: pl.DataFrame,
    evidence_texts: Iterable[str],
    models: GraphModels | None,
    log: logging.Logger | None,
) -> tuple[Resolution, dict[str, Any]]:
    """Entity resolution by the model's verdicts or the offline rules, as the settings say."""
    options = resolution_options(settings)
    progress = Counter("entity resolution", 1, log).start()
    if options.template is None:
        resolution = resolve_with_rules(profiles, NameEvidence.from_texts(evidence_texts), options)
    elif models is None:
        raise ValueError("entity resolution by the model needs models (see noun_graph_needs_models)")
    else:
        resolution = models.run(resolve_with_model(models.chat, models.embedder, profiles, options))
    progress.step()
    metadata = {
        "resolution/candidate_pairs": resolution.candidate_pairs,
        "resolution/groups_judged_by_model": resolution.groups,
        "resolution/unusable_answers": resolution.unusable_answers,
        "resolution/entities_before": profiles.height,
        "resolution/entities_merged": resolution.merged_entities,
    }
    return resolution, metadata


async def _summaries_with_progress(model, items, options: SummaryOptions, step: int, progress: Counter) -> dict:
    """Summaries in chunks of ``step`` items (not every coroutine of a large corpus at once); progress
    counts each summary as it is finished, so the count matches the calls done."""
    results: dict = {}
    for start in range(0, len(items), step):
        batch = items[start : start + step]
        results.update(await summarize_all(model, batch, options, on_done=progress.step))
    return results
