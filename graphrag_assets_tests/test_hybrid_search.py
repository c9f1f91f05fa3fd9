"""Hybrid retrieval: reciprocal rank fusion, the fallbacks, and basic search's hybrid mode."""

from __future__ import annotations

import asyncio

import pytest

from graphrag_assets.core.ids import short_id
from graphrag_assets.core.settings import QuerySettings
from graphrag_assets.query.array_index import ArrayVectorIndex
from graphrag_assets.query.basic_search import basic_search
from graphrag_assets.query.hybrid_search import NO_FULL_TEXT_INDEX, reciprocal_rank_fusion, text_unit_hits
from graphrag_assets_tests.test_query_local import TU, ScriptedEmbedder, make_index, request


class WordIndex:
    """A stand-in for storage's full-text index: fixed hits for each query text."""

    def __init__(self, hits: dict[str, list[tuple[str, float]]]):
        self.hits = hits
        self.queries: list[tuple[str, int]] = []

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        self.queries.append((query, k))
        return self.hits.get(query, [])[:k]


def test_fusion_by_hand():
    vector = [("a", 0.9), ("b", 0.8), ("c", 0.7)]
    lexical = [("c", 12.0), ("d", 3.0)]
    fused = reciprocal_rank_fusion([vector, lexical], k=10)
    # c: 1/63 + 1/61; a: 1/61; b and d: 1/62 (tie: b appeared first)
    assert [i for i, _ in fused] == ["c", "a", "b", "d"]
    assert [s for _, s in fused] == pytest.approx([1 / 63 + 1 / 61, 1 / 61, 1 / 62, 1 / 62])
    assert [i for i, _ in reciprocal_rank_fusion([vector, lexical], k=2)] == ["c", "a"]


def test_fusion_matches_lancedb_rrf_reranker():
    import pyarrow as pa
    from lancedb.rerankers import RRFReranker

    vector = [("u3", 0.9), ("u1", 0.8), ("u7", 0.7), ("u2", 0.1)]
    lexical = [("u2", 9.0), ("u5", 7.0), ("u3", 4.0)]
    rows = {u: n for n, u in enumerate(["u1", "u2", "u3", "u5", "u7"])}

    def table(hits, score):
        return pa.table({"id": [i for i, _ in hits], "_rowid": [rows[i] for i, _ in hits], score: [s for _, s in hits]})

    theirs = RRFReranker().rerank_hybrid("q", table(vector, "_distance"), table(lexical, "_score"))
    ours = reciprocal_rank_fusion([vector, lexical], k=10)
    assert [i for i, _ in ours] == theirs.column("id").to_pylist()
    assert [s for _, s in ours] == pytest.approx(theirs.column("_relevance_score").to_pylist(), rel=1e-6)


def test_vector_mode_does_not_ask_the_full_text_index():
    data = make_index()
    data.text_unit_lexical = WordIndex({"q": [(TU[7], 5.0)]})
    found = text_unit_hits(data, [1.0, 0.0, 0.0, 0.0], "q", 3, "vector")
    assert found.mode == "vector" and [i for i, _ in found.hits] == [TU[0], TU[1], TU[2]]
    assert data.text_unit_lexical.queries == []


def test_hybrid_without_a_full_text_index_falls_back_to_vectors_and_says_so():
    data = make_index()
    found = text_unit_hits(data, [1.0, 0.0, 0.0, 0.0], "q", 3, "hybrid")
    assert found.mode == "vector" and [i for i, _ in found.hits] == [TU[0], TU[1], TU[2]]
    assert found.warnings == [NO_FULL_TEXT_INDEX]


def test_basic_hybrid_brings_in_the_full_text_hit():
    data = make_index()  # vectors rank TU[0], TU[1], TU[2], ... for the question
    data.text_unit_lexical = WordIndex({"Where is t7w3?": [(TU[7], 8.0), (TU[1], 2.0)]})
    settings = QuerySettings.model_validate({"basic": {"k": 3}})
    result = asyncio.run(basic_search(request("Where is t7w3?", data, None, ScriptedEmbedder(), settings)))
    # TU[1]: 1/62 + 1/62; TU[0]: 1/61; TU[7]: 1/61 (after TU[0], which appeared first); TU[2] is cut
    assert result.context_records.citations("sources") == [short_id(TU[i]) for i in (1, 0, 7)]
    # the first full-text query is the search; the extractive answer may read more passages after it
    assert result.details["mode"] == "hybrid" and data.text_unit_lexical.queries[0] == ("Where is t7w3?", 3)
    assert result.warnings == []


def test_basic_hybrid_on_an_index_without_full_text_warns():
    data = make_index()
    data.text_unit_text = ArrayVectorIndex(TU, [[1.0, 0.3 * i, 0.0, 0.0] for i in range(8)])
    result = asyncio.run(basic_search(request("q", data, None, ScriptedEmbedder(), QuerySettings())))
    assert result.details["mode"] == "vector" and NO_FULL_TEXT_INDEX in result.warnings
