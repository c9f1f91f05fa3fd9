"""The polish (vectorized node-level moving) that makes every graspologic Leiden result node-optimal.

Stable mode's warm start relies on it: a partition where no single node gains by moving is kept as
it is. Checked against leidenalg's own ``diff_move`` and igraph's modularity, not our gain formula.
"""

from __future__ import annotations

import igraph
import leidenalg
import numpy as np
import pytest

from graphrag_assets.index.communities import _run_seed, _SeedOfMembers
from graphrag_assets.index.local_moving import LevelGraph, node_optimal


def random_graph(n: int, n_edges: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Weighted undirected edges (each pair once) with some community structure: groups of 20."""
    rng = np.random.default_rng(seed)
    u = rng.integers(0, n, n_edges)
    v = np.where(rng.random(n_edges) < 0.7, u // 20 * 20 + rng.integers(0, 20, n_edges), rng.integers(0, n, n_edges))
    v = np.minimum(v, n - 1)
    lo, hi = np.minimum(u, v), np.maximum(u, v)
    _, first = np.unique(lo * n + hi, return_index=True)
    first = first[lo[first] != hi[first]]
    return lo[first], hi[first], rng.integers(1, 10, first.size).astype(float)


def level_graph(n: int, src: np.ndarray, dst: np.ndarray, weight: np.ndarray, graph_of: np.ndarray) -> LevelGraph:
    rows, cols = np.r_[src, dst], np.r_[dst, src]
    order = np.lexsort((cols, rows))
    indptr = np.r_[0, np.cumsum(np.bincount(rows, minlength=n))]
    return LevelGraph(indptr, cols[order], np.r_[weight, weight][order], graph_of)


def as_igraph(n: int, src: np.ndarray, dst: np.ndarray, weight: np.ndarray) -> igraph.Graph:
    graph = igraph.Graph(n, list(zip(src.tolist(), dst.tolist())))
    graph.es["weight"] = weight.tolist()
    return graph


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_polish_raises_modularity_and_leaves_no_node_that_gains_by_one_move(seed: int) -> None:
    n = 600
    src, dst, weight = random_graph(n, 3_000, seed)
    start = np.random.default_rng(seed).integers(0, 40, n)  # rough and with disconnected clusters
    polished = node_optimal(level_graph(n, src, dst, weight, np.zeros(n, dtype=np.int64)), start)
    graph = as_igraph(n, src, dst, weight)
    assert graph.modularity(polished.tolist(), weights="weight") > graph.modularity(start.tolist(), weights="weight")
    partition = leidenalg.RBConfigurationVertexPartition(graph, initial_membership=polished.tolist(), weights="weight")
    gains = [
        partition.diff_move(v, c)
        for v in range(n)
        for c in {partition.membership[u] for u in graph.neighbors(v)} - {partition.membership[v]}
    ]
    assert max(gains) <= 1e-9  # the warm start's tolerance: it would move no node
    for label in set(polished.tolist()):
        members = np.flatnonzero(polished == label).tolist()
        assert graph.induced_subgraph(members).is_connected()


def test_polish_is_already_done_on_a_node_optimal_partition() -> None:
    n = 600
    src, dst, weight = random_graph(n, 3_000, 4)
    layout = level_graph(n, src, dst, weight, np.zeros(n, dtype=np.int64))
    once = node_optimal(layout, np.random.default_rng(4).integers(0, 40, n))
    assert np.array_equal(node_optimal(layout, once), once)


def test_graphs_polished_together_get_the_labels_they_get_alone() -> None:
    """A hierarchy level polishes all its graphs at once; each graph's labels must not depend on the others."""
    a, b = random_graph(300, 1_500, 5), random_graph(400, 2_000, 6)
    start_a, start_b = np.random.default_rng(7).integers(0, 20, 300), np.random.default_rng(8).integers(0, 30, 400)
    alone_a = node_optimal(level_graph(300, *a, np.zeros(300, dtype=np.int64)), start_a)
    alone_b = node_optimal(level_graph(400, *b, np.zeros(400, dtype=np.int64)), start_b)
    both = level_graph(
        700,
        np.r_[a[0], b[0] + 300],
        np.r_[a[1], b[1] + 300],
        np.r_[a[2], b[2]],
        np.repeat([0, 1], [300, 400]),
    )
    together = node_optimal(both, np.r_[start_a, start_b + 20])
    assert same_partition(together[:300], alone_a)
    assert same_partition(together[300:], alone_b)


def same_partition(left: np.ndarray, right: np.ndarray) -> bool:
    return np.array_equal(np.unique(left, return_inverse=True)[1], np.unique(right, return_inverse=True)[1])


def test_run_seeds_of_encoded_titles_equal_the_seeds_of_the_titles() -> None:
    import polars as pl

    titles = pl.Series(["Ärger", "Zoë", "a\x1fb", "東京", "plain"]).sort()
    seed_of = _SeedOfMembers(0xDEADBEEF, titles)
    for members in ([0], [1, 3], [0, 2, 4], [0, 1, 2, 3, 4]):
        assert seed_of(np.array(members)) == _run_seed(0xDEADBEEF, [titles[i] for i in members])


@pytest.mark.parametrize("batch", [1, 37, 1_000])
def test_polishing_rows_in_runs_gives_the_labels_of_one_pass(monkeypatch, batch: int) -> None:
    """Rows are looked at in runs of ``BATCH_ENTRIES`` entries (memory of a level with millions of edges):
    the labels are exactly those of one pass over all rows."""
    from graphrag_assets.index import local_moving

    n = 600
    src, dst, weight = random_graph(n, 3_000, 4)
    graph = level_graph(n, src, dst, weight, np.zeros(n, dtype=np.int64))
    start = np.random.default_rng(4).integers(0, 40, n)
    whole = node_optimal(graph, start)
    monkeypatch.setattr(local_moving, "BATCH_ENTRIES", batch)
    assert np.array_equal(node_optimal(graph, start), whole)
    assert not np.array_equal(whole, start)
