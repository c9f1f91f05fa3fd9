"""Hierarchical Leiden on integer arrays with ``graspologic-native``'s Rust Leiden (the default backend).

Same hierarchy, seeds and numbering as :func:`~graphrag_assets.index.communities.assemble_hierarchy`
(level 0 clusters every connected component on its own, each cluster of at least
``max_cluster_size`` members is split again, a cluster Leiden cannot split stays a leaf; ids in
order of parent, size, smallest title), but a level is handled as a whole on numpy arrays instead
of one igraph subgraph per cluster: one connected-components pass finds every graph to cluster at
that level, one sort lays them out as consecutive row blocks of a single CSR matrix, and each block
goes to ``graspologic_native.leiden_csr`` without being copied into a graph object. At a million
nodes the hierarchy makes tens of thousands of Leiden calls, so per-call work is a few slices.

Why this engine: igraph's Leiden run until stable (our igraph setting) did not settle on
planted-partition graphs of 200,000 nodes (every iteration reshuffles tied nodes, each costs a full
pass), and leidenalg is 8x slower per iteration; see ``bench/bench_clustering.py`` and the module
docstring of :mod:`graphrag_assets.index.communities` for the figures.
"""

from __future__ import annotations

import numpy as np
import polars as pl
from scipy.sparse import coo_matrix, csr_matrix
from scipy.sparse.csgraph import connected_components

from graphrag_assets.core.schemas import empty_frame
from graphrag_assets.index.local_moving import LevelGraph, node_optimal

ASSIGNMENTS = {"node": pl.String, "community": pl.Int64, "level": pl.Int64, "parent": pl.Int64}


def _components(n: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Component label of each of ``n`` nodes, labels numbered by smallest member."""
    graph = coo_matrix((np.ones(src.size, dtype=np.int8), (src, dst)), shape=(n, n)).tocsr()
    _, labels = connected_components(graph, directed=False)
    first = np.full(labels.max() + 1, n, dtype=np.int64)
    np.minimum.at(first, labels, np.arange(n))
    return np.argsort(np.argsort(first))[labels]


def largest_component(n: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Indices of the largest component's nodes; among equal sizes, the one holding the smallest title."""
    labels = _components(n, src, dst)
    sizes = np.bincount(labels)
    return np.flatnonzero(labels == int(np.argmax(sizes)))  # argmax takes the first, smallest-title one


class _Level:
    """The graphs clustered at one level, laid out as consecutive row blocks of one CSR matrix.

    ``order`` lists the level's nodes grouped by graph (a connected component of one pending
    cluster's induced subgraph), ascending within a graph; ``starts`` holds each graph's first
    position in ``order``; rows of the CSR are positions in ``order`` and columns are positions
    relative to the graph's start, which is what ``leiden_csr`` takes for one block.
    """

    def __init__(self, n: int, group: np.ndarray, edges: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
        src, dst, weight = edges
        inside = (group[src] >= 0) & (group[src] == group[dst])
        if not inside.all():  # level 0 of a connected graph keeps every edge: no copy of them all
            src, dst, weight = src[inside], dst[inside], weight[inside]
        del inside
        self.edges = (src, dst, weight)  # only these can lie inside a cluster of the next level
        member = np.flatnonzero(group >= 0)
        # Components of the intra-cluster edges split each cluster into the graphs to cluster.
        local = np.full(n, -1, dtype=np.int64)
        local[member] = np.arange(member.size)
        comp = _components(member.size, local[src], local[dst])
        self.order = member[np.argsort(comp * n + member)]  # by graph, then node (one int key: 6x a lexsort)
        comp_sorted = comp[local[self.order]]
        self.starts = np.flatnonzero(np.r_[True, comp_sorted[1:] != comp_sorted[:-1]])
        self.ends = np.r_[self.starts[1:], self.order.size]
        self.group = group[self.order[self.starts]]  # pending cluster of each graph
        # Both directions of every edge, rows sorted, columns sorted within a row: scipy's counting
        # conversion to CSR on 32-bit positions. An argsort of one int64 key per entry and the
        # arrays it permuted took ~150 bytes an edge (2.2 GB at the 15 M edges of 100,000 documents).
        m = self.order.size
        position = np.empty(n, dtype=np.int32)
        position[self.order] = np.arange(m, dtype=np.int32)
        ends_a, ends_b = position[src], position[dst]
        rows, cols = np.concatenate([ends_a, ends_b]), np.concatenate([ends_b, ends_a])
        del ends_a, ends_b
        matrix = csr_matrix((np.concatenate([weight, weight]), (rows, cols)), shape=(m, m))
        del rows, cols
        matrix.sort_indices()  # pairs are distinct: nothing was summed
        self.data = matrix.data
        counts = np.diff(matrix.indptr)
        graph_start = np.repeat(self.starts, self.ends - self.starts).astype(np.int32)  # of each row's graph
        self.indices = matrix.indices.astype(np.int32, copy=False)
        self.indices -= np.repeat(graph_start, counts)
        self.indptr = matrix.indptr.astype(np.int64)

    def labels(self, seed_of, resolution: float, iterations: int, polish: bool = False) -> np.ndarray:
        """A cluster number for every position: Leiden on each graph, numbers unique across graphs.

        ``polish`` makes the labels node-optimal (:func:`.local_moving.node_optimal`), all graphs
        of the level in one pass.
        """
        import graspologic_native

        out = np.empty(self.order.size, dtype=np.int64)
        offset = 0
        for start, end in zip(self.starts.tolist(), self.ends.tolist()):
            size = end - start
            lo, hi = int(self.indptr[start]), int(self.indptr[end])
            if size == 1 or hi == lo:
                out[start:end] = offset
                offset += 1
                continue
            _, membership = graspologic_native.leiden_csr(
                self.indptr[start : end + 1] - lo,
                self.indices[lo:hi],
                self.data[lo:hi],
                size,
                resolution=resolution,
                iterations=max(1, iterations),
                seed=seed_of(self.order[start:end]),
            )
            label = np.empty(size, dtype=np.int64)
            label[np.fromiter(membership.keys(), dtype=np.int64, count=size)] = np.fromiter(
                membership.values(), dtype=np.int64, count=size
            )
            out[start:end] = label + offset
            offset += int(label.max()) + 1
        if polish:
            out = node_optimal(self.level_graph(), out, resolution)
        return np.unique(out, return_inverse=True)[1]

    def level_graph(self) -> LevelGraph:
        """The level's CSR with columns made global positions, for :func:`.local_moving.node_optimal`."""
        counts = np.diff(self.indptr)
        graph_start = np.repeat(self.starts, self.ends - self.starts).astype(np.int32)  # of each row's graph
        columns = self.indices + np.repeat(graph_start, counts)  # 32-bit: 4 bytes an entry less
        graph_of = np.repeat(np.arange(self.starts.size), self.ends - self.starts)
        return LevelGraph(self.indptr, columns, self.data, graph_of)


def native_hierarchy(
    names: pl.Series,
    edges: tuple[np.ndarray, np.ndarray, np.ndarray],
    nodes: np.ndarray | None,
    *,
    max_cluster_size: int,
    resolution: float,
    iterations: int,
    seed_of,
    polish: bool = False,
) -> pl.DataFrame:
    """``ASSIGNMENTS`` of the hierarchy over ``nodes`` (indices into the sorted ``names``; None: all).

    ``seed_of`` maps the ascending node indices of one graph to its Leiden seed.
    """
    n = names.len()
    parents_of_group = np.array([-1], dtype=np.int64)
    group = np.full(n, -1, dtype=np.int64)
    group[np.arange(n) if nodes is None else nodes] = 0
    out_nodes, out_comm, out_level, out_parent = [], [], [], []
    level, next_id = 0, 0
    while parents_of_group.size:
        layout = _Level(n, group, edges)
        edges = layout.edges
        cluster = layout.labels(seed_of, resolution, iterations, polish)  # per position in layout.order
        n_clusters = int(cluster.max()) + 1
        size = np.bincount(cluster, minlength=n_clusters)
        graph_of_position = np.repeat(np.arange(layout.starts.size), layout.ends - layout.starts)
        cluster_group = np.empty(n_clusters, dtype=np.int64)
        cluster_group[cluster] = layout.group[graph_of_position]
        smallest = np.full(n_clusters, n, dtype=np.int64)
        np.minimum.at(smallest, cluster, layout.order)
        parent = parents_of_group[cluster_group]
        # A parent whose graphs gave fewer than two clusters was not split: it stays a leaf.
        split = np.bincount(cluster_group, minlength=parents_of_group.size) >= 2
        keep = (parent == -1) | split[cluster_group]
        kept = np.flatnonzero(keep)
        kept = kept[np.lexsort((smallest[kept], -size[kept], parent[kept]))]
        community = np.full(n_clusters, -1, dtype=np.int64)
        community[kept] = np.arange(next_id, next_id + kept.size)
        next_id += kept.size
        rows = community[cluster] >= 0
        out_nodes.append(layout.order[rows])
        out_comm.append(community[cluster][rows])
        out_level.append(np.full(int(rows.sum()), level, dtype=np.int64))
        out_parent.append(parent[cluster][rows])
        # Clusters big enough to split become the next level's groups, numbered by community id.
        big = kept[size[kept] >= max_cluster_size]
        group = np.full(n, -1, dtype=np.int64)
        group_of_cluster = np.full(n_clusters, -1, dtype=np.int64)
        group_of_cluster[big] = np.arange(big.size)
        on = group_of_cluster[cluster] >= 0
        group[layout.order[on]] = group_of_cluster[cluster[on]]
        parents_of_group = community[big]
        level += 1
    if not out_nodes:
        return empty_frame(ASSIGNMENTS)
    return (
        pl.DataFrame(
            {
                "node": names.gather(np.concatenate(out_nodes)),
                "community": np.concatenate(out_comm),
                "level": np.concatenate(out_level),
                "parent": np.concatenate(out_parent),
            }
        )
        .cast(ASSIGNMENTS)
        .sort("level", "community", "node")
    )
