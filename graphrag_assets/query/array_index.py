"""The in-memory :class:`~graphrag_assets.query.search_indexes.VectorIndex`: cosine similarity with
numpy, for tests and for indexes small enough to search without LanceDB."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from graphrag_assets.core.errors import UserError, dimension_mismatch

if TYPE_CHECKING:  # numpy is imported where vectors are searched: `index` loads this module and never searches
    import numpy as np


class ArrayVectorIndex:
    """Cosine similarity over an in-memory matrix (one row per id).

    Ties keep the order the ids were given in, so results are deterministic.
    """

    def __init__(
        self,
        ids: Sequence[str],
        matrix: Sequence[Sequence[float]] | np.ndarray,
        name: str = "stored",
        dtype: str = "float64",
    ):
        """``dtype`` float32 halves the memory of a big index (a server's), at float32's precision."""
        import numpy as np

        self.name = name
        vectors = np.asarray(matrix, dtype=dtype)
        if len(ids) == 0:
            vectors = vectors.reshape(0, vectors.shape[-1] if vectors.ndim == 2 else 0)
        if vectors.ndim != 2 or vectors.shape[0] != len(ids):
            raise ValueError(f"expected one vector per id: {len(ids)} ids, matrix of shape {vectors.shape}")
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        self.ids = list(ids)
        self._unit = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)

    def __len__(self) -> int:
        return len(self.ids)

    def search(self, vector: Sequence[float], k: int) -> list[tuple[str, float]]:
        if k <= 0 or not self.ids:
            return []
        import numpy as np

        query = np.asarray(vector, dtype=self._unit.dtype)
        if query.shape != (self._unit.shape[1],):
            raise UserError(dimension_mismatch(self.name, self._unit.shape[1], query.size))
        norm = float(np.linalg.norm(query))
        similarities = self._unit @ (query / norm) if norm > 0 else np.zeros(len(self.ids))
        order = best_first(similarities, k)
        return [(self.ids[i], float(similarities[i])) for i in order]


def empty_index() -> ArrayVectorIndex:
    import numpy as np

    return ArrayVectorIndex([], np.zeros((0, 1)))


def best_first(scores: np.ndarray, k: int) -> np.ndarray:
    """Indexes of the ``k`` highest ``scores``, best first, ties by lower index: a stable sort's
    first ``k``, without sorting all 100,000 (~3 ms each, several times a served question)."""
    import numpy as np

    if k <= 0 or k >= len(scores):
        return np.argsort(-scores, kind="stable")[: max(k, 0)]
    threshold = scores[np.argpartition(-scores, k - 1)[:k]].min()
    if np.isnan(threshold):  # NaN sorts last in a full sort
        return np.argsort(-scores, kind="stable")[:k]
    candidates = np.flatnonzero(scores >= threshold)  # every tie of the k-th, in index order
    return candidates[np.argsort(-scores[candidates], kind="stable")][:k]
