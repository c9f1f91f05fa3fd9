"""The search operations a query needs from an index, as protocols.

Storage supplies LanceDB-backed implementations and :mod:`.array_index` an in-memory one; the
engines only call these methods, so they stay free of I/O and a test can hand in any object
that has them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class VectorIndex(Protocol):
    """Nearest neighbours of a vector among stored ones, keyed by the id of the embedded record."""

    def search(self, vector: Sequence[float], k: int) -> list[tuple[str, float]]:
        """Up to ``k`` (id, similarity) pairs, most similar first."""
        ...


class LexicalIndex(Protocol):
    """Full-text (BM25) search over stored texts, keyed by the id of the record.

    Storage supplies it (a big build's stored words, or LanceDB's full-text index for a build
    without them; a small build's is :mod:`.lexical`); the query engines only rank with it, so
    they stay free of I/O and a test can hand in any object with this method.
    """

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        """Up to ``k`` (id, score) pairs, best first."""
        ...
