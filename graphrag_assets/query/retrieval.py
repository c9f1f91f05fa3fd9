"""Retrieval without generation: the context each method would give the model, and its records.

``QueryOptions(context_only=True)`` makes :func:`~graphrag_assets.query.engine.run_query` come
here instead of to an engine. No chat call is made; the question is embedded as usual. This is
what an application that writes its own answers, or evaluates retrieval, needs from the index
(a retrieval-only endpoint is a common request of GraphRAG server users).

- **local**, **basic**: exactly the context their engine builds (same ranking, budgets, tables).
- **global**: the reports of the community level, packed into the map batches the map step would
  send (dynamic selection needs the model to rate reports, so it is not applied, with a warning).
- **drift**: the reports the primer would read, chosen by the question's own embedding (DRIFT
  normally embeds a hypothetical answer the model writes first), with a warning saying so.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from graphrag_assets.core.ids import short_id
from graphrag_assets.query.basic_search import PURPOSE as BASIC_PURPOSE
from graphrag_assets.query.basic_search import build_basic_context
from graphrag_assets.query.context_tables import render_table
from graphrag_assets.query.drift_search import PURPOSE_HYDE
from graphrag_assets.query.global_search import build_map_batches, occurrence_weights, reports_at_level
from graphrag_assets.query.local_search import build_local_context, report_records
from graphrag_assets.query.request import SearchRequest
from graphrag_assets.query.types import ContextRecords, ModelCalls, QueryResult

GLOBAL_DYNAMIC_WARNING = (
    "dynamic community selection needs the model to rate reports; the reports of the community level are listed"
)
DRIFT_WARNING = (
    "DRIFT's primer reports are chosen here by the question itself (its hypothetical answer needs the model)"
)


def _result(
    method: str, records: ContextRecords, text: str, calls: ModelCalls, details: dict[str, Any], warnings: list[str]
) -> QueryResult:
    return QueryResult(
        answer="",
        method=method,
        context_records=records,
        context_text=text,
        usage=calls.finish(),
        llm_used=False,
        warnings=warnings,
        details={"context_only": True, **details},
    )


async def local_context(request: SearchRequest) -> QueryResult:
    calls = request.without_chat_model().model_calls()
    context = await build_local_context(request, calls, request.settings.local)
    details = {
        "mapped_entities": context.mapped_entities,
        "tables": context.table_summary(),
        "ranking": request.settings.local.ranking,
    }
    return _result("local", context.records, context.text, calls, details, context.warnings)


async def basic_context(request: SearchRequest) -> QueryResult:
    calls = request.without_chat_model().model_calls()
    vector = await calls.embed(request.question, BASIC_PURPOSE)
    context = build_basic_context(request.question, vector, request.data, request.settings.basic, calls.count)
    score = dict(context.hits)
    details = {
        "mode": context.mode,
        "scores": {short_id(r.id): round(score[r.id], 4) for r in context.records.sources},
        "sources_offered": context.table.rows_offered,
        "sources_used": context.table.rows_used,
    }
    return _result("basic", context.records, context.table.text, calls, details, context.warnings)


async def global_context(request: SearchRequest) -> QueryResult:
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
    warnings = [GLOBAL_DYNAMIC_WARNING] if dynamic else []
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
    return _result(
        "global",
        ContextRecords(reports=report_records(used)),
        "\n\n".join(b.text for b in batches),
        calls,
        details,
        warnings,
    )


async def drift_context(request: SearchRequest) -> QueryResult:
    reports = request.data.community_reports
    if request.options.community_level is not None:
        reports = reports.filter(pl.col("level") <= request.options.community_level)
    calls = request.without_chat_model().model_calls()
    k = request.settings.drift.k_followups
    vector = await calls.embed(request.question, PURPOSE_HYDE)
    by_id = {r["id"]: r for r in reports.iter_rows(named=True)}
    chosen = [by_id[i] for i, _ in request.data.community_full_content.search(vector, k * 2) if i in by_id][:k]
    table = render_table(
        "Reports", ("id", "title", "content"), [(r["human_readable_id"], r["title"], r["full_content"]) for r in chosen]
    )
    records = ContextRecords(reports=report_records(pl.DataFrame(chosen, schema=reports.schema)))
    details = {
        "community_level": request.options.community_level,
        "primer_reports": [r.citation for r in records.reports],
    }
    return _result("drift", records, table if chosen else "", calls, details, [DRIFT_WARNING])


RETRIEVERS = {"local": local_context, "global": global_context, "drift": drift_context, "basic": basic_context}
