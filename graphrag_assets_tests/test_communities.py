"""Hierarchical Leiden communities and the hierarchy checks, on small hand-made graphs."""

from __future__ import annotations

import itertools
import json
import random
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import igraph
import polars as pl
import pytest

from graphrag_assets.core.ids import stable_uuid
from graphrag_assets.core.schemas import COMMUNITIES
from graphrag_assets.core.settings import CommunitySettings
from graphrag_assets.index.communities import (
    ASSIGNMENTS,
    LeidenOptions,
    build_communities,
    hierarchical_leiden,
    normalize_edges,
    partition_modularity,
)
from graphrag_assets.index.community_checks import check_hierarchy
from graphrag_assets.index.stable_communities import ClusteringRequest, communities_for_update
from graphrag_assets_testkit.shared_data import MS_VERBS_DATA, require

BACKENDS = ["igraph", "leidenalg"]
PROJECT_ROOT = Path(__file__).resolve().parents[1]


def clique(names: list[str], weight: float = 1.0) -> list[tuple[str, str, float]]:
    return [(a, b, weight) for a, b in itertools.combinations(names, 2)]


def edge_frame(edges: list[tuple[str, str, float]]) -> pl.DataFrame:
    schema = {"source": pl.String, "target": pl.String, "weight": pl.Float64}
    return pl.DataFrame(edges, schema=schema, orient="row")


def clusters(assignments: pl.DataFrame) -> list[tuple[int, int, int, list[str]]]:
    """(level, community, parent, sorted members) per community, in community order."""
    return (
        assignments.group_by("level", "community", "parent")
        .agg(pl.col("node").sort())
        .sort("level", "community")
        .rows()
    )


def names(prefix: str, n: int) -> list[str]:
    return [f"{prefix}{i}" for i in range(n)]


def grouped_ring(groups: str, *, bridge: float, hub: bool = False) -> list[tuple[str, str, float]]:
    """Groups of two K4s (joined by a bridge, or through a hub node), the groups in a ring."""
    edges = []
    for g in groups:
        a, b = names(f"{g}A", 4), names(f"{g}B", 4)
        edges += clique(a) + clique(b)
        if hub:
            edges += [(f"{g}H", a[0], bridge), (f"{g}H", b[0], bridge), (a[1], b[1], bridge)]
        else:
            edges.append((a[0], b[0], bridge))
    for g, nxt in zip(groups, groups[1:] + groups[0]):
        edges.append((f"{g}B2", f"{nxt}A2", 1.0))
    return edges


def planted_edges(n_groups: int = 12, group_size: int = 25, seed: int = 3) -> pl.DataFrame:
    """A few hundred nodes with noisy community structure: enough for randomness to matter."""
    rng = random.Random(seed)
    nodes = [f"N{i:04d}" for i in range(n_groups * group_size)]
    rows = []
    for _ in range(len(nodes) * 4):
        u = rng.randrange(len(nodes))
        if rng.random() < 0.8:
            v = (u // group_size) * group_size + rng.randrange(group_size)
        else:
            v = rng.randrange(len(nodes))
        rows.append((nodes[u], nodes[v], float(rng.randint(1, 9))))
    return edge_frame(rows)


# --- edge normalization ------------------------------------------------------------------------


def test_normalize_edges_merges_directions_sums_weights_and_drops_self_loops() -> None:
    edges = pl.DataFrame(
        {
            "source": ["B", "A", "A", "C", "D"],
            "target": ["A", "B", "A", "B", "C"],
            "weight": [2.0, 3.0, 5.0, None, 0.5],
        }
    )
    assert normalize_edges(edges).rows() == [("A", "B", 5.0), ("B", "C", 1.0), ("C", "D", 0.5)]


def test_normalize_edges_without_weight_column_counts_each_row_once() -> None:
    edges = pl.DataFrame({"source": ["X", "Y"], "target": ["Y", "X"]})
    assert normalize_edges(edges).rows() == [("X", "Y", 2.0)]


def test_negative_weights_are_rejected() -> None:
    with pytest.raises(ValueError, match="negative or non-finite"):
        normalize_edges(edge_frame([("A", "B", -1.0)]))


# --- hierarchical_leiden -----------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_two_cliques_joined_by_one_edge_give_two_communities(backend: str) -> None:
    left, right = list("ABCDE"), list("FGHIJ")
    edges = edge_frame(clique(right) + clique(left) + [("E", "F", 1.0)])
    result = hierarchical_leiden(edges, LeidenOptions(backend=backend))
    assert result.schema == pl.Schema(ASSIGNMENTS)
    assert clusters(result) == [(0, 0, -1, left), (0, 1, -1, right)]


@pytest.mark.parametrize("backend", BACKENDS)
def test_large_clusters_are_split_into_the_next_level(backend: str) -> None:
    # At level 0 the resolution limit merges each pair of K4s; on its own subgraph a pair splits.
    edges = edge_frame(grouped_ring("PQRS", bridge=2.0))
    result = hierarchical_leiden(edges, LeidenOptions(max_cluster_size=8, backend=backend))
    expected = [(0, i, -1, names(f"{g}A", 4) + names(f"{g}B", 4)) for i, g in enumerate("PQRS")]
    for i, g in enumerate("PQRS"):
        expected += [(1, 4 + 2 * i, i, names(f"{g}A", 4)), (1, 5 + 2 * i, i, names(f"{g}B", 4))]
    assert clusters(result) == expected


@pytest.mark.parametrize("backend", BACKENDS)
def test_cluster_too_small_to_split_is_not_reclustered(backend: str) -> None:
    edges = edge_frame(grouped_ring("PQRS", bridge=2.0))
    result = hierarchical_leiden(edges, LeidenOptions(max_cluster_size=9, backend=backend))
    assert result["level"].unique().to_list() == [0]
    assert result["community"].n_unique() == 4


@pytest.mark.parametrize("backend", BACKENDS)
def test_cluster_that_cannot_be_split_stays_a_leaf(backend: str) -> None:
    big_a, big_b = [f"A{i:02d}" for i in range(12)], [f"B{i:02d}" for i in range(12)]
    edges = edge_frame(clique(big_a) + clique(big_b) + [("A00", "B00", 1.0)])
    result = hierarchical_leiden(edges, LeidenOptions(max_cluster_size=10, backend=backend))
    assert clusters(result) == [(0, 0, -1, big_a), (0, 1, -1, big_b)]


@pytest.mark.parametrize("backend", BACKENDS)
def test_use_lcc_keeps_only_the_largest_component(backend: str) -> None:
    # The smaller component holds the smallest title, so "first component" would be wrong.
    edges = edge_frame(clique(list("ABC")) + clique(list("PQRST")))
    assert clusters(hierarchical_leiden(edges, LeidenOptions(backend=backend))) == [(0, 0, -1, list("PQRST"))]
    assert clusters(hierarchical_leiden(edges, LeidenOptions(backend=backend, use_lcc=False))) == [
        (0, 0, -1, list("PQRST")),
        (0, 1, -1, list("ABC")),
    ]


def test_equal_size_components_keep_the_one_with_the_smallest_title() -> None:
    first, second = clique(list("PQR")), clique(list("ABC"))
    for rows in (first + second, second + first):
        assert clusters(hierarchical_leiden(edge_frame(rows))) == [(0, 0, -1, list("ABC"))]


@pytest.mark.parametrize("backend", BACKENDS)
def test_weights_decide_the_communities(backend: str) -> None:
    ring = list("ABCDEF")
    heavy_even = [(ring[i], ring[(i + 1) % 6], 5.0 if i % 2 == 0 else 1.0) for i in range(6)]
    heavy_odd = [(ring[i], ring[(i + 1) % 6], 1.0 if i % 2 == 0 else 5.0) for i in range(6)]
    assert clusters(hierarchical_leiden(edge_frame(heavy_even), LeidenOptions(backend=backend))) == [
        (0, 0, -1, ["A", "B"]),
        (0, 1, -1, ["C", "D"]),
        (0, 2, -1, ["E", "F"]),
    ]
    assert clusters(hierarchical_leiden(edge_frame(heavy_odd), LeidenOptions(backend=backend))) == [
        (0, 0, -1, ["A", "F"]),
        (0, 1, -1, ["B", "C"]),
        (0, 2, -1, ["D", "E"]),
    ]


@pytest.mark.parametrize("backend", BACKENDS)
def test_resolution_changes_the_communities(backend: str) -> None:
    edges = []
    for c in "ABC":
        edges += clique(names(c, 4)) + [("H", f"{c}0", 1.0)]
    frame = edge_frame(edges)
    hub_joins_a = (0, 0, -1, ["A0", "A1", "A2", "A3", "H"])
    assert clusters(hierarchical_leiden(frame, LeidenOptions(backend=backend)))[0] == hub_joins_a
    assert clusters(hierarchical_leiden(frame, LeidenOptions(backend=backend, resolution=1.5)))[3] == (0, 3, -1, ["H"])


@pytest.mark.parametrize("backend", BACKENDS)
def test_input_row_order_and_direction_do_not_change_the_result(backend: str) -> None:
    edges = planted_edges()
    shuffled = edges.sample(fraction=1.0, shuffle=True, seed=11).select(
        pl.col("target").alias("source"), pl.col("source").alias("target"), "weight"
    )
    expected = hierarchical_leiden(edges, LeidenOptions(backend=backend))
    assert expected["level"].max() >= 1
    assert hierarchical_leiden(shuffled, LeidenOptions(backend=backend)).equals(expected)


_CHILD = """
import json, random, sys
sys.path.insert(0, {root!r})
from graphrag_assets_tests.test_communities import planted_edges
from graphrag_assets.index.communities import LeidenOptions, hierarchical_leiden
random.seed(12345)  # a different global random state must not matter
print(json.dumps({{b: hierarchical_leiden(planted_edges(), LeidenOptions(backend=b)).rows() for b in {backends!r}}}))
"""


def test_result_is_identical_in_a_new_process() -> None:
    child = _CHILD.format(root=str(PROJECT_ROOT), backends=BACKENDS)
    out = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, check=True, cwd=PROJECT_ROOT)
    theirs = json.loads(out.stdout)
    for backend in BACKENDS:
        ours = [list(row) for row in hierarchical_leiden(planted_edges(), LeidenOptions(backend=backend)).rows()]
        assert theirs[backend] == ours, backend


def test_seed_is_used() -> None:
    edges = planted_edges()
    default = hierarchical_leiden(edges).rows()
    same = {hierarchical_leiden(edges, LeidenOptions(seed=s)).rows() == default for s in range(1, 6)}
    assert False in same  # some other seed gives a different hierarchy on this noisy graph


def test_igraph_random_generator_is_restored_and_global_random_untouched() -> None:
    random.seed(99)
    expected_next = random.random()
    random.seed(99)
    hierarchical_leiden(planted_edges(), LeidenOptions(backend="igraph"))
    assert random.random() == expected_next

    # igraph must be back on the global ``random`` module: seeding it makes igraph reproducible.
    graph = igraph.Graph.Famous("Zachary")
    memberships = []
    for _ in range(2):
        random.seed(7)
        memberships.append(graph.community_leiden(objective_function="modularity", n_iterations=1).membership)
    assert memberships[0] == memberships[1]


@pytest.mark.parametrize("backend", BACKENDS)
def test_empty_and_self_loop_only_input_give_empty_frames(backend: str) -> None:
    assert hierarchical_leiden(edge_frame([]), LeidenOptions(backend=backend)).schema == pl.Schema(ASSIGNMENTS)
    assert hierarchical_leiden(edge_frame([("A", "A", 1.0)]), LeidenOptions(backend=backend)).is_empty()


def test_invalid_arguments_are_rejected() -> None:
    with pytest.raises(ValueError, match="backend"):
        hierarchical_leiden(edge_frame([("A", "B", 1.0)]), LeidenOptions(backend="networkx"))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_cluster_size"):
        hierarchical_leiden(edge_frame([("A", "B", 1.0)]), LeidenOptions(max_cluster_size=0))


def test_partition_modularity_of_two_cliques() -> None:
    edges = edge_frame(clique(list("ABCDE")) + clique(list("FGHIJ")) + [("E", "F", 1.0)])
    # m = 21; each side has 10 internal edges and degree sum 21: Q = 2 * (10/21 - (21/42)^2)
    assert partition_modularity(edges, hierarchical_leiden(edges)) == pytest.approx(20 / 21 - 0.5)


# --- build_communities -------------------------------------------------------------------------


def tables(edges: list[tuple[str, str, float]], extra_titles: Sequence[str] = ()) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Entities (id e-<title>) and relationships (id r<i>, text unit t<i mod 3>) for an edge list."""
    titles = sorted({t for s, d, _ in edges for t in (s, d)} | set(extra_titles))
    entities = pl.DataFrame({"id": [f"e-{t}" for t in titles], "title": titles})
    relationships = pl.DataFrame(
        {
            "id": [f"r{i:02d}" for i in range(len(edges))],
            "source": [s for s, _, _ in edges],
            "target": [d for _, d, _ in edges],
            "weight": [w for _, _, w in edges],
            "text_unit_ids": [[f"t{i % 3}", f"t{i % 3}"] for i in range(len(edges))],
        }
    )
    return entities, relationships


@pytest.mark.parametrize("backend", BACKENDS)
def test_build_communities_two_cliques(backend: str) -> None:
    edges = clique(list("ABC")) + clique(list("DEF")) + [("C", "D", 1.0), ("B", "A", 1.0)]
    entities, relationships = tables(edges, extra_titles=["LONER"])
    table = build_communities(entities, relationships, period="2026-05-01", options=LeidenOptions(backend=backend))
    assert table.schema == pl.Schema(COMMUNITIES)
    left, right = ["e-A", "e-B", "e-C"], ["e-D", "e-E", "e-F"]
    assert table.rows(named=True) == [
        {
            "id": stable_uuid("community", 0, *left),
            "human_readable_id": 0,
            "community": 0,
            "level": 0,
            "parent": -1,
            "children": [],
            "title": "Community 0",
            "entity_ids": left,
            "relationship_ids": ["r00", "r01", "r02", "r07"],  # r07 = (B, A): both directions count
            "text_unit_ids": ["t0", "t1", "t2"],
            "period": "2026-05-01",
            "size": 3,
        },
        {
            "id": stable_uuid("community", 0, *right),
            "human_readable_id": 1,
            "community": 1,
            "level": 0,
            "parent": -1,
            "children": [],
            "title": "Community 1",
            "entity_ids": right,
            "relationship_ids": ["r03", "r04", "r05"],  # the bridge r06 is in neither
            "text_unit_ids": ["t0", "t1", "t2"],
            "period": "2026-05-01",
            "size": 3,
        },
    ]


@pytest.mark.parametrize("backend", BACKENDS)
def test_build_communities_keeps_singleton_children_so_children_partition_parents(backend: str) -> None:
    # Six groups of two K4s linked through a hub node; at resolution 1.5 each group is a level-0
    # community and splits into its two K4s and the hub alone, which has no internal relationship.
    entities, relationships = tables(grouped_ring("PQRSTU", bridge=1.0, hub=True))
    table = build_communities(
        entities, relationships, period="p", options=LeidenOptions(max_cluster_size=9, resolution=1.5, backend=backend)
    )
    assert table.group_by("level").agg(pl.len()).sort("level").rows() == [(0, 6), (1, 18)]
    first = table.row(0, named=True)
    assert first["entity_ids"] == [f"e-{t}" for t in names("PA", 4) + names("PB", 4) + ["PH"]]
    assert first["children"] == [6, 7, 8]
    hub = table.filter(pl.col("community") == 8).row(0, named=True)
    assert hub["entity_ids"] == ["e-PH"]
    assert (hub["relationship_ids"], hub["text_unit_ids"], hub["parent"]) == ([], [], 0)
    report = check_hierarchy(table, max_cluster_size=9)
    assert report.ok, report.problems
    assert report.levels == {0: 6, 1: 18}
    assert report.unsplit_oversized == []


def test_build_communities_ignores_relationships_to_unknown_entities() -> None:
    edges = clique(list("ABCD")) + [("D", "GHOST", 9.0), ("GHOST", "X", 9.0), ("X", "Y", 1.0)]
    entities, relationships = tables(edges)
    entities = entities.filter(pl.col("title") != "GHOST")
    table = build_communities(entities, relationships, period="p")
    # Without GHOST, X-Y is a separate component and the largest component is A-D.
    assert table["entity_ids"].to_list() == [["e-A", "e-B", "e-C", "e-D"]]


def test_build_communities_id_depends_only_on_level_and_members() -> None:
    edges = clique(list("ABC")) + clique(list("DEF")) + [("C", "D", 1.0)]
    entities, relationships = tables(edges)
    before = build_communities(entities, relationships, period="p")
    grown = edges + clique(list("DEF"), weight=3.0) + [("A", "B", 2.0)]  # heavier, same members
    entities2, relationships2 = tables(grown)
    after = build_communities(entities2, relationships2, period="q")
    assert before["id"].to_list() == after["id"].to_list()
    assert before["relationship_ids"].to_list() != after["relationship_ids"].to_list()


def test_exact_update_uses_every_clustering_setting() -> None:
    entities, relationships = tables(grouped_ring("PQRSTU", bridge=1.0, hub=True))
    fields = {"max_cluster_size": 9, "resolution": 1.5, "seed": 5, "backend": "leidenalg", "use_lcc": False}
    settings = CommunitySettings(**fields)
    direct = build_communities(entities, relationships, period="p", options=LeidenOptions(**fields))
    table, outcome = communities_for_update(entities, relationships, ClusteringRequest(settings), "p")
    assert table.equals(direct) and outcome.strategy == "fresh"
    assert direct.height == 24


@pytest.mark.parametrize("backend", BACKENDS)
def test_build_communities_on_empty_input_gives_empty_table_with_schema(backend: str) -> None:
    entities, relationships = tables([])
    relationships = relationships.cast({"text_unit_ids": pl.List(pl.String), "weight": pl.Float64})
    table = build_communities(entities, relationships, period="p", options=LeidenOptions(backend=backend))
    assert table.is_empty()
    assert table.schema == pl.Schema(COMMUNITIES)


# --- check_hierarchy ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def split_table() -> pl.DataFrame:
    entities, relationships = tables(grouped_ring("PQRS", bridge=2.0))
    return build_communities(entities, relationships, period="p", options=LeidenOptions(max_cluster_size=8))


def test_check_hierarchy_accepts_a_sound_table(split_table: pl.DataFrame) -> None:
    report = check_hierarchy(split_table, max_cluster_size=8)
    assert (report.ok, report.levels, report.unsplit_oversized) == (True, {0: 4, 1: 8}, [])


def test_check_hierarchy_lists_oversized_leaves() -> None:
    edges = clique([f"A{i:02d}" for i in range(12)]) + clique(list("XYZ")) + [("A00", "X", 1.0)]
    table = build_communities(*tables(edges), period="p", options=LeidenOptions(max_cluster_size=10))
    report = check_hierarchy(table, max_cluster_size=10)
    assert (report.ok, report.unsplit_oversized, report.unsplit_oversized_count) == (True, [0], 1)


def _broken(table: pl.DataFrame, target: int, changes: dict[str, object]) -> pl.DataFrame:
    return table.with_columns(
        pl.when(pl.col("community") == target).then(pl.lit(v, dtype=table.schema[k])).otherwise(pl.col(k)).alias(k)
        for k, v in changes.items()
    )


@pytest.mark.parametrize(
    ("community", "changes", "message"),
    [
        (0, {"parent": 3}, "level-0 communities with a parent: 0"),
        (4, {"parent": 42}, "parent is missing or not one level up: 4"),
        (4, {"level": 2}, "parent is missing or not one level up: 4"),
        (0, {"children": [4]}, "children lists that disagree with the parent column: 0"),
        (4, {"size": 5}, "size differs from the number of entity ids: 4"),
        (4, {"entity_ids": ["e-PA0", "e-PA1", "e-PA2"]}, "children do not partition their entities: 0"),
        (
            6,
            {"entity_ids": ["e-PA0", "e-QA0", "e-QA1", "e-QA2", "e-QA3"], "size": 5},
            "more than one community of the same level: e-PA0",
        ),
        (5, {"community": 4}, "community numbers used more than once: 4"),
    ],
)
def test_check_hierarchy_reports_each_broken_invariant(
    split_table: pl.DataFrame, community: int, changes: dict, message: str
) -> None:
    report = check_hierarchy(_broken(split_table, community, changes), max_cluster_size=8)
    assert not report.ok
    assert any(message in problem for problem in report.problems), report.problems


# --- Microsoft GraphRAG's index of A Christmas Carol -------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_christmas_carol_hierarchy(backend: str) -> None:
    entities = pl.read_parquet(require(MS_VERBS_DATA / "entities.parquet"))
    relationships = pl.read_parquet(require(MS_VERBS_DATA / "relationships.parquet"))
    table = build_communities(entities, relationships, period="2026-01-01", options=LeidenOptions(backend=backend))
    report = check_hierarchy(table, max_cluster_size=10)
    assert report.ok, report.problems
    assert table["id"].n_unique() == table.height
    level0 = table.filter(pl.col("level") == 0)
    assert level0["size"].sum() == level0["entity_ids"].list.explode().n_unique() > 400
    summary = (
        table.group_by("level")
        .agg(pl.len(), pl.col("size").min().alias("smallest"), pl.col("size").max().alias("largest"))
        .sort("level")
    )
    print(
        f"\n{backend}: {table.height} communities, levels {report.levels}, "
        f"unsplit >= 10: {report.unsplit_oversized_count}"
    )
    for level, count, smallest, largest in summary.rows():
        print(f"  level {level}: {count} communities, sizes {smallest}..{largest}")


def test_graph_from_codes_reads_every_batch_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    # Edges reach igraph through an iterator of batches; a batch smaller than the list must not
    # drop, repeat or reorder any edge or weight.
    from graphrag_assets.index import communities
    from graphrag_assets.index.coded_graph import edges_of_frame

    rng = random.Random(3)
    names = [f"N{i:03d}" for i in range(40)]
    rows = [(a, b, rng.random()) for a, b in itertools.combinations(names, 2) if rng.random() < 0.3]
    coded = edges_of_frame(normalize_edges(edge_frame(rows)))
    whole = communities.graph_from_codes(coded)
    monkeypatch.setattr(communities, "EDGE_BATCH", 7)
    batched = communities.graph_from_codes(coded)
    assert batched.get_edgelist() == whole.get_edgelist() == list(coded.edges.select("source", "target").iter_rows())
    assert batched.es["weight"] == whole.es["weight"] == coded.edges["weight"].to_list()
    assert batched.vs["name"] == names
