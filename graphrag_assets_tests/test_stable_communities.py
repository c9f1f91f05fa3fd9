"""Locality of clustering across edits: per-component clustering, warm starts, drift and re-clustering."""

from __future__ import annotations

import random

import polars as pl
import pytest

from graphrag_assets.core.ids import entity_id
from graphrag_assets.core.settings import CommunitySettings
from graphrag_assets.index.coded_graph import edges_of_frame
from graphrag_assets.index.communities import (
    LeidenOptions,
    _keep_largest_component,
    build_communities,
    graph_from_codes,
    hierarchical_leiden,
    leiden_options,
    partition_modularity,
)
from graphrag_assets.index.stable_communities import (
    ClusteringRequest,
    FreshModularity,
    _connected_labels,
    _improvable,
    _largest_component,
    cluster_for_update,
    fresh_top_level,
    last_fresh_modularity,
    merged_graph,
    modularity_drift,
    previous_assignments,
    warm_start_hierarchy,
)
from graphrag_assets_tests.test_communities import clique, edge_frame


def noisy_groups(prefix: str, n_groups: int = 8, size: int = 20, seed: int = 1) -> list[tuple[str, str, float]]:
    """A connected graph with noisy community structure: enough for Leiden's randomness to matter."""
    rng = random.Random(f"{prefix}-{seed}")
    nodes = [f"{prefix}{i:03d}" for i in range(n_groups * size)]
    edges = [(nodes[i], nodes[i + 1], 1.0) for i in range(len(nodes) - 1)]  # a path keeps it connected
    for _ in range(len(nodes) * 3):
        u = rng.randrange(len(nodes))
        v = (u // size) * size + rng.randrange(size) if rng.random() < 0.75 else rng.randrange(len(nodes))
        if u != v:
            edges.append((nodes[u], nodes[v], float(rng.randint(1, 5))))
    return edges


def member_sets(assignments: pl.DataFrame, prefix: str | None = None) -> set[tuple[int, tuple[str, ...]]]:
    """(level, sorted members) of every community, optionally only those of one component."""
    rows = assignments.group_by("level", "community").agg(pl.col("node").sort()).select("level", "node").rows()
    return {(level, tuple(nodes)) for level, nodes in rows if prefix is None or nodes[0].startswith(prefix)}


def stable(**overrides) -> CommunitySettings:
    return CommunitySettings(update="stable", **overrides)


# --- exact mode: per-component clustering -------------------------------------------------------


def test_an_untouched_component_keeps_its_communities_when_another_changes() -> None:
    left, right = noisy_groups("L"), noisy_groups("R")
    before = hierarchical_leiden(edge_frame(left + right), LeidenOptions(use_lcc=False))
    rng = random.Random(7)
    edited = left + [(f"L{rng.randrange(160):03d}", f"L{rng.randrange(160):03d}", 5.0) for _ in range(30)]
    after = hierarchical_leiden(edge_frame(edited + right), LeidenOptions(use_lcc=False))
    assert member_sets(before, "L") != member_sets(after, "L")  # the edit did change its own component
    assert member_sets(before, "R") == member_sets(after, "R")
    assert len(member_sets(after, "R")) > 8


def test_components_are_clustered_as_they_would_be_alone() -> None:
    left, right = noisy_groups("L"), noisy_groups("R")
    together = hierarchical_leiden(edge_frame(left + right), LeidenOptions(use_lcc=False))
    alone = hierarchical_leiden(edge_frame(right), LeidenOptions(use_lcc=False))
    assert member_sets(together, "R") == member_sets(alone)


# --- stable mode: warm starts ---------------------------------------------------------------------


def test_warm_start_on_an_unchanged_graph_changes_nothing() -> None:
    edges = edge_frame(noisy_groups("N"))
    fresh = hierarchical_leiden(edges)  # until stable: no node gains by moving
    assert warm_start_hierarchy(edges, fresh, stable()).equals(fresh)


def test_a_two_iteration_partition_is_polished_once_then_kept() -> None:
    edges = edge_frame(noisy_groups("N", seed=2))  # a graph where two iterations leave misplaced nodes
    rough = hierarchical_leiden(edges, LeidenOptions(n_iterations=2))
    polished = warm_start_hierarchy(edges, rough, stable())
    assert not polished.equals(rough)  # the nodes two iterations left misplaced move ...
    assert warm_start_hierarchy(edges, polished, stable()).equals(polished)  # ... once


def test_warm_start_places_a_new_node_and_keeps_communities_away_from_it() -> None:
    base = noisy_groups("N")
    previous = hierarchical_leiden(edge_frame(base))
    neighbours = ["N005", "N007", "N011"]
    edited = base + [("NEW", n, 4.0) for n in neighbours]
    after = warm_start_hierarchy(edge_frame(edited), previous, stable())
    assert after.filter(pl.col("node") == "NEW").height >= 1  # the new node is placed
    touched = {"NEW", *neighbours}
    untouched_before = {c for c in member_sets(previous) if not touched & set(c[1])}
    kept = untouched_before & member_sets(after)
    assert len(kept) >= 0.9 * len(untouched_before)
    fresh_after = hierarchical_leiden(edge_frame(edited), LeidenOptions(backend="igraph"))
    assert len(untouched_before & member_sets(fresh_after)) < len(kept)  # what a fresh clustering would keep


def test_the_merged_graph_values_every_move_of_a_movable_node_as_the_whole_graph_does() -> None:
    """Warm starts move the affected nodes on a graph whose held nodes are merged per community:
    each move's gain, and the partition's quality, must be those of the whole graph."""
    import igraph
    import leidenalg

    rng = random.Random(3)
    graph = igraph.Graph.Erdos_Renyi(120, 0.08, loops=False)
    graph.es["weight"] = [rng.uniform(0.1, 3.0) for _ in range(graph.ecount())]
    membership = [v % 6 for v in range(120)]
    membership[7] = 6  # a community of movable nodes only (7 and 19)
    membership[19] = 6
    movable = [2, 7, 19, 40, 41, 99]
    whole = leidenalg.RBConfigurationVertexPartition(
        graph, initial_membership=membership, weights="weight", resolution_parameter=0.8
    )
    merged, initial = merged_graph(graph, membership, movable)
    assert merged.vcount() == 7 + len(movable) and initial[:7] == list(range(7))
    part = leidenalg.RBConfigurationVertexPartition(
        merged, initial_membership=initial, weights="weight", resolution_parameter=0.8
    )
    assert part.quality() == pytest.approx(whole.quality(), rel=1e-12)
    for i, vertex in enumerate(movable):
        for community in range(7):
            assert part.diff_move(7 + i, community) == pytest.approx(whole.diff_move(vertex, community), abs=1e-9)


@pytest.mark.parametrize("resolution", [1.0, 0.6])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_movable_nodes_found_in_arrays_are_those_leidenalg_finds(seed: int, resolution: float) -> None:
    """A big graph's top level finds the nodes a move would improve in arrays; a small graph asks
    leidenalg's ``diff_move`` node by node. Both on the same partitions: a random one (most nodes
    improvable) and one close to a Leiden partition (a few)."""
    import igraph
    import leidenalg
    import numpy as np

    rng = random.Random(seed)
    graph = igraph.Graph.Erdos_Renyi(300, 0.03, loops=False)
    graph.es["weight"] = [rng.choice([1.0, 2.0, rng.uniform(0.1, 4.0)]) for _ in range(graph.ecount())]
    edges = np.array(graph.get_edgelist(), dtype=np.int64).reshape(-1, 2)
    arrays = (edges[:, 0], edges[:, 1], np.asarray(graph.es["weight"], dtype=np.float64))
    good = leidenalg.find_partition(
        graph, leidenalg.RBConfigurationVertexPartition, weights="weight", resolution_parameter=resolution, seed=seed
    ).membership
    nudged = list(good)
    for v in rng.sample(range(300), 12):
        nudged[v] = rng.choice(nudged)
    for membership in ([rng.randrange(20) for _ in range(300)], nudged):
        labels = _connected_labels(graph, membership)
        leiden = _improvable(graph, labels, resolution)
        assert _improvable(graph, labels, resolution, arrays) == leiden
        assert leiden and len(leiden) < 300


@pytest.mark.parametrize("tie", [False, True])
def test_the_largest_component_cut_in_arrays_is_the_graph_cut(tie: bool) -> None:
    """Big graphs are cut to their largest component before igraph builds them: the same
    vertices, edges and weights, in the same order, as cutting the built graph (the smallest
    title wins a tie)."""
    small = [("M0", "M1", 2.0), ("M1", "M2", 1.0)] + ([("M2", "M3", 1.0)] if tie else [])
    frame = edge_frame(noisy_groups("B", n_groups=1, size=4)[:3] + small + noisy_groups("Z", n_groups=2, size=10))
    coded = edges_of_frame(frame)
    cut = graph_from_codes(_largest_component(coded))
    expected = _keep_largest_component(graph_from_codes(coded))
    assert cut.vs["name"] == expected.vs["name"] and cut.vcount() < coded.names.len()
    assert cut.get_edgelist() == expected.get_edgelist()
    assert cut.es["weight"] == expected.es["weight"]


@pytest.mark.parametrize("use_lcc", [True, False])
def test_a_big_graphs_warm_start_in_arrays_equals_the_small_graphs(use_lcc: bool) -> None:
    """The graspologic backend (a big graph's) warm-starts the top level on arrays, igraph's on
    the graph: every node labelled before, the hierarchies are the same."""
    base = noisy_groups("N", seed=4) + noisy_groups("S", n_groups=1, size=6)
    previous = hierarchical_leiden(edge_frame(base), LeidenOptions(backend="igraph", use_lcc=use_lcc))
    rng = random.Random(5)
    edited = base + [(f"N{rng.randrange(160):03d}", f"N{rng.randrange(160):03d}", 3.0) for _ in range(25)]
    runs = {
        backend: warm_start_hierarchy(edge_frame(edited), previous, stable(backend=backend, use_lcc=use_lcc))
        for backend in ("igraph", "graspologic")
    }
    assert runs["graspologic"].equals(runs["igraph"])
    assert member_sets(runs["igraph"]) != member_sets(previous)  # the edit moved nodes


def test_a_community_cut_in_two_by_a_deletion_is_split() -> None:
    # two triangles joined through X; previously one community {A1..A3, X, B1..B3} at level 0
    edges = clique(["A1", "A2", "A3"]) + clique(["B1", "B2", "B3"]) + [("X", "A1", 1.0), ("X", "B1", 1.0)]
    previous = pl.DataFrame(
        {"node": ["A1", "A2", "A3", "B1", "B2", "B3", "X"], "community": [0] * 7, "level": [0] * 7, "parent": [-1] * 7}
    )
    without_x = [e for e in edges if "X" not in e[:2]]
    after = warm_start_hierarchy(edge_frame(without_x), previous, stable(use_lcc=False))
    assert member_sets(after) == {(0, ("A1", "A2", "A3")), (0, ("B1", "B2", "B3"))}


# --- drift and when to re-cluster -----------------------------------------------------------------


def merged_cliques() -> tuple[pl.DataFrame, pl.DataFrame]:
    """Two 6-cliques joined by one edge, and a previous partition that lumps them together.

    No single node gains by moving (its clique mates are all in its own community), so a warm
    start keeps the lump, whose modularity is far below the two-community fresh clustering.
    """
    a, b = [f"A{i}" for i in range(6)], [f"B{i}" for i in range(6)]
    edges = edge_frame(clique(a) + clique(b) + [("A0", "B0", 1.0)])
    nodes = sorted(a + b)
    previous = pl.DataFrame({"node": nodes, "community": [0] * 12, "level": [0] * 12, "parent": [-1] * 12})
    return edges, previous


def test_drift_above_the_threshold_triggers_a_fresh_clustering() -> None:
    edges, previous = merged_cliques()
    outcome = cluster_for_update(
        edges, ClusteringRequest(stable(max_cluster_size=20), previous=previous, warm_starts=3)
    )
    assert outcome.strategy == "fresh" and "drift" in outcome.reason
    assert outcome.assignments.equals(hierarchical_leiden(edges, LeidenOptions(max_cluster_size=20)))
    assert outcome.drift == 0.0 and outcome.warm_starts == 0


def test_drift_below_the_threshold_keeps_the_warm_partition_and_reports_the_drift() -> None:
    edges, previous = merged_cliques()
    outcome = cluster_for_update(
        edges, ClusteringRequest(stable(max_cluster_size=20, drift_threshold=1.5), previous=previous, warm_starts=3)
    )
    assert outcome.strategy == "warm" and outcome.warm_starts == 4
    assert len(member_sets(outcome.assignments)) == 1
    expected = modularity_drift(outcome.fresh_modularity, partition_modularity(edges, previous))
    assert outcome.drift == pytest.approx(expected) and outcome.drift > 0.9  # one lump has modularity 0


@pytest.mark.parametrize(
    ("settings", "request_args", "reason"),
    [
        (CommunitySettings(), {}, "exact mode"),
        (stable(), {"previous": None}, "no previous communities"),
        (stable(), {"recluster": True}, "re-cluster requested"),
        (stable(recluster_every=2), {"warm_starts": 2}, "scheduled after 2"),
    ],
)
def test_fresh_clustering_reasons(settings: CommunitySettings, request_args: dict, reason: str) -> None:
    edges = edge_frame(noisy_groups("N"))
    args = {"previous": hierarchical_leiden(edges), **request_args}
    outcome = cluster_for_update(edges, ClusteringRequest(settings, **args))
    assert outcome.strategy == "fresh" and reason in outcome.reason
    assert outcome.assignments.equals(hierarchical_leiden(edges))


def test_schedule_not_yet_due_warm_starts() -> None:
    edges = edge_frame(noisy_groups("N"))
    outcome = cluster_for_update(
        edges, ClusteringRequest(stable(recluster_every=2), previous=hierarchical_leiden(edges), warm_starts=1)
    )
    assert outcome.strategy == "warm" and outcome.warm_starts == 2


def test_between_measurements_drift_is_taken_against_the_last_fresh_modularity() -> None:
    edges = edge_frame(noisy_groups("N"))
    settings = stable(drift_every=3)
    measured = partition_modularity(edges, fresh_top_level(edges_of_frame(edges), settings))
    recorded = FreshModularity(measured + 0.001, drift_age=1)  # not what a fresh run would measure
    request = ClusteringRequest(settings, previous=hierarchical_leiden(edges), last_fresh=recorded)
    carried = cluster_for_update(edges, request)
    assert carried.strategy == "warm" and carried.drift_age == 2 and "2 update(s) ago" in carried.reason
    assert carried.fresh_modularity == recorded.value
    assert carried.drift == pytest.approx(modularity_drift(recorded.value, carried.modularity))
    due = cluster_for_update(
        edges, ClusteringRequest(settings, previous=request.previous, last_fresh=FreshModularity(recorded.value, 2))
    )
    assert due.strategy == "warm" and due.drift_age == 0 and due.fresh_modularity == pytest.approx(measured)


def test_an_estimated_drift_above_the_threshold_is_measured_before_it_decides() -> None:
    edges = edge_frame(noisy_groups("N"))
    previous = hierarchical_leiden(edges)
    request = ClusteringRequest(stable(), previous=previous, last_fresh=FreshModularity(0.99, drift_age=0))
    outcome = cluster_for_update(edges, request)  # the estimate is far above 2%; the measured drift is not
    assert outcome.strategy == "warm" and outcome.drift_age == 0 and outcome.fresh_modularity < 0.9
    assert outcome.drift <= 0.02


def test_the_last_fresh_modularity_is_read_from_what_the_last_run_recorded() -> None:
    assert last_fresh_modularity({"fresh_modularity": 0.41, "drift_age": 3}) == FreshModularity(0.41, 3)
    assert last_fresh_modularity({"fresh_modularity": 0.41, "warm_starts": 3}) is None  # older code's row
    assert last_fresh_modularity({}) is None


def test_modularity_drift() -> None:
    assert modularity_drift(0.5, 0.49) == pytest.approx(0.02)
    assert modularity_drift(0.5, 0.6) == pytest.approx(-0.2)
    assert modularity_drift(0.0, 0.1) == 0.0
    assert modularity_drift(float("nan"), 0.1) == 0.0


def test_previous_assignments_turn_entity_ids_into_titles_and_drop_deleted_entities() -> None:
    titles = ["A1", "A2", "A3", "B1", "B2", "B3"]
    entities = pl.DataFrame({"id": [entity_id(t) for t in titles], "title": titles})
    relationships = pl.DataFrame(
        {
            "id": [f"r{i}" for i in range(7)],
            "source": ["A1", "A1", "A2", "B1", "B1", "B2", "A1"],
            "target": ["A2", "A3", "A3", "B2", "B3", "B3", "B1"],
            "weight": [1.0] * 7,
            "text_unit_ids": [["t"]] * 7,
        }
    )
    table = build_communities(entities, relationships, period="2026-01-01")
    remaining = entities.filter(pl.col("title") != "B3")
    previous = previous_assignments(table, remaining)
    assert previous is not None and "B3" not in previous["node"].to_list()
    assert sorted(previous["node"].to_list()) == ["A1", "A2", "A3", "B1", "B2"]
    assert previous_assignments(None, entities) is None


@pytest.mark.parametrize("backend", ["igraph", "graspologic"])
def test_the_fresh_top_level_a_drift_is_measured_on_is_level_0_of_the_whole_hierarchy(backend: str) -> None:
    edges = edges_of_frame(edge_frame(noisy_groups("G", n_groups=12, size=25) + noisy_groups("H", seed=3)))
    settings = stable(backend=backend, max_cluster_size=5)
    whole = hierarchical_leiden(edges, leiden_options(settings))
    assert whole["level"].max() >= 2  # a hierarchy with levels under the top one
    top = fresh_top_level(edges, settings)
    assert top.equals(whole.filter(pl.col("level") == 0))
