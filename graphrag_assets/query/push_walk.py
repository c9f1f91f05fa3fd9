"""Personalized PageRank by pushing residual mass from the restart vertices outward (forward push).

The power iteration of :func:`graphrag_assets.query.graph_ranking.exact_pagerank` multiplies by
the whole step matrix about 20–35 times per question: on the 100,000-document index 37.7 M
directed edges per step, ~1.2 s of steps after ~2 s reading the matrix, whatever the question.
Forward push (Andersen, Chung and Lang, "Local graph partitioning using PageRank vectors", 2006)
does work that depends on the question instead: it keeps a score and a residual per vertex,
starting with the restart distribution as residual; pushing a vertex moves ``1 - damping`` of its
residual to its score and spreads the rest over its neighbours by the step probabilities (a
vertex without edges sends it back to the restart distribution, as the walk's walker does). It
stops when no residual exceeds ``threshold`` times its vertex's degree, so a high-degree hub is
pushed only with much mass, and the rows read are those of the vertices pushed: with the matrix
memory-mapped (:mod:`graphrag_assets.storage.walk_tables`) a question reads its neighbourhood, not
the index.

The exact scores are the pushed ones plus the walk restarted from what is left, so every score is
at most the exact one and the shortfall is bounded by the residual left: below ``threshold``
times the degree at each vertex. Vertices are pushed in rounds, every vertex over the bar at once
in vertex order, so the same restart vector gives the same scores, float for float.
"""

from __future__ import annotations

import numpy as np

from graphrag_assets.index.walk_graph import WalkMatrix


def _row_positions(indptr: np.ndarray, vertices: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Positions in the matrix's arrays of the rows of ``vertices`` (``counts`` edges each), row after row."""
    total = int(counts.sum())
    ends = np.cumsum(counts)
    return np.repeat(indptr[vertices].astype(np.int64) - (ends - counts), counts) + np.arange(total)


def pushed_pagerank(walk: WalkMatrix, restart: np.ndarray, damping: float, threshold: float) -> np.ndarray:
    """Scores of the walk with restart distribution ``restart`` (summing to 1), each short of the
    exact one by what the residual left below ``threshold`` × degree still brings (see the module
    docstring)."""
    vertex_count = walk.vertex_count
    degree = np.diff(walk.indptr)
    bar = threshold * np.maximum(degree, 1)
    scores = np.zeros(vertex_count)
    residual = restart.astype(np.float64, copy=True)
    while True:
        active = np.flatnonzero(residual > bar)
        if not active.size:
            return scores
        mass = residual[active]
        residual[active] = 0.0
        scores[active] += (1 - damping) * mass
        linked = degree[active] > 0
        if not linked.all():
            residual += damping * float(mass[~linked].sum()) * restart
        vertices, mass = active[linked], mass[linked]
        counts = degree[vertices]
        positions = _row_positions(walk.indptr, vertices, counts)
        neighbours = walk.sources[positions]
        # the row holds P(neighbour -> vertex); times the neighbour's strength: the edge's weight
        weight = walk.probability[positions] * walk.strength[neighbours]
        share = np.repeat(damping * mass / walk.strength[vertices], counts) * weight
        residual += np.bincount(neighbours, weights=share, minlength=vertex_count)
