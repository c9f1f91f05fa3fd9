"""Global search: map-reduce over community reports (reference §7.2).

**Which reports.** With a community level L (default 2) and no dynamic selection we use the
"roll-up" Microsoft intended: every entity contributes the report of its *deepest* community at a
level ≤ L (among communities that have a report), and the reports used are the union of those. A
community that was split further keeps only its sub-communities' reports, so each part of the
graph is summarized once at the finest level available. (Microsoft's roll-up groups by community
title and so keeps every report at levels 0..L — quirk Q6; ``roll_up=False`` reproduces that.)

**Dynamic selection** (reference §7.2.5): the level-0 reports are rated 0-5 for relevance to the
question; a report rated ≥ the threshold is selected and its children (up to level L) are rated
next; a selected child removes its parent from the selection (Microsoft's keep_parent=false). If
a round selects nothing and nothing has been selected yet, every report of the next level is
rated, up to level L. An answer with no readable rating counts as 1, as in Microsoft GraphRAG.

**Map.** The reports are shuffled with ``shuffle_seed`` (after sorting, so the result does not
depend on table order), packed into tables of at most ``max_context_tokens`` tokens, each re-sorted
by occurrence weight and rank, and each sent with the question to the map prompt, concurrently.
Answers are parsed tolerantly (:mod:`graphrag_assets.query.json_answers`); an unreadable answer
contributes no points and is reported in the result's warnings.

**Reduce.** Points scoring 0 are dropped; the rest, best first, are added whole while they fit
``data_max_tokens``, and the reduce prompt writes the answer. With no point left the answer is
:data:`NO_DATA_ANSWER`, without calling the model.

**Caching.** Map and rate calls use the LLM cache: each is a pure function of the question, the
reports' text and the prompt version, they are most of a global search's cost (Microsoft users
report ~100k tokens per question), and a changed index changes their text and so their key.
Asking the same question again therefore only pays for the reduce call, which (like every final
answer) is never cached, so it can stream and can be asked for afresh.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from graphrag_assets.index.report_tokens import TOKENS_COLUMN
from graphrag_assets.llm.types import Message
from graphrag_assets.query.context_records import report_records
from graphrag_assets.query.context_tables import pack_batches, render_table, sized_row
from graphrag_assets.query.json_answers import MapPoint, parse_map_points, parse_rating
from graphrag_assets.query.model_calls import ModelCalls, TokenCounter
from graphrag_assets.query.query_prompts import query_prompt
from graphrag_assets.query.request import SearchRequest
from graphrag_assets.query.results import NO_LLM_NOTICE, ContextRecords, QueryResult
from graphrag_assets.query.retrieval import context_result

PURPOSE_MAP = "query_global_map"
PURPOSE_REDUCE = "query_global_reduce"
PURPOSE_RATE = "query_global_rate"
DYNAMIC_CONTEXT_WARNING = (
    "dynamic community selection needs the model to rate reports; the reports of the community level are listed"
)
CACHE_MAP_AND_RATE_CALLS = True
UNREADABLE_RATING = 1
NO_LLM_REPORTS = 5

NO_DATA_ANSWER = (
    "I cannot answer this question from the indexed data: none of the community reports "
    "contained information relevant to it."
)

BATCH_COLUMNS = ("id", "title", "occurrence weight", "content", "rank")
CONTENT_CELL = BATCH_COLUMNS.index("content")


# --- report selection (pure) ---------------------------------------------------------------------


def reports_at_level(
    communities: pl.DataFrame, reports: pl.DataFrame, level: int, *, roll_up: bool = True
) -> pl.DataFrame:
    """Reports used for community level ``level`` (see the module docstring), by human_readable_id."""
    capped = reports.filter(pl.col("level") <= level)
    if roll_up and not communities.is_empty():
        memberships = (
            communities.filter(pl.col("level") <= level)
            .join(capped.select("community"), on="community", how="semi")
            .select("community", "level", pl.col("entity_ids").alias("entity_id"))
            .explode("entity_id")
            .drop_nulls("entity_id")
        )
        deepest = (
            memberships.sort(["level", "community"], descending=[True, False])
            .group_by("entity_id", maintain_order=True)
            .first()
        )
        capped = capped.filter(pl.col("community").is_in(deepest["community"].unique().to_list()))
    return capped.sort("human_readable_id")


def occurrence_weights(
    communities: pl.DataFrame, entities: pl.DataFrame, community_ids: Sequence[int]
) -> dict[int, float]:
    """Distinct text units mentioning a community's entities, divided by the largest such count."""
    if not community_ids or communities.is_empty() or entities.is_empty():
        return {c: 0.0 for c in community_ids}
    counts = (
        communities.filter(pl.col("community").is_in(list(community_ids)))
        .select("community", pl.col("entity_ids").alias("id"))
        .explode("id")
        .join(entities.select("id", "text_unit_ids"), on="id", how="inner")
        .explode("text_unit_ids")
        .drop_nulls("text_unit_ids")
        .group_by("community")
        .agg(pl.col("text_unit_ids").n_unique().alias("units"))
    )
    by_community = dict(counts.iter_rows())
    top = max(by_community.values(), default=0)
    return {c: (by_community.get(c, 0) / top if top else 0.0) for c in community_ids}


@dataclass
class MapBatch:
    text: str
    report_ids: list[str]  # in the order the table lists them
    report_citations: list[str]


def build_map_batches(
    reports: pl.DataFrame, weights: dict[int, float], seed: int, max_tokens: int, count: TokenCounter
) -> tuple[list[MapBatch], list[str]]:
    """Shuffle (seeded), pack into token-bounded tables, sort each by weight and rank.

    Returns the batches and the citations of reports too large to fit a batch on their own.
    """
    rows = [
        {
            "id": r["id"],
            "cells": sized_row(
                (
                    r["human_readable_id"],
                    r["title"],
                    round(weights.get(r["community"], 0.0), 4),
                    r["full_content"],
                    r["rank"],
                ),
                CONTENT_CELL,
                r.get(TOKENS_COLUMN),
                count,
            ),
        }
        for r in reports.sort("human_readable_id").iter_rows(named=True)
    ]
    random.Random(seed).shuffle(rows)
    packed = pack_batches("Reports", BATCH_COLUMNS, [r["cells"] for r in rows], max_tokens, count)
    batches = []
    for indexes in packed.row_indexes:
        members = sorted(
            (rows[i] for i in indexes),
            key=lambda r: (-(r["cells"][2] or 0.0), -(r["cells"][4] or 0.0), r["cells"][0]),
        )
        batches.append(
            MapBatch(
                text=render_table("Reports", BATCH_COLUMNS, [m["cells"] for m in members]),
                report_ids=[m["id"] for m in members],
                report_citations=[str(m["cells"][0]) for m in members],
            )
        )
    return batches, [str(rows[i]["cells"][0]) for i in packed.too_large]


@dataclass
class ScoredPoint:
    batch: int
    position: int
    point: MapPoint


def reduce_data(points: Sequence[ScoredPoint], max_tokens: int, count: TokenCounter) -> tuple[str, int]:
    """Blocks of the non-zero points, best first, whole while they fit; and how many were kept."""
    ranked = sorted((p for p in points if p.point.score > 0), key=lambda p: (-p.point.score, p.batch, p.position))
    blocks: list[str] = []
    used = 0
    for p in ranked:
        block = f"----Analyst {p.batch + 1}----\nImportance Score: {p.point.score}\n{p.point.description}"
        size = count(block + "\n\n")
        if used + size > max_tokens:
            break
        blocks.append(block)
        used += size
    return "\n\n".join(blocks), len(blocks)


# --- dynamic selection ---------------------------------------------------------------------------


@dataclass
class DynamicSelection:
    selected: list[int]  # community numbers, sorted
    rated: list[dict[str, Any]] = field(default_factory=list)  # {community, level, rating} in rating order
    warnings: list[str] = field(default_factory=list)


def _children(communities: pl.DataFrame, reports: pl.DataFrame) -> tuple[dict[int, list[int]], dict[int, int]]:
    """Children and parent of every community (from the communities table, else the reports)."""
    source = communities if not communities.is_empty() else reports
    children: dict[int, list[int]] = {}
    parents: dict[int, int] = {}
    for community, parent, kids in source.select("community", "parent", "children").iter_rows():
        children[community] = sorted(kids or [])
        if parent is not None and parent >= 0:
            parents[community] = parent
    return children, parents


async def select_communities(request: SearchRequest, level_cap: int, calls: ModelCalls) -> DynamicSelection:
    """Rate reports top-down and keep the most specific relevant ones (see the module docstring)."""
    question, data, threshold = request.question, request.data, request.settings.global_.dynamic_threshold
    prompt = query_prompt("global_rate", request.prompts)
    reports = data.community_reports.filter(pl.col("level") <= level_cap)
    content = {c: (text or "") for c, text in reports.select("community", "full_content").iter_rows()}
    level_of = dict(reports.select("community", "level").iter_rows())
    children, parents = _children(data.communities, data.community_reports)
    selection = DynamicSelection(selected=[])
    relevant: set[int] = set()

    async def rate(community: int) -> int:
        text = prompt.format(query=question, report=content[community])
        answer = await calls.chat(
            [{"role": "user", "content": text}],
            purpose=PURPOSE_RATE,
            json_mode=True,
            use_cache=CACHE_MAP_AND_RATE_CALLS,
            prompt_version=prompt.version,
        )
        rating = parse_rating(answer)
        if rating is None:
            selection.warnings.append(
                f"the relevance rating of community {community} could not be read; counted as {UNREADABLE_RATING}"
            )
            return UNREADABLE_RATING
        return rating

    level = 0
    queue = sorted(c for c, lvl in level_of.items() if lvl == 0)
    while queue:
        ratings = await asyncio.gather(*(rate(c) for c in queue))
        next_queue: list[int] = []
        for community, rating in zip(queue, ratings, strict=True):
            selection.rated.append({"community": community, "level": level_of[community], "rating": rating})
            if rating < threshold:
                continue
            relevant.add(community)
            next_queue.extend(child for child in children.get(community, []) if child in content)
            relevant.discard(parents.get(community, -1))
        level += 1
        if not next_queue and not relevant and level <= level_cap:
            next_queue = sorted(c for c, lvl in level_of.items() if lvl == level)
        queue = sorted(set(next_queue))
    selection.selected = sorted(relevant)
    return selection


# --- search --------------------------------------------------------------------------------------


async def global_search(request: SearchRequest) -> QueryResult:
    """Answer the question from community reports by map-reduce (no-LLM: the closest report summaries)."""
    options = request.settings.global_
    level = options.community_level if request.options.community_level is None else request.options.community_level
    dynamic = (
        options.dynamic_selection if request.options.dynamic_selection is None else request.options.dynamic_selection
    )
    roll_up = request.options.roll_up
    calls = request.model_calls()
    details: dict[str, Any] = {
        "community_level": level,
        "dynamic_selection": dynamic,
        "roll_up": roll_up and not dynamic,
    }
    warnings: list[str] = []
    data = request.data

    if not calls.llm_available:
        if dynamic:
            warnings.append("dynamic community selection needs an LLM; the reports of the community level were used")
        details["roll_up"] = roll_up
        candidates = reports_at_level(data.communities, data.community_reports, level, roll_up=roll_up)
        return await _no_llm_result(request, candidates, calls, warnings, details)

    if dynamic:
        selection = await select_communities(request, level, calls)
        warnings += selection.warnings
        details["dynamic"] = {"rated": selection.rated, "selected": selection.selected}
        reports = data.community_reports.filter(pl.col("community").is_in(selection.selected)).sort("human_readable_id")
    else:
        reports = reports_at_level(data.communities, data.community_reports, level, roll_up=roll_up)

    weights = occurrence_weights(data.communities, data.entities, reports["community"].to_list())
    batches, too_large = build_map_batches(
        reports, weights, options.shuffle_seed, options.max_context_tokens, calls.count
    )
    if too_large:
        warnings.append(
            f"report(s) {', '.join(too_large)} do not fit global.max_context_tokens on their own and were left out"
        )
    points, details["batches"] = await map_batches(request, batches, calls, warnings)
    answer, details["points_kept"], details["reduce_data"] = await reduce_points(request, points, calls)

    by_id = {r["id"]: r for r in reports.iter_rows(named=True)}
    used = pl.DataFrame([by_id[i] for b in batches for i in b.report_ids], schema=reports.schema)
    return QueryResult(
        answer=answer,
        method="global",
        context_records=ContextRecords(reports=report_records(used)),
        context_text="\n\n".join(b.text for b in batches),
        usage=calls.finish(),
        llm_used=True,
        warnings=warnings,
        details=details,
    )


async def map_batches(
    request: SearchRequest, batches: Sequence[MapBatch], calls: ModelCalls, warnings: list[str]
) -> tuple[list[ScoredPoint], list[dict[str, Any]]]:
    """The map step: every batch with the question to the map prompt, concurrently; the points found."""
    map_prompt = query_prompt("global_map", request.prompts)
    max_length = request.settings.global_.map_max_length
    answers = await asyncio.gather(
        *(
            calls.chat(
                [
                    {"role": "system", "content": map_prompt.format(context_data=b.text, max_length=max_length)},
                    {"role": "user", "content": request.question},
                ],
                purpose=PURPOSE_MAP,
                json_mode=True,
                use_cache=CACHE_MAP_AND_RATE_CALLS,
                prompt_version=map_prompt.version,
            )
            for b in batches
        )
    )
    points: list[ScoredPoint] = []
    batch_details = []
    for index, (batch, answer) in enumerate(zip(batches, answers, strict=True)):
        parsed = parse_map_points(answer)
        if parsed is None:
            warnings.append(
                f"the map answer for batch {index + 1} could not be read as JSON points; it counts as no points"
            )
        points += [ScoredPoint(index, i, p) for i, p in enumerate(parsed or [])]
        batch_details.append(
            {
                "batch": index + 1,
                "reports": batch.report_citations,
                "readable": parsed is not None,
                "points": len(parsed or []),
            }
        )
    return points, batch_details


async def reduce_points(
    request: SearchRequest, points: Sequence[ScoredPoint], calls: ModelCalls
) -> tuple[str, int, str]:
    """The reduce step: the answer written from the best points, how many were kept, and their text."""
    options = request.settings.global_
    report_data, kept = reduce_data(points, options.data_max_tokens, calls.count)
    if not kept:
        if request.on_token is not None:
            request.on_token(NO_DATA_ANSWER)
        return NO_DATA_ANSWER, kept, report_data
    reduce_prompt = query_prompt("global_reduce", request.prompts)
    messages: list[Message] = [
        {
            "role": "system",
            "content": reduce_prompt.format(
                report_data=report_data, response_type=request.response_type, max_length=options.reduce_max_length
            ),
        },
        {"role": "user", "content": request.question},
    ]
    answer = await calls.answer(messages, purpose=PURPOSE_REDUCE, prompt_version=reduce_prompt.version)
    return answer, kept, report_data


async def _no_llm_result(
    request: SearchRequest, candidates: pl.DataFrame, calls: ModelCalls, warnings: list[str], details: dict[str, Any]
) -> QueryResult:
    """The reports closest to the question by embedding similarity, then rank; titles and summaries."""
    data = request.data
    similarity: dict[str, float] = {}
    if calls.embedder is not None and not candidates.is_empty():
        vector = await calls.embed(request.question, "query_global")
        limit = max(len(candidates), data.community_reports.height)
        similarity = dict(data.community_full_content.search(vector, limit))
    else:
        warnings.append("no embedding model: reports are listed by rank only")
    ranked = sorted(
        candidates.iter_rows(named=True),
        key=lambda r: (-similarity.get(r["id"], float("-inf")), -(r["rank"] or 0.0), r["human_readable_id"]),
    )[:NO_LLM_REPORTS]
    top = pl.DataFrame(ranked, schema=candidates.schema)
    if ranked:
        lines = [
            f"{i}. {r['title']}: {(r['summary'] or '').strip()} [Data: Reports ({r['human_readable_id']})]"
            for i, r in enumerate(ranked, start=1)
        ]
        answer = f"{NO_LLM_NOTICE} The community summaries closest to the question:\n\n" + "\n".join(lines)
    else:
        answer = f"{NO_LLM_NOTICE} The index holds no community reports at level {details['community_level']} or below."
    context = (
        render_table(
            "Reports",
            ("id", "title", "summary", "similarity", "rank"),
            [
                (
                    r["human_readable_id"],
                    r["title"],
                    r["summary"],
                    round(similarity[r["id"]], 4) if r["id"] in similarity else None,
                    r["rank"],
                )
                for r in ranked
            ],
        )
        if ranked
        else ""
    )
    if calls.on_token is not None:
        calls.on_token(answer)
    return QueryResult(
        answer=answer,
        method="global",
        context_records=ContextRecords(reports=report_records(top)),
        context_text=context,
        usage=calls.finish(),
        llm_used=False,
        warnings=warnings,
        details=details,
    )


async def global_context(request: SearchRequest) -> QueryResult:
    """The map batches of the community level's reports, without the map and reduce calls (see :mod:`.retrieval`)."""
    options, data = request.settings.global_, request.data
    level = options.community_level if request.options.community_level is None else request.options.community_level
    dynamic = (
        options.dynamic_selection if request.options.dynamic_selection is None else request.options.dynamic_selection
    )
    calls = request.without_chat_model().model_calls()
    reports = reports_at_level(data.communities, data.community_reports, level, roll_up=request.options.roll_up)
    weights = occurrence_weights(data.communities, data.entities, reports["community"].to_list())
    batches, too_large = build_map_batches(
        reports, weights, options.shuffle_seed, options.max_context_tokens, calls.count
    )
    warnings = [DYNAMIC_CONTEXT_WARNING] if dynamic else []
    if too_large:
        warnings.append(
            f"report(s) {', '.join(too_large)} do not fit global.max_context_tokens on their own and were left out"
        )
    by_id = {r["id"]: r for r in reports.iter_rows(named=True)}
    used = pl.DataFrame([by_id[i] for b in batches for i in b.report_ids], schema=reports.schema)
    details = {
        "community_level": level,
        "batches": [{"batch": i + 1, "reports": b.report_citations} for i, b in enumerate(batches)],
    }
    return context_result(
        "global",
        ContextRecords(reports=report_records(used)),
        "\n\n".join(b.text for b in batches),
        calls,
        details,
        warnings,
    )
