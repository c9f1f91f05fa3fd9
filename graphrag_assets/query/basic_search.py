"""Basic search: plain vector RAG over the text units (reference §7.4).

The ``k`` text units most similar to the question are put in a ``Sources`` table in similarity
order (Microsoft keeps table order — quirk Q9 — which hides which source matched best), whole
rows while they fit ``max_context_tokens``, and the model answers from them. Without a chat model
the answer is extractive, from the same sources.
"""

from __future__ import annotations

import polars as pl

from graphrag_assets.core.ids import short_id
from graphrag_assets.llm.types import ChatModel, EmbeddingModel, Message
from graphrag_assets.query.context_tables import fill_table
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
from graphrag_assets.core.settings import QuerySettings

PURPOSE = "query_basic"
SOURCE_COLUMNS = ("id", "text")


def rank_text_units(hits: list[tuple[str, float]], text_units: pl.DataFrame) -> pl.DataFrame:
    """The text units of the hits, in hit (similarity) order; ids missing from the table are skipped."""
    order: dict[str, int] = {}
    for unit_id, _ in hits:
        order.setdefault(unit_id, len(order))
    rows = text_units.filter(pl.col("id").is_in(list(order)))
    rows = rows.with_columns(pl.col("id").replace_strict(order, return_dtype=pl.Int64).alias("_order"))
    return rows.sort("_order").drop("_order")


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
    """Answer ``question`` from the most similar text units."""
    options = settings.basic
    calls = ModelCalls(chat_model, embedder, on_token=on_token, count=count)
    vector = await calls.embed(question, PURPOSE)
    hits = data.text_unit_text.search(vector, options.k)
    units = rank_text_units(hits, data.text_units)
    table = fill_table(
        "Sources", SOURCE_COLUMNS, [(short_id(i), t) for i, t in units.select("id", "text").iter_rows()],
        options.max_context_tokens, calls.count,
    )
    records = ContextRecords(sources=source_records(units.head(table.rows_used), data.documents))
    warnings = [] if hits else ["no text unit matched the question (is the text_unit_text index empty?)"]

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
    similarity = dict(hits)
    return QueryResult(
        answer=answer,
        method="basic",
        context_records=records,
        context_text=table.text,
        usage=calls.finish(),
        llm_used=calls.llm_available,
        warnings=warnings,
        details={
            "similarities": {short_id(r.id): round(similarity[r.id], 4) for r in records.sources},
            "sources_offered": table.rows_offered,
            "sources_used": table.rows_used,
        },
    )
