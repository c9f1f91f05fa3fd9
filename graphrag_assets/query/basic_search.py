"""Basic search: plain RAG over the text units (reference §7.4).

The ``k`` text units that best match the question are put in a ``Sources`` table in match order
(Microsoft keeps table order — quirk Q9 — which hides which source matched best), whole rows
while they fit ``max_context_tokens``, and the model answers from them. Without a chat model the
answer is extractive, from the same sources. ``mode: vector`` matches by embedding similarity
alone, as Microsoft does; ``mode: hybrid`` (the default) fuses those hits with full-text (BM25)
hits (:mod:`graphrag_assets.query.hybrid_search`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import polars as pl

from graphrag_assets.core.ids import short_id
from graphrag_assets.core.settings import BasicSearchSettings
from graphrag_assets.llm.types import Message
from graphrag_assets.query.context_records import SOURCE_COLUMNS, source_records, source_rows
from graphrag_assets.query.context_tables import BudgetedTable, fill_table
from graphrag_assets.query.extractive import no_llm_answer
from graphrag_assets.query.hybrid_search import TextUnitHits, text_unit_hits
from graphrag_assets.query.model_calls import ModelCalls, TokenCounter
from graphrag_assets.query.query_data import QueryData
from graphrag_assets.query.query_prompts import query_prompt
from graphrag_assets.query.request import SearchRequest
from graphrag_assets.query.reranking import reranked
from graphrag_assets.query.results import ContextRecords, QueryResult
from graphrag_assets.query.retrieval import context_result

PURPOSE = "query_basic"


def rank_text_units(hits: list[tuple[str, float]], text_units: pl.DataFrame) -> pl.DataFrame:
    """The text units of the hits, in hit order; ids missing from the table are skipped."""
    order: dict[str, int] = {}
    for unit_id, _ in hits:
        order.setdefault(unit_id, len(order))
    rows = text_units.filter(pl.col("id").is_in(list(order)))
    rows = rows.with_columns(pl.col("id").replace_strict(order, return_dtype=pl.Int64).alias("_order"))
    return rows.sort("_order").drop("_order")


@dataclass
class BasicContext:
    """The Sources table of one basic search, its records, and the hits it was filled from."""

    table: BudgetedTable
    records: ContextRecords
    hits: list[tuple[str, float]]
    mode: Literal["hybrid", "vector"]  # how the hits were found
    warnings: list[str]


def build_basic_context(
    question: str,
    vector: Sequence[float],
    data: QueryData,
    options: BasicSearchSettings,
    count: TokenCounter,
    found: TextUnitHits | None = None,
) -> BasicContext:
    """The best ``options.k`` text units for the question (``found`` when the caller reranked
    them), as many as fit the budget."""
    found = found or text_unit_hits(data, vector, question, options.k, options.mode)
    # the hits' rows only: an index read lazily need not load 100,000 text units for ten of them
    units = rank_text_units(found.hits, data.rows_where("text_units", "id", [unit for unit, _ in found.hits]))
    table = fill_table(
        "Sources",
        SOURCE_COLUMNS,
        source_rows(units, count),
        options.max_context_tokens,
        count,
    )
    used = units.head(table.rows_used)
    records = ContextRecords(sources=source_records(used, data))
    warnings = [
        *found.warnings,
        *([] if found.hits else ["no text unit matched the question (is the text_unit_text index empty?)"]),
    ]
    return BasicContext(table, records, found.hits, found.mode, warnings)


async def answer_from_sources(
    request: SearchRequest, calls: ModelCalls, sources: str, records: ContextRecords, purpose: str
) -> str:
    """The answer from a Sources table: the model with the ``basic_search`` prompt, or extractive
    without one (streamed to ``on_token`` either way). Lazy search answers this way too."""
    if not calls.llm_available:
        answer = no_llm_answer(request.question, request.data, records, calls)
        if request.on_token is not None:
            request.on_token(answer)
        return answer
    prompt = query_prompt("basic_search", request.prompts)
    messages: list[Message] = [
        {"role": "system", "content": prompt.format(context_data=sources, response_type=request.response_type)},
        {"role": "user", "content": request.question},
    ]
    return await calls.answer(messages, purpose=purpose, prompt_version=prompt.version)


async def basic_search(request: SearchRequest) -> QueryResult:
    """Answer the question from the best-matching text units."""
    data = request.data
    calls = request.model_calls()
    vector = await calls.embed(request.question, PURPOSE)
    options = request.settings.basic
    found = await reranked(request, calls, text_unit_hits(data, vector, request.question, options.k, options.mode))
    context = build_basic_context(request.question, vector, data, options, calls.count, found)
    table, records = context.table, context.records

    answer = await answer_from_sources(request, calls, table.text, records, PURPOSE)
    score = dict(context.hits)
    return QueryResult(
        answer=answer,
        method="basic",
        context_records=records,
        context_text=table.text,
        usage=calls.finish(),
        llm_used=calls.llm_available,
        warnings=context.warnings,
        details={
            "mode": context.mode,
            "scores": {short_id(r.id): round(score[r.id], 4) for r in records.sources},
            "sources_offered": table.rows_offered,
            "sources_used": table.rows_used,
        },
    )


async def basic_context(request: SearchRequest) -> QueryResult:
    """The context a basic search would answer from, without the answer (see :mod:`.retrieval`)."""
    calls = request.without_chat_model().model_calls()
    vector = await calls.embed(request.question, PURPOSE)
    context = build_basic_context(request.question, vector, request.data, request.settings.basic, calls.count)
    score = dict(context.hits)
    details = {
        "mode": context.mode,
        "scores": {short_id(r.id): round(score[r.id], 4) for r in context.records.sources},
        "sources_offered": context.table.rows_offered,
        "sources_used": context.table.rows_used,
    }
    return context_result("basic", context.records, context.table.text, calls, details, context.warnings)
