"""Retrieval without generation: the context each method would give the model, and its records.

``QueryOptions(context_only=True)`` makes :func:`~graphrag_assets.query.engine.run_query` call the
method's ``context`` function (see :mod:`.registry`) instead of its search. No chat call is made;
the question is embedded as usual. This is what an application that writes its own answers, or
evaluates retrieval, needs from the index (a retrieval-only endpoint is a common request of
GraphRAG server users).

- **local**, **basic**: exactly the context their engine builds (same ranking, budgets, tables).
- **global**: the reports of the community level, packed into the map batches the map step would
  send (dynamic selection needs the model to rate reports, so it is not applied, with a warning).
- **drift**: the reports the primer would read, chosen by the question's own embedding (DRIFT
  normally embeds a hypothetical answer the model writes first), with a warning saying so.

Each method's context function lives with the method; this module holds the result they share.
"""

from __future__ import annotations

from typing import Any

from graphrag_assets.query.model_calls import ModelCalls
from graphrag_assets.query.results import ContextRecords, QueryResult


def context_result(
    method: str, records: ContextRecords, text: str, calls: ModelCalls, details: dict[str, Any], warnings: list[str]
) -> QueryResult:
    """A context-only result: no answer, no model used, ``details["context_only"]`` set."""
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
