"""The local-search walk's graph as integer arrays: what a build stores and a query maps.

Local search ranks its candidates by a personalized PageRank over entities and text units
(:mod:`graphrag_assets.query.graph_ranking`). Built from the relationships' titles in every query
process, that graph cost a 100,000-document index (15 M relationships) 64 s and 6.3 GB per
command-line query, almost all of it spent reading and joining 30 M strings. This module turns the
graph's integer form — each relationship's two end vertices and weight, each (entity, text unit)
mention — into the step matrix of the walk, which a build writes once
(:mod:`graphrag_assets.storage.walk_tables`) and a query maps as arrays.

Vertices: the entities in id order, then the text units in id order. An undirected edge per
relationship, weighted by its weight divided by the mean positive weight, and one of weight 1 per
mention; each edge is stored in both directions. The matrix is in compressed sparse rows by the
edge's *target*: row ``t`` lists the sources of the edges arriving at ``t`` and their step
probability (the edge's weight over the total weight leaving its source), in the order the edges
were given, so one multiplication adds, for every vertex, the same products in the same order as
summing over the edge list did before: the walk's scores are the same, float for float.

Each vertex's strength (the total weight of its edges) is kept too: a walk that pushes a vertex's
mass to its neighbours (:mod:`graphrag_assets.query.push_walk`) reads that vertex's row alone and
needs the probabilities of its edges *leaving* it, ``w / strength(vertex)``; the row holds
``w / strength(neighbour)``, so the leaving one is the row's times ``strength(neighbour) /
strength(vertex)`` (the graph is undirected).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from graphrag_assets.core.stable_order import stable_order

if TYPE_CHECKING:
    from scipy import sparse

INT32_LIMIT = np.iinfo(np.int32).max


@dataclass(frozen=True)
class WalkMatrix:
    """The walk's step matrix (``walked = matrix @ scores``) and the counts the ranking reads.

    ``indptr``/``sources``/``probability`` are the matrix's compressed rows (see the module
    docstring); ``mentions`` holds, per entity vertex, the text units mentioning it (at least 1);
    ``strength`` per vertex the total weight of its edges (0: none).
    """

    entity_count: int
    unit_count: int
    indptr: np.ndarray
    sources: np.ndarray
    probability: np.ndarray
    mentions: np.ndarray
    strength: np.ndarray

    @property
    def vertex_count(self) -> int:
        return self.entity_count + self.unit_count

    def matrix(self) -> sparse.csr_array:
        """The arrays as a sparse matrix, without copying them."""
        from scipy import sparse  # imported on first use: 0.7 s that commands without a walk need not pay

        shape = (self.vertex_count, self.vertex_count)
        return sparse.csr_array((self.probability, self.sources, self.indptr), shape=shape, copy=False)

    def isolated(self) -> np.ndarray:
        """Per vertex: has no edge (an undirected graph's vertex has edges in iff it has edges out)."""
        return np.diff(self.indptr) == 0


def _index_dtype(count: int) -> type:
    return np.int32 if count <= INT32_LIMIT else np.int64


def walk_matrix(
    entity_count: int,
    unit_count: int,
    link_ends: tuple[np.ndarray, np.ndarray],
    link_weight: np.ndarray,
    mention_entity: np.ndarray,
    mention_unit: np.ndarray,
) -> WalkMatrix:
    """The walk's matrix from the relationships' end vertices and weights (positive ones, both ends
    known) and the (entity vertex, text unit row) mentions, each in the order that fixes the sums."""
    vertex_count = entity_count + unit_count
    weights = np.asarray(link_weight, dtype=np.float64)
    if weights.size:
        weights = weights / weights.mean()
    mention_count = len(mention_entity)
    index_dtype = _index_dtype(max(2 * (len(weights) + mention_count), vertex_count))
    # vertex numbers in the narrowest type that holds them: 30 M directed edges at 100,000 documents
    first = np.concatenate([link_ends[0], mention_entity]).astype(index_dtype)
    second = np.concatenate([link_ends[1], np.asarray(mention_unit, dtype=index_dtype) + entity_count]).astype(
        index_dtype
    )
    source = np.concatenate([first, second])
    target = np.concatenate([second, first])
    del first, second
    directed = np.concatenate([weights, np.ones(mention_count), weights, np.ones(mention_count)])
    strength = np.bincount(source, weights=directed, minlength=vertex_count)
    directed /= np.where(strength > 0, strength, 1.0)[source]  # now the step probability
    order = stable_order(target)  # within a row, the edges keep the order they were given in
    indptr = np.zeros(vertex_count + 1, dtype=index_dtype)
    np.cumsum(np.bincount(target, minlength=vertex_count), out=indptr[1:])
    del target
    sources, probability = source[order], directed[order]
    del source, directed, order
    mentions = np.maximum(np.bincount(np.asarray(mention_entity, dtype=np.int64), minlength=entity_count), 1)
    return WalkMatrix(
        entity_count=entity_count,
        unit_count=unit_count,
        indptr=indptr,
        sources=sources,
        probability=probability,
        mentions=mentions[:entity_count],
        strength=strength,
    )


def stored_walk(
    entity_count: int,
    unit_count: int,
    indptr: np.ndarray,
    sources: np.ndarray,
    probability: np.ndarray,
    mentions: np.ndarray,
    strength: np.ndarray,
) -> WalkMatrix:
    """A walk matrix read back from a build, its index arrays in the one dtype the matrix needs (a
    memory-mapped array of that dtype stays mapped: a walk reads only the rows it visits)."""
    index_dtype = _index_dtype(max(len(sources), entity_count + unit_count))
    return WalkMatrix(
        entity_count=entity_count,
        unit_count=unit_count,
        indptr=np.asarray(indptr, dtype=index_dtype),
        sources=np.asarray(sources, dtype=index_dtype),
        probability=np.asarray(probability, dtype=np.float64),
        mentions=np.asarray(mentions, dtype=np.int64),
        strength=np.asarray(strength, dtype=np.float64),
    )
