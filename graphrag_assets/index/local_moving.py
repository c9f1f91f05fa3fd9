"""Node-level local moving on numpy arrays: the "polish" that makes a Leiden result node-optimal.

One Leiden cycle (graspologic-native's) ends on the aggregated graph, so single nodes may still
gain modularity by moving to a neighbouring cluster; stable mode's warm start moves exactly those
nodes, so without this step its first update would reshuffle communities no edit touched.

Moves are made in rounds over every graph of a hierarchy level at once instead of node by node:
in a round each node that would gain proposes its best move, and the proposals made together are
chosen so that modularity rises by at least half their gains (see :meth:`_State.move`), so every
round raises it and at least one proposal is made. Only nodes next
to a move are looked at again; when none would gain, every node is checked once more (a cluster's
total degree changed by a move can make a far member gain), and clusters a move disconnected are
split into their connected pieces (which only raises modularity) and checked again. It stops when
no node of any graph gains by a single move to a neighbouring cluster and every cluster is
connected. Each graph's rounds depend on that graph only, so clustering a graph alone or within a
level gives the same labels; nothing is random.

The gain of moving node i from cluster A to a neighbouring cluster C is
``w(i,C) - w(i,A) - resolution * k_i * (K_C - K_A + k_i) / 2m`` (w: edge weight from i into a
cluster without i, k: weighted degree, K: a cluster's total degree including i's for A, m: the
graph's total edge weight); leidenalg's ``diff_move`` is twice this.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

GAIN_TOLERANCE = 1e-10  # below the warm start's (1e-9 in leidenalg's units, twice ours)
# Rows are looked at in runs of about this many stored entries: a pass over every node of a level
# (the first, and each exact check) made several arrays of the level's size at once, ~100 bytes an
# entry, 1.4 GB at the 30 M entries of 100,000 documents. A row's entries stay in one run, so each
# row's sums are the same as in one pass.
BATCH_ENTRIES = 1 << 21


@dataclass(frozen=True)
class LevelGraph:
    """Graphs laid out as consecutive row blocks of one symmetric CSR matrix (global columns).

    ``graph_of`` names each row's graph; ``indices`` are global row numbers, never across graphs.
    """

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    graph_of: np.ndarray

    @property
    def size(self) -> int:
        return self.graph_of.size

    @classmethod
    def of_edges(cls, n: int, edges: tuple[np.ndarray, np.ndarray, np.ndarray]) -> LevelGraph:
        """One graph of ``n`` nodes from its undirected edge list (source, target, weight; each pair once)."""
        src, dst, weight = edges
        rows = np.concatenate([src, dst]).astype(np.int32, copy=False)
        cols = np.concatenate([dst, src]).astype(np.int32, copy=False)
        matrix = csr_matrix((np.concatenate([weight, weight]), (rows, cols)), shape=(n, n))
        del rows, cols
        return cls(matrix.indptr.astype(np.int64), matrix.indices, matrix.data, np.zeros(n, dtype=np.int64))


def _entries(graph: LevelGraph, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row, column, weight) of every stored entry in the rows ``nodes`` (ascending)."""
    starts, ends = graph.indptr[nodes], graph.indptr[nodes + 1]
    counts = ends - starts
    total = int(counts.sum())
    first = np.cumsum(counts) - counts
    at = np.arange(total, dtype=np.int64) + np.repeat(starts - first, counts)
    return np.repeat(nodes, counts), graph.indices[at], graph.data[at]


class _State:
    """Labels, degrees, cluster totals and each node's weight into its own cluster, of a level being polished.

    ``own`` and ``total`` are kept up to date move by move (:meth:`move`) and recomputed from the
    edges by :meth:`refresh`, so the last check before the polish ends is exact.
    """

    def __init__(
        self, graph: LevelGraph, label: np.ndarray, resolution: float, tolerance: float = GAIN_TOLERANCE
    ) -> None:
        self.graph = graph
        self.resolution = resolution
        self.tolerance = tolerance
        self.counts = np.diff(graph.indptr)
        self.rows = np.repeat(np.arange(graph.size, dtype=np.int32), self.counts)  # row of each stored entry
        self.degree = np.bincount(self.rows, weights=graph.data, minlength=graph.size)
        self.two_m = np.bincount(graph.graph_of, weights=self.degree)[graph.graph_of]  # per node: its graph's 2m
        self.label = label
        self.refresh()

    def refresh(self) -> None:
        """Recompute ``own`` and ``total`` from the edges (no drift from adding moves up)."""
        label, indptr = self.label, self.graph.indptr
        self.own = np.zeros(self.graph.size)
        for first, last in _runs(self.counts, np.arange(self.graph.size)):
            lo, hi = int(indptr[first]), int(indptr[last])
            # Every row's label: repeating labels by row length is cheaper than gathering them.
            inside = np.repeat(label[first:last], self.counts[first:last]) == label[self.graph.indices[lo:hi]]
            self.own[first:last] = np.bincount(
                self.rows[lo:hi][inside] - first, weights=self.graph.data[lo:hi][inside], minlength=last - first
            )
        self.total = np.bincount(label, weights=self.degree)

    def best_moves(self, nodes: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(node, target cluster, gain) of each of ``nodes`` (None: all) that gains above the tolerance.

        A node can gain at most ``e - w(i,A) + resolution * k_i * (K_A - k_i) / 2m`` (e: its weight
        out of its cluster, all of it into one cluster of no weight), so only nodes where that
        bound is positive have their weight into each neighbouring cluster summed (a sort).
        """
        if nodes is None:
            nodes = np.arange(self.graph.size)
        parts = [self._best_moves(nodes[first:last]) for first, last in _runs(self.counts[nodes], nodes)]
        if len(parts) == 1:
            return parts[0]
        node, cluster, gain = (np.concatenate(column) for column in zip(*parts))
        return node, cluster, gain

    def _best_moves(self, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`best_moves` of one run of ascending ``nodes``."""
        label, k, own, two_m = self.label, self.degree, self.own, self.two_m
        bound = (
            k[nodes]
            - 2 * own[nodes]
            + self.resolution * k[nodes] * (self.total[label[nodes]] - k[nodes]) / two_m[nodes]
        )
        rows, cols, weight = _entries(self.graph, nodes[bound > self.tolerance])
        cluster = label[cols]
        outside = cluster != label[rows]
        rows, cluster, weight = rows[outside], cluster[outside], weight[outside]
        if rows.size == 0:
            return rows, cluster, weight
        # Weight from each node into each neighbouring cluster: (node, cluster) runs after a sort.
        order = np.argsort(rows * (int(cluster.max()) + 1) + cluster, kind="stable")  # a lexsort, 3x faster
        rows, cluster, weight = rows[order], cluster[order], weight[order]
        at = np.flatnonzero(np.r_[True, (rows[1:] != rows[:-1]) | (cluster[1:] != cluster[:-1])])
        node, cluster, weight_into = rows[at], cluster[at], np.add.reduceat(weight, at)
        gain = (
            weight_into
            - own[node]
            - self.resolution * k[node] * (self.total[cluster] - self.total[label[node]] + k[node]) / two_m[node]
        )
        keep = gain > self.tolerance
        node, cluster, gain = node[keep], cluster[keep], gain[keep]
        if node.size == 0:
            return node, cluster, gain
        best = np.lexsort((cluster, -gain, node))  # per node: highest gain, then smallest cluster
        node, cluster, gain = node[best], cluster[best], gain[best]
        head = np.r_[True, node[1:] != node[:-1]]
        return node[head], cluster[head], gain[head]

    def move(self, node: np.ndarray, target: np.ndarray, gain: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Make a set of proposals that raises modularity; returns (moved nodes, proposals not made, their neighbours).

        Proposals from neighbours conflict (their edge weights into clusters change): of two
        neighbours only the one of higher priority may move. Moves sharing a cluster interact
        only through its total degree: two nodes joining (or leaving) the same cluster together
        cost ``resolution * k_i * k_j / 2m`` more than their gains say. A move is made when its
        gain exceeds that cost against every other such move (then the round's modularity change
        is at least half the sum of its gains); when no move passes, only the proposals of highest
        priority in each of their clusters are made, which never interact.
        """
        source = self.label[node]
        priority = np.empty(node.size, dtype=np.int64)
        priority[np.lexsort((-node, gain))] = np.arange(node.size)  # higher gain, then smaller node, wins
        priority_of = np.full(self.graph.size, -1, dtype=np.int64)
        priority_of[node] = priority
        rows, cols, _ = _entries(self.graph, node)
        best_neighbour = np.full(self.graph.size, -1, dtype=np.int64)
        np.maximum.at(best_neighbour, rows, priority_of[cols])
        free = best_neighbour[node] < priority
        k = self.degree[node]
        joining = np.bincount(target[free], weights=k[free], minlength=self.total.size)
        leaving = np.bincount(source[free], weights=k[free], minlength=self.total.size)
        shared = joining[target] + leaving[source] - 2 * k
        win = free & (gain > self.resolution * k * shared / self.two_m[node])
        if not win.any():
            best_of_cluster = np.full(self.total.size, -1, dtype=np.int64)
            np.maximum.at(best_of_cluster, source, priority)
            np.maximum.at(best_of_cluster, target, priority)
            win = free & (best_of_cluster[source] == priority) & (best_of_cluster[target] == priority)
        moved, to, came_from = node[win], target[win], source[win]
        np.subtract.at(self.total, came_from, k[win])
        np.add.at(self.total, to, k[win])
        self.label[moved] = to
        # Own-cluster weights: movers are not adjacent, so their neighbours kept their labels.
        counts = self.counts[moved]
        _, neighbour, weight = _entries(self.graph, moved)
        near = self.label[neighbour]
        joined, left = near == np.repeat(to, counts), near == np.repeat(came_from, counts)
        np.add.at(self.own, neighbour, np.where(joined, weight, 0.0) - np.where(left, weight, 0.0))
        mover = np.repeat(np.arange(moved.size), counts)
        self.own[moved] = np.bincount(mover, weights=np.where(joined, weight, 0.0), minlength=moved.size)
        return moved, node[~win], neighbour

    def split_disconnected(self) -> bool:
        """Give every connected piece of a cluster its own label; whether any cluster was split."""
        graph, label = self.graph, self.label
        inside = np.repeat(label, self.counts) == label[graph.indices]
        indptr = np.r_[0, np.cumsum(np.bincount(self.rows[inside], minlength=graph.size))]
        links = np.ones(int(indptr[-1]), dtype=np.int8)
        matrix = csr_matrix((links, graph.indices[inside], indptr), shape=(graph.size, graph.size))
        pieces, piece = connected_components(matrix, directed=False)
        if pieces == np.unique(label).size:
            return False
        self.label = piece.astype(np.int64)
        self.refresh()
        return True


def _runs(counts: np.ndarray, nodes: np.ndarray) -> list[tuple[int, int]]:
    """Consecutive slices of ``nodes`` (their rows' entry ``counts``) of about ``BATCH_ENTRIES``
    entries each; one slice when they hold fewer."""
    if nodes.size == 0:
        return [(0, 0)]
    ends = np.cumsum(counts)
    cuts = np.searchsorted(ends, np.arange(BATCH_ENTRIES, int(ends[-1]), BATCH_ENTRIES), side="right")
    bounds = np.unique(np.r_[0, cuts, nodes.size])
    return list(zip(bounds[:-1].tolist(), bounds[1:].tolist()))


def improvable(graph: LevelGraph, label: np.ndarray, resolution: float, tolerance: float) -> np.ndarray:
    """The nodes (ascending) that a move to a neighbouring cluster of ``label`` (consecutive
    numbers) would raise modularity by more than ``tolerance``: the warm start's movable nodes,
    found in arrays where a loop asking leidenalg for each node's moves took 6 s at 100,000
    documents (50,000 nodes, 7.5 M edges)."""
    return _State(graph, np.asarray(label, dtype=np.int64), resolution, tolerance).best_moves(None)[0]


def node_optimal(graph: LevelGraph, label: np.ndarray, resolution: float = 1.0) -> np.ndarray:
    """``label`` (a cluster number per row) moved until no node gains by moving, every cluster connected.

    Returned labels are cluster numbers, not necessarily consecutive.
    """
    state = _State(graph, np.asarray(label, dtype=np.int64).copy(), resolution)
    active = None  # every node
    exact = True  # ``own`` and ``total`` just computed from the edges
    moved_since_split = True  # only a move can disconnect a cluster; Leiden's own clusters are checked once too
    while True:
        node, target, gain = state.best_moves(active)
        if node.size == 0:
            if active is not None or not exact:  # nothing near the moves gains: check every node, exactly
                if not exact:
                    state.refresh()
                    exact = True
                active = None
            elif moved_since_split and state.split_disconnected():
                moved_since_split = False
            else:
                return state.label
            continue
        moved, waiting, neighbours = state.move(node, target, gain)
        exact = False
        moved_since_split |= moved.size > 0
        active = np.unique(np.concatenate([moved, waiting, neighbours]))
