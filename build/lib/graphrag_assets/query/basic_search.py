"""Basic search: plain vector RAG over the text units (reference §7.4).

The ``k`` text units most similar to the question are put in a ``Sources`` table in similarity
order (Microsoft keeps table order — quirk Q9 — which hides which source matched best), whole
rows while they fit ``max_context_tokens``, and the model answers from them. Without a chat model
the answer is extractive, from the same sources.
"""

from __future__ import annotations

import polars as pl

from graphrag_assets.core.ids import short_id
from graphrag_assets.llm.types import Message
from graphrag_assets.query.context_tables import fill_table
from graphrag_assets.query.local_search import no_llm_answer, source_records
from graphrag_assets.query.request import SearchRequest
from graphrag_assets.query.types import ContextRecords, QueryResult, query_prompt

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


async def basic_search(request: SearchRequest) -> QueryResult:
    """Answer the question from the most similar text units."""
    options, data = request.settings.basic, request.data
    calls = request.model_calls()
    vector = await calls.embed(request.question, PURPOSE)
    hits = data.text_unit_text.search(vector, options.k)
    units = rank_text_units(hits, data.text_units)
    table = fill_table(
        "Sources", SOURCE_COLUMNS, [(short_id(i), t) for i, t in units.select("id", "text").iter_rows()],
        options.max_context_tokens, calls.count,
    )
    records = ContextRecords(sources=source_records(units.head(table.rows_used), data.documents))
    warnings = [] if hits else ["no text unit matched the question (is the text_unit_text index empty?)"]

    if calls.llm_available:
        prompt = query_prompt("basic_search", request.prompts)
        messages: list[Message] = [
            {"role": "system", "content": prompt.format(context_data=table.text, response_type=request.response_type)},
            {"role": "user", "content": request.question},
        ]
        answer = await calls.answer(messages, purpose=PURPOSE, prompt_version=prompt.version)
    else:
        answer = no_llm_answer(request.question, data, records, calls)
        if request.on_token is not None:
            request.on_token(answer)
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
