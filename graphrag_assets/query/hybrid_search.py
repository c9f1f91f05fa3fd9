"""Text-unit retrieval by vector similarity, or by vector and full-text (BM25) hits fused.

Basic search and the graph ranking of local search both start from "the text units that best match
the question". With ``mode="hybrid"`` and a full-text index, the vector hits and the BM25 hits are
fused by reciprocal rank (Cormack, Clarke and Büttcher, 2009): every list adds ``1 / (K + rank)``
(ranks from 1, K = 60) to each id it holds, the sum orders the result. That is the formula of
LanceDB's ``RRFReranker``; we fuse here rather than through LanceDB's hybrid query so that the query
engines stay free of I/O (the full-text index is a :class:`~graphrag_assets.query.search_indexes.LexicalIndex`
handed in by storage) and the local ranking can reuse the same fused hits.

Why fuse at all: the offline hashing embedder knows words but not how rare they are, and a model
embedder blurs names and numbers; BM25 weighs a rare name highly. On LiHua-World's chat logs (see
``bench/bench_lihua_retrieval.py``) the fused list finds a gold chat log in the top 10 far more
often than vectors alone. A question's dates and other words holding digits are also searched on
their own (:func:`numbers_of`), as a third ranking of the fusion.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from graphrag_assets.query.query_data import QueryData

RRF_K = 60
MIN_DIGITS = 4  # a year, a date, a long number ("2026", "20260428"); not "5", "17" or "t7w3"
NO_FULL_TEXT_INDEX = (
    "the index has no full-text index of its text units (it was built before full-text search existed); "
    "vector search was used alone. Run 'graphrag-assets index' to add it."
)

Hits = list[tuple[str, float]]


def reciprocal_rank_fusion(rankings: Sequence[Sequence[tuple[str, float]]], k: int, constant: int = RRF_K) -> Hits:
    """The ``k`` best ids of several rankings by ``Σ 1 / (constant + rank)``; ties keep first appearance."""
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, (item, _) in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (constant + rank)
    return sorted(scores.items(), key=lambda pair: -pair[1])[:k]


@dataclass
class TextUnitHits:
    """The hits, best first, how they were found, and why the requested mode could not be used."""

    hits: Hits
    mode: Literal["hybrid", "vector"]
    warnings: list[str] = field(default_factory=list)


def text_unit_hits(
    data: QueryData, vector: Sequence[float], text: str, k: int, mode: Literal["hybrid", "vector"]
) -> TextUnitHits:
    """The ``k`` best text units for a question (its ``vector`` and its ``text``).

    Each side is asked for ``k`` hits before fusing: on LiHua-World with the offline embedder,
    asking each side for 3 × k let more weak vector hits into the fused top k (hit@10 of basic
    search 93.5% with k per side, 91.6% with 3 × k).
    """
    vector_hits = data.text_unit_text.search(vector, k)
    if mode == "vector":
        return TextUnitHits(vector_hits, "vector")
    if data.text_unit_lexical is None:
        return TextUnitHits(vector_hits, "vector", [NO_FULL_TEXT_INDEX])
    rankings = [vector_hits, data.text_unit_lexical.search(text, k)]
    numbers = numbers_of(text)
    if numbers:
        rankings.append(data.text_unit_lexical.search(" ".join(numbers), k))
    return TextUnitHits(reciprocal_rank_fusion(rankings, k), "hybrid")


_ISO_DATE = re.compile(r"\b(\d{4})[-/](\d{2})[-/](\d{2})\b")
_NUMBER = re.compile(r"[^\W_]*\d[^\W_]*")


def numbers_of(text: str) -> list[str]:
    """The words holding at least ``MIN_DIGITS`` digits (years, dates, long numbers), an ISO date
    also in its compact form ("2026-04-28" and "20260428").

    They are searched on their own as a third ranking: in the full-text ranking of the whole
    question a date is one word among ten, and on LiHua-World a chat log found by its date alone
    (``Time: 20260630_15:30``) came out of the fusion below logs that matched the question's
    common words in both lists.
    """
    compact = [m.group(1) + m.group(2) + m.group(3) for m in _ISO_DATE.finditer(text)]
    words = [w for w in _NUMBER.findall(text) if sum(c.isdigit() for c in w) >= MIN_DIGITS]
    return list(dict.fromkeys(words + compact))
