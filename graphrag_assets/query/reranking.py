"""Search hits reordered by the configured cross-encoder (``llm.reranker``), when there is one:
basic search's hits, and local (and DRIFT's local) search's candidate text units.

The best ``candidates`` hits are sent with their texts; the reranker's ``top_n`` come back in its
order, with its scores. A reranker that fails leaves the hits as they were and adds one warning,
so a reranker that is down costs answers nothing but the reordering.
"""

from __future__ import annotations

import polars as pl

from graphrag_assets.llm.reranker import RerankError
from graphrag_assets.query.hybrid_search import TextUnitHits
from graphrag_assets.query.model_calls import ModelCalls
from graphrag_assets.query.request import SearchRequest

PURPOSE = "rerank"


async def reranked(request: SearchRequest, calls: ModelCalls, found: TextUnitHits) -> TextUnitHits:
    """``found`` reordered by the request's reranker (unchanged without one, or when it fails)."""
    reranker = request.reranker
    if reranker is None or not found.hits:
        return found
    candidates = [unit_id for unit_id, _ in found.hits[: reranker.settings.candidates]]
    rows = request.data.text_units.filter(pl.col("id").is_in(candidates)).select("id", "text")
    texts = dict(rows.iter_rows())
    ids = [unit_id for unit_id in candidates if unit_id in texts]
    try:
        ranked = await reranker.rerank(request.question, [texts[unit_id] for unit_id in ids])
    except RerankError as exc:
        return TextUnitHits(found.hits, found.mode, [*found.warnings, f"{exc}; the hits were not reranked."])
    calls.usage.calls_by_purpose[PURPOSE] = calls.usage.calls_by_purpose.get(PURPOSE, 0) + 1
    return TextUnitHits([(ids[index], score) for index, score in ranked], found.mode, found.warnings)


async def reranked_units(
    request: SearchRequest, calls: ModelCalls, units: pl.DataFrame
) -> tuple[pl.DataFrame, list[str]]:
    """Local search's candidate text units (best first) in the reranker's order, its ``top_n``
    kept, and the warning when it failed (the units then stay as they were)."""
    if request.reranker is None or units.is_empty():
        return units, []
    before = TextUnitHits([(unit_id, 0.0) for unit_id in units["id"].to_list()], "vector")
    after = await reranked(request, calls, before)
    if after.warnings:  # the reranker failed (the candidates came with no warning of their own)
        return units, after.warnings
    order = {unit_id: rank for rank, (unit_id, _) in enumerate(after.hits)}
    kept = units.filter(pl.col("id").is_in(list(order)))
    return kept.sort(pl.col("id").replace_strict(order, return_dtype=pl.Int64)), []
