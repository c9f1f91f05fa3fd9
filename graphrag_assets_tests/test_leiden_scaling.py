"""The fast clustering path (graspologic-native on integer arrays) keeps the hierarchy's properties.

The graph is a 5,000-node planted partition: big enough that the hierarchy has several levels and
thousands of Leiden runs, small enough to cluster in about a second.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from graphrag_assets.core.settings import CommunitySettings
from graphrag_assets.index.communities import (
    DEFAULT_SEED,
    NATIVE_FROM_NODES,
    LeidenOptions,
    _graph_from_edges,
    _keep_largest_component,
    _leiden_per_component,
    assemble_hierarchy,
    hierarchical_leiden,
    leiden_options,
    normalize_edges,
    partition_modularity,
    resolve_backend,
)


def planted_graph(n_nodes: int = 5_000, n_edges: int = 25_000, seed: int = 3) -> pl.DataFrame:
    """Communities of 5-80 nodes, 80% of the edges inside them, titles in no community order."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(5, 81, n_nodes // 5)
    sizes = sizes[: int(np.searchsorted(np.cumsum(sizes), n_nodes)) + 1]
    sizes[-1] -= int(sizes.sum()) - n_nodes
    starts = np.r_[0, np.cumsum(sizes)[:-1]]
    label = np.repeat(np.arange(sizes.size), sizes)
    n_inside = int(n_edges * 0.8)
    u = rng.integers(0, n_nodes, n_edges)
    v = rng.integers(0, n_nodes, n_edges)
    v[:n_inside] = starts[label[u[:n_inside]]] + (rng.random(n_inside) * sizes[label[u[:n_inside]]]).astype(int)
    names = np.array([f"N{i:05d}" for i in rng.permutation(n_nodes)])
    weight = rng.integers(1, 10, n_edges).astype(float)
    return pl.DataFrame({"source": names[u], "target": names[v], "weight": weight}).filter(
        pl.col("source") != pl.col("target")
    )


@pytest.fixture(scope="module")
def graph() -> pl.DataFrame:
    return planted_graph()


@pytest.fixture(scope="module")
def fast(graph: pl.DataFrame) -> pl.DataFrame:
    return hierarchical_leiden(graph, LeidenOptions(backend="graspologic"))


def test_auto_is_the_default_backend_and_picks_graspologic_for_large_graphs() -> None:
    assert CommunitySettings().backend == "auto"
    assert LeidenOptions().backend == "auto"
    assert resolve_backend("auto", NATIVE_FROM_NODES) == "graspologic"
    assert resolve_backend("auto", NATIVE_FROM_NODES - 1) == "igraph"
    assert resolve_backend("leidenalg", 10**6) == "leidenalg"
    assert leiden_options(CommunitySettings()).polished


def test_same_seed_gives_the_same_communities_and_another_seed_does_not(graph, fast) -> None:
    assert hierarchical_leiden(graph, LeidenOptions(backend="graspologic")).equals(fast)
    other = hierarchical_leiden(graph, LeidenOptions(backend="graspologic", seed=DEFAULT_SEED + 1))
    assert not other.equals(fast)


def test_row_order_of_the_input_does_not_matter(graph, fast) -> None:
    shuffled = graph.sample(fraction=1.0, shuffle=True, seed=11)
    assert hierarchical_leiden(shuffled, LeidenOptions(backend="graspologic")).equals(fast)


def test_level_wise_arrays_equal_one_run_per_subgraph(graph, fast) -> None:
    """The array path is only a faster layout: seeds, splits and numbering equal the igraph-subgraph path."""
    whole = _keep_largest_component(_graph_from_edges(normalize_edges(graph)))

    def split(level: int, parent: int, subgraph):
        return _leiden_per_component(subgraph, "graspologic", DEFAULT_SEED, 1.0, 1, polish=True)

    assert assemble_hierarchy(whole, split, 10).equals(fast)


def test_every_cluster_of_max_size_or_more_is_split(fast) -> None:
    assert fast["level"].max() >= 2
    sizes = fast.group_by("community").len()
    parents = fast.filter(pl.col("parent") >= 0)["parent"].unique()
    leaves = sizes.filter(~pl.col("community").is_in(parents.implode()))
    assert leaves["len"].max() < 10


def test_one_iteration_keeps_modularity_within_one_percent_of_until_stable(graph, fast) -> None:
    """The reference runs igraph's Leiden until no node moves (uncapped); ours runs one Leiden cycle."""
    reference = hierarchical_leiden(graph, LeidenOptions(backend="igraph", n_iterations=-1))
    quality, best = partition_modularity(graph, fast), partition_modularity(graph, reference)
    assert quality >= 0.99 * best, (quality, best)
    level0 = fast.filter(pl.col("level") == 0).group_by("community").len()["len"]
    reference0 = reference.filter(pl.col("level") == 0).group_by("community").len()["len"]
    assert abs(level0.len() - reference0.len()) <= 0.1 * reference0.len()


def improvable_nodes(graph: pl.DataFrame, assignments: pl.DataFrame) -> set[int]:
    """Nodes of level 0 that a move to a neighbouring community would improve (warm start's test,
    by leidenalg's ``diff_move``)."""
    from graphrag_assets.index.stable_communities import _improvable

    whole = _keep_largest_component(_graph_from_edges(normalize_edges(graph)))
    label = dict(assignments.filter(pl.col("level") == 0).select("node", "community").iter_rows())
    return _improvable(whole, [label[name] for name in whole.vs["name"]], 1.0)


def test_default_partition_is_node_optimal_as_the_warm_start_needs(graph, fast) -> None:
    raw = hierarchical_leiden(graph, LeidenOptions(backend="graspologic", node_optimal=False))
    assert improvable_nodes(graph, raw)  # one Leiden cycle leaves nodes that would gain by moving ...
    assert improvable_nodes(graph, fast) == set()  # ... the polish moves them
