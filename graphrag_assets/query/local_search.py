"""Local search: answer from the neighbourhood of the entities a question is about.

Steps (reference §7.1, with quirk Q7 fixed):

With ``query.local.ranking: graph`` (the default) step 2 ranks the same candidates by a random walk
from the question's entities and best-matching text units instead
(:mod:`graphrag_assets.query.graph_ranking`); ``msgraphrag`` keeps Microsoft's order described here.

1. The question, followed by the previous user questions of the conversation (most recent first,
   at most ``conversation_history_max_turns``), is embedded and matched against the entity
   descriptions. We ask the index for 2 × ``top_k_entities`` hits only to skip ids missing from
   the entity table, and keep exactly ``top_k_entities`` (Microsoft keeps all 2 × k).
2. Candidates are ranked:

   - **Reports** of the communities the mapped entities belong to (all levels up to the requested
     community level, each community once): by how many mapped entities it holds, then report rank,
     then community number. A report whose full text does not fit what is left of the report
     budget is given by its summary instead: with Microsoft's 15% of 12000 tokens the best-ranked
     report alone often does not fit (on Microsoft's own Christmas Carol index not one of 13
     candidate reports made it into the context, cf. issue #1391).
   - **Relationships**: those with both ends among the mapped entities, by combined degree; then
     those with one end mapped, by how many mapped entities their outside end links to, then
     combined degree; the second group is capped at ``top_k_relationships`` × mapped entities
     (as Microsoft does, the cap applies to it only). Ties go to the lower human_readable_id, then id.
   - **Claims** about a mapped entity, in entity order.
   - **Sources** (text units): per mapped entity in order, its text units (first mention wins),
     those linked to more of that entity's relationships first.

3. The budget ``max_context_tokens`` (less the conversation history section) is split: text units
   ``text_unit_prop``, reports ``community_prop``, the rest for entities, then relationships, then
   claims, each filling what the previous left. Each table keeps whole rows and stops at the first
   row that does not fit (:mod:`graphrag_assets.query.context_tables`).

Relationships, claims and sources are chosen for all mapped entities, even those the entity
table had no room for (as Microsoft does): DRIFT's follow-ups give the entity section no budget
at all (90% sources, 10% reports) and still need the sources of the mapped entities.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import polars as pl

from graphrag_assets.core.settings import LocalSearchSettings
from graphrag_assets.llm.types import Message
from graphrag_assets.query.context_records import (
    REPORT_COLUMNS,
    SOURCE_COLUMNS,
    claim_records,
    entity_records,
    relationship_records,
    report_records,
    report_rows,
    source_records,
    source_rows,
)
from graphrag_assets.query.context_tables import BudgetedTable, fill_table, format_row, join_sections, section_header
from graphrag_assets.query.extractive import no_llm_answer
from graphrag_assets.query.graph_ranking import GraphQuery, RankedCandidates, rank_by_graph
from graphrag_assets.query.model_calls import ModelCalls, TokenCounter
from graphrag_assets.query.query_data import QueryData
from graphrag_assets.query.query_prompts import query_prompt
from graphrag_assets.query.request import SearchRequest
from graphrag_assets.query.reranking import reranked_units
from graphrag_assets.query.results import ContextRecords, QueryResult
from graphrag_assets.query.retrieval import context_result

PURPOSE = "query_local"
ENTITY_OVERSAMPLING = 2
HISTORY_SHARE = 0.2  # at most this share of the budget goes to the conversation history section

ENTITY_COLUMNS = ("id", "entity", "description", "number of relationships")
RELATIONSHIP_COLUMNS = ("id", "source", "target", "description", "weight")
CLAIM_COLUMNS = ("id", "entity", "object", "type", "status", "start date", "end date", "description")


@dataclass
class LocalContext:
    """The context of one local search and what went into it."""

    text: str
    records: ContextRecords
    mapped_entities: list[str]  # titles, in mapping order
    tables: dict[str, BudgetedTable] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def table_summary(self) -> dict[str, dict[str, int]]:
        return {
            name: {
                "offered": t.rows_offered,
                "used": t.rows_used,
                "shortened": len(t.shortened),
                "tokens": t.tokens,
                **({} if t.counted else {"tokens_at_most": True}),
            }
            for name, t in self.tables.items()
        }


# --- ranking (pure) ------------------------------------------------------------------------------


def user_turns(history: Sequence[Mapping[str, str]] | None, max_turns: int) -> list[str]:
    """The last ``max_turns`` user messages of a conversation, oldest first."""
    if not history or max_turns <= 0:
        return []
    turns = [str(m.get("content", "")).strip() for m in history if m.get("role") == "user"]
    return [t for t in turns if t][-max_turns:]


def embedding_text(question: str, previous_questions: Sequence[str]) -> str:
    """The question followed by the previous user questions, most recent first."""
    return "\n".join([question, *reversed(previous_questions)])


def map_entities(hits: Sequence[tuple[str, float]], entities: pl.DataFrame, k: int) -> pl.DataFrame:
    """The first ``k`` hits found in the entity table, in hit order (unknown ids are skipped)."""
    order = {}
    for entity_id, _ in hits:
        order.setdefault(entity_id, len(order))
    found = entities.filter(pl.col("id").is_in(list(order)))
    found = found.with_columns(pl.col("id").replace_strict(order, return_dtype=pl.Int64).alias("_order"))
    return found.sort("_order").head(k).drop("_order")


def rank_reports(
    entity_ids: Sequence[str],
    communities: pl.DataFrame,
    reports: pl.DataFrame,
    community_level: int | None,
) -> pl.DataFrame:
    """Reports of the entities' communities, most matched entities first, then by rank."""
    if not entity_ids or communities.is_empty() or reports.is_empty():
        return reports.head(0)
    members = communities.select("community", "level", "entity_ids")
    if community_level is not None:
        members = members.filter(pl.col("level") <= community_level)
    counts = (
        members.explode("entity_ids")
        .filter(pl.col("entity_ids").is_in(list(entity_ids)))
        .group_by("community")
        .agg(pl.col("entity_ids").n_unique().alias("_matches"))
    )
    ranked = reports.join(counts, on="community", how="inner")
    return ranked.sort(
        ["_matches", "rank", "community", "id"], descending=[True, True, False, False], nulls_last=True
    ).drop("_matches")


def rank_relationships(titles: Sequence[str], relationships: pl.DataFrame, top_k: int) -> pl.DataFrame:
    """In-network relationships, then capped out-of-network ones (see the module docstring)."""
    if not titles:
        return relationships.head(0)
    selected = list(titles)
    src_in, dst_in = pl.col("source").is_in(selected), pl.col("target").is_in(selected)
    touching = relationships.filter(src_in | dst_in)
    inside = touching.filter(src_in & dst_in).sort(
        ["combined_degree", "human_readable_id", "id"], descending=[True, False, False], nulls_last=True
    )
    outside = touching.filter(src_in ^ dst_in).with_columns(
        pl.when(src_in).then(pl.col("target")).otherwise(pl.col("source")).alias("_outside"),
        pl.when(src_in).then(pl.col("source")).otherwise(pl.col("target")).alias("_inside"),
    )
    outside = outside.with_columns(pl.col("_inside").n_unique().over("_outside").alias("_links"))
    outside = outside.sort(
        ["_links", "combined_degree", "human_readable_id", "id"], descending=[True, True, False, False], nulls_last=True
    ).drop("_outside", "_inside", "_links")
    return pl.concat([inside, outside.head(top_k * len(selected))], how="vertical")


def rank_claims(titles: Sequence[str], covariates: pl.DataFrame) -> pl.DataFrame:
    """Claims whose subject is a selected entity, in entity order then by human_readable_id."""
    if not titles or covariates.is_empty():
        return covariates.head(0)
    order = {title: i for i, title in enumerate(titles)}
    claims = covariates.filter(pl.col("subject_id").is_in(list(order)))
    claims = claims.with_columns(pl.col("subject_id").replace_strict(order, return_dtype=pl.Int64).alias("_order"))
    return claims.sort(["_order", "human_readable_id", "id"], nulls_last=True).drop("_order")


def rank_text_units(entities: pl.DataFrame, relationships: pl.DataFrame, text_units: pl.DataFrame) -> pl.DataFrame:
    """Text units of the entities: entity order, then relationship links of that entity, then position."""
    known = set(text_units["id"].to_list()) if not text_units.is_empty() else set()
    titles = entities["title"].to_list()
    links_by_title: dict[str, dict[str, int]] = {title: {} for title in titles}
    touching = relationships.filter(pl.col("source").is_in(titles) | pl.col("target").is_in(titles))
    for source, target, units in touching.select("source", "target", "text_unit_ids").iter_rows():
        for title in {source, target} & links_by_title.keys():
            for unit in set(units or ()):
                links_by_title[title][unit] = links_by_title[title].get(unit, 0) + 1
    ranked: list[tuple[int, int, int, str]] = []
    seen: set[str] = set()
    for entity_order, (title, units) in enumerate(entities.select("title", "text_unit_ids").iter_rows()):
        for position, unit in enumerate(units or ()):
            if unit in seen or unit not in known:
                continue
            seen.add(unit)
            ranked.append((entity_order, -links_by_title[title].get(unit, 0), position, unit))
    ranked.sort()
    order = {unit: i for i, (*_, unit) in enumerate(ranked)}
    rows = text_units.filter(pl.col("id").is_in(list(order)))
    rows = rows.with_columns(pl.col("id").replace_strict(order, return_dtype=pl.Int64).alias("_order"))
    return rows.sort("_order").drop("_order")


# --- context -------------------------------------------------------------------------------------


def history_section(previous_questions: Sequence[str], budget: int, count: TokenCounter) -> tuple[str, int]:
    """The conversation history table: the most recent questions that fit, shown oldest first."""
    if not previous_questions:
        return "", 0
    head = f"{section_header('Conversation History')}\n{format_row(('turn', 'content'))}"
    used = count(head + "\n")
    kept: list[str] = []
    for question in reversed(previous_questions):
        line = format_row(("user", question))
        size = count(line + "\n")
        if used + size > budget:
            break
        kept.insert(0, line)
        used += size
    if not kept:
        return "", 0
    return "\n".join([head, *kept]), used


def rank_candidates(
    text: str, vector: Sequence[float], data: QueryData, settings: LocalSearchSettings, community_level: int | None
) -> RankedCandidates:
    """The candidates of each context table, best first, by ``settings.ranking``."""
    k = settings.top_k_entities
    hits = data.entity_description.search(vector, k * ENTITY_OVERSAMPLING)
    if settings.ranking == "graph":
        return rank_by_graph(GraphQuery(text, vector, hits), data, settings, community_level)
    mapped = map_entities(hits, data.entities, k)
    touching = data.relationships_touching(mapped["title"].to_list())  # all the two rankings below read
    return RankedCandidates(
        entities=mapped,
        reports=rank_reports(mapped["id"].to_list(), data.communities, data.community_reports, community_level),
        relationships=rank_relationships(mapped["title"].to_list(), touching, settings.top_k_relationships),
        text_units=rank_text_units(mapped, touching, data.text_units),
    )


async def build_local_context(
    request: SearchRequest, calls: ModelCalls, settings: LocalSearchSettings, purpose: str = PURPOSE
) -> LocalContext:
    """Map the question to entities and fill the context budget (see the module docstring).

    ``settings`` is passed apart from the request because DRIFT's follow-ups use other budget
    shares than a local search.
    """
    question, data, community_level = request.question, request.data, request.options.community_level
    count = calls.count
    previous = user_turns(request.options.conversation_history, settings.conversation_history_max_turns)
    history_text, history_tokens = history_section(previous, int(settings.max_context_tokens * HISTORY_SHARE), count)

    text = embedding_text(question, previous)
    ranked = rank_candidates(text, await calls.embed(text, purpose), data, settings, community_level)
    mapped, reports, relationships = ranked.entities, ranked.reports, ranked.relationships
    units, warnings = await reranked_units(request, calls, ranked.text_units)
    if mapped.is_empty():
        warnings.append("no entity matched the question (is the entity_description index empty?)")

    available = settings.max_context_tokens - history_tokens
    community_budget = math.floor(available * settings.community_prop)
    text_budget = math.floor(available * settings.text_unit_prop)
    local_budget = available - community_budget - text_budget

    report_table = fill_table(
        "Reports",
        REPORT_COLUMNS,
        report_rows(reports, count),
        community_budget,
        count,
        shorter=reports.select("human_readable_id", "title", "summary").rows(),
    )
    entity_table = fill_table(
        "Entities",
        ENTITY_COLUMNS,
        mapped.select("human_readable_id", "title", "description", "degree").rows(),
        local_budget,
        count,
    )
    titles = mapped["title"].to_list()
    relationship_table = fill_table(
        "Relationships",
        RELATIONSHIP_COLUMNS,
        relationships.select("human_readable_id", "source", "target", "description", "weight").rows(),
        local_budget,
        count,
        spent=[entity_table],
    )
    claims = rank_claims(titles, data.covariates)
    claim_table = fill_table(
        "Claims",
        CLAIM_COLUMNS,
        claims.select(
            "human_readable_id", "subject_id", "object_id", "type", "status", "start_date", "end_date", "description"
        ).rows(),
        local_budget,
        count,
        spent=[entity_table, relationship_table],
    )
    source_table = fill_table(
        "Sources",
        SOURCE_COLUMNS,
        source_rows(units, count),
        text_budget,
        count,
    )

    records = ContextRecords(
        reports=report_records(reports.head(report_table.rows_used)),
        entities=entity_records(mapped.head(entity_table.rows_used)),
        relationships=relationship_records(relationships.head(relationship_table.rows_used)),
        claims=claim_records(claims.head(claim_table.rows_used)),
        sources=source_records(units.head(source_table.rows_used), data),
    )
    tables = {t.name: t for t in (report_table, entity_table, relationship_table, claim_table, source_table)}
    text = join_sections(
        [
            history_text,
            report_table.text,
            entity_table.text,
            relationship_table.text,
            claim_table.text,
            source_table.text,
        ]
    )
    return LocalContext(text, records, mapped["title"].to_list(), tables, warnings)


# --- search --------------------------------------------------------------------------------------


async def local_search(request: SearchRequest) -> QueryResult:
    """Answer the question from the local context of its entities (no-LLM: an extractive answer)."""
    calls = request.model_calls()
    context = await build_local_context(request, calls, request.settings.local)
    if calls.llm_available:
        prompt = query_prompt("local_search", request.prompts)
        messages: list[Message] = [
            {
                "role": "system",
                "content": prompt.format(context_data=context.text, response_type=request.response_type),
            },
            {"role": "user", "content": request.question},
        ]
        answer = await calls.answer(messages, purpose=PURPOSE, prompt_version=prompt.version)
    else:
        answer = no_llm_answer(request.question, request.data, context.records, calls)
        if request.on_token is not None:
            request.on_token(answer)
    return QueryResult(
        answer=answer,
        method="local",
        context_records=context.records,
        context_text=context.text,
        usage=calls.finish(),
        llm_used=calls.llm_available,
        warnings=context.warnings,
        details={
            "mapped_entities": context.mapped_entities,
            "tables": context.table_summary(),
            "ranking": request.settings.local.ranking,
        },
    )


async def local_context(request: SearchRequest) -> QueryResult:
    """The context a local search would answer from, without the answer (see :mod:`.retrieval`)."""
    calls = request.without_chat_model().model_calls()
    context = await build_local_context(request, calls, request.settings.local)
    details = {
        "mapped_entities": context.mapped_entities,
        "tables": context.table_summary(),
        "ranking": request.settings.local.ranking,
    }
    return context_result("local", context.records, context.text, calls, details, context.warnings)
