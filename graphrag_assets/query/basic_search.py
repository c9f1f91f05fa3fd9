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

from graphrag_assets.ids import short_id
from graphrag_assets.llm.types import ChatModel, EmbeddingModel, Message
from graphrag_assets.query.context_tables import BudgetedTable, fill_table
from graphrag_assets.query.hybrid_search import text_unit_hits
from graphrag_assets.query.local_search import no_llm_answer, source_records
from graphrag_assets.query.types import (
    ContextRecords,
    ModelCalls,
    PromptOverrides,
    QueryData,
    QueryResult,
    TokenCallback,
    TokenCounter,
    query_prompt,
)
from graphrag_assets.settings import BasicSearchSettings, QuerySettings

PURPOSE = "query_basic"
SOURCE_COLUMNS = ("id", "text")


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
    question: str, vector: Sequence[float], data: QueryData, options: BasicSearchSettings, count: TokenCounter
) -> BasicContext:
    """The best ``options.k`` text units for the question, as many as fit the budget."""
    found = text_unit_hits(data, vector, question, options.k, options.mode)
    units = rank_text_units(found.hits, data.text_units)
    table = fill_table(
        "Sources", SOURCE_COLUMNS, [(short_id(i), t) for i, t in units.select("id", "text").iter_rows()],
        options.max_context_tokens, count,
    )
    records = ContextRecords(sources=source_records(units.head(table.rows_used), data.documents))
    warnings = [*found.warnings, *([] if found.hits else ["no text unit matched the question (is the text_unit_text index empty?)"])]
    return BasicContext(table, records, found.hits, found.mode, warnings)


async def basic_search(
    question: str,
    data: QueryData,
    chat_model: ChatModel | None,
    embedder: EmbeddingModel | None,
    settings: QuerySettings,
    *,
    response_type: str | None = None,
    on_token: TokenCallback | None = None,
    prompts: PromptOverrides | None = None,
    count: TokenCounter | None = None,
) -> QueryResult:
    """Answer ``question`` from the best-matching text units."""
    options = settings.basic
    calls = ModelCalls(chat_model, embedder, on_token=on_token, count=count)
    context = build_basic_context(question, await calls.embed(question, PURPOSE), data, options, calls.count)
    table, records = context.table, context.records

    if calls.llm_available:
        prompt = query_prompt("basic_search", prompts)
        messages: list[Message] = [
            {"role": "system", "content": prompt.format(context_data=table.text, response_type=response_type or settings.response_type)},
            {"role": "user", "content": question},
        ]
        answer = await calls.answer(messages, purpose=PURPOSE, prompt_version=prompt.version)
    else:
        answer = no_llm_answer(question, data, records, calls)
        if on_token is not None:
            on_token(answer)
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
