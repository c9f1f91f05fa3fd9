"""Graph ranking of local search: the graph, the walk's scores, and the ranked candidates.

Expected scores come from a power iteration written here, on an adjacency matrix written down by
hand from the module's rules, so the test checks igraph's result and our graph construction
against an independent computation.
"""

from __future__ import annotations

import asyncio

import numpy as np
import polars as pl
import pytest

from graphrag_assets.core.ids import entity_id, stable_uuid
from graphrag_assets.core.schemas import COMMUNITIES, COMMUNITY_REPORTS, ENTITIES, RELATIONSHIPS, TEXT_UNITS, conform
from graphrag_assets.core.settings import LocalSearchSettings, QuerySettings
from graphrag_assets.query.array_index import ArrayVectorIndex, best_first
from graphrag_assets.query.graph_ranking import (
    GraphQuery,
    build_ranking_graph,
    personalized_pagerank,
    rank_by_graph,
    ranking_graph,
    restart_distribution,
)
from graphrag_assets.query.local_search import local_search
from graphrag_assets.query.query_data import QueryData
from graphrag_assets_tests.test_query_local import ScriptedChat, ScriptedEmbedder, request

TITLES = ["A", "B", "C", "D"]
UNITS = ["u1", "u2", "u3", "u4"]
MENTIONS = {"A": ["u1"], "B": ["u2"], "C": ["u3"], "D": []}  # u4: mentioned by no entity
# (source, target, weight): the mean positive weight is 3; A-D (weight 0) and A-GHOST (no such entity) are no edges
RELATIONSHIPS_ROWS = [("A", "B", 2.0), ("B", "C", 4.0), ("A", "D", 0.0), ("A", "GHOST", 1.0)]
# vertices: A B C D u1 u2 u3 u4
ADJACENCY = np.zeros((8, 8))
for a, b, w in [(0, 1, 2 / 3), (1, 2, 4 / 3), (0, 4, 1.0), (1, 5, 1.0), (2, 6, 1.0)]:
    ADJACENCY[a, b] = ADJACENCY[b, a] = w


def power_iteration(adjacency: np.ndarray, reset: np.ndarray, damping: float, steps: int = 500) -> np.ndarray:
    """Personalized PageRank by iterating p <- (1 - d) r + d (p P + dangling mass * r)."""
    strength = adjacency.sum(axis=1)
    transition = np.divide(adjacency, strength[:, None], out=np.zeros_like(adjacency), where=strength[:, None] > 0)
    restart = reset / reset.sum()
    scores = restart.copy()
    for _ in range(steps):
        dangling = scores[strength == 0].sum()
        scores = (1 - damping) * restart + damping * (scores @ transition + dangling * restart)
    return scores


def frames() -> dict[str, pl.DataFrame]:
    entities = pl.DataFrame(
        {
            "id": [entity_id(t) for t in TITLES],
            "human_readable_id": list(range(4)),
            "title": TITLES,
            "type": ["PERSON"] * 4,
            "description": [f"about {t}" for t in TITLES],
            "text_unit_ids": [MENTIONS[t] for t in TITLES],
        },
        schema={k: ENTITIES[k] for k in ("id", "human_readable_id", "title", "type", "description", "text_unit_ids")},
    )
    relationships = pl.DataFrame(
        {
            "id": [f"r{i}" for i in range(len(RELATIONSHIPS_ROWS))],
            "human_readable_id": list(range(len(RELATIONSHIPS_ROWS))),
            "source": [r[0] for r in RELATIONSHIPS_ROWS],
            "target": [r[1] for r in RELATIONSHIPS_ROWS],
            "description": [f"{r[0]} and {r[1]}" for r in RELATIONSHIPS_ROWS],
            "weight": [r[2] for r in RELATIONSHIPS_ROWS],
        },
    )
    text_units = pl.DataFrame(
        {"id": UNITS, "human_readable_id": list(range(4)), "text": [f"text of {u}" for u in UNITS]}
    )
    # community: (level, parent, members)
    tree = {0: (0, -1, ["A", "D"]), 1: (0, -1, ["B", "C"]), 2: (1, 1, ["C"])}
    communities = pl.DataFrame(
        {
            "id": [stable_uuid("community", c) for c in tree],
            "human_readable_id": list(tree),
            "community": list(tree),
            "level": [v[0] for v in tree.values()],
            "parent": [v[1] for v in tree.values()],
            "entity_ids": [[entity_id(t) for t in v[2]] for v in tree.values()],
        }
    )
    reports = pl.DataFrame(
        {
            "id": [stable_uuid("report", c) for c in tree],
            "human_readable_id": list(tree),
            "community": list(tree),
            "level": [v[0] for v in tree.values()],
            "title": [f"Report {c}" for c in tree],
            "summary": [f"summary {c}" for c in tree],
            "full_content": [f"report {c}" for c in tree],
            "rank": [1.0, 1.0, 9.0],
        }
    )
    return {
        "entities": conform(entities, ENTITIES),
        "relationships": conform(relationships, RELATIONSHIPS),
        "text_units": conform(text_units, TEXT_UNITS),
        "communities": conform(communities, COMMUNITIES),
        "community_reports": conform(reports, COMMUNITY_REPORTS),
    }


def query_data(passage_vectors: list[list[float]] | None = None) -> QueryData:
    """The index; vector search maps the question (1, 0) to entity A only."""
    return QueryData(
        **frames(),
        entity_description=ArrayVectorIndex([entity_id("A"), entity_id("B")], [[1.0, 0.0], [0.0, 1.0]]),
        text_unit_text=ArrayVectorIndex(UNITS, passage_vectors or [[0.0, 1.0]] * 4),
    )


# --- the walk ------------------------------------------------------------------------------------


@pytest.mark.parametrize("damping", [0.5, 0.3])
def test_two_vertices_match_the_closed_form(damping):
    f = frames()
    graph = build_ranking_graph(
        f["entities"].head(1), f["relationships"].head(0), f["text_units"].head(1), f["communities"].head(0)
    )
    scores = personalized_pagerank(graph, np.array([1.0, 0.0]), damping)
    # p_A = (1 - d) + d p_U and p_U = d p_A  =>  p_A = 1 / (1 + d), p_U = d / (1 + d)
    assert scores == pytest.approx([1 / (1 + damping), damping / (1 + damping)], abs=1e-9)


def directed_edges(graph) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Source, target and step probability of every directed edge of the walk's matrix."""
    walk = graph.walk
    return walk.sources, np.repeat(np.arange(walk.vertex_count), np.diff(walk.indptr)), walk.probability


def test_graph_edges_and_scores_equal_a_power_iteration():
    f = frames()
    graph = build_ranking_graph(f["entities"], f["relationships"], f["text_units"], f["communities"])
    source, target, probability = directed_edges(graph)
    assert graph.vertex_count == 8 and len(source) == 2 * 5  # each edge both ways
    steps = np.zeros((8, 8))
    np.add.at(steps, (source, target), probability)
    strength = ADJACENCY.sum(axis=1, keepdims=True)
    assert steps == pytest.approx(np.divide(ADJACENCY, strength, out=np.zeros_like(ADJACENCY), where=strength > 0))
    reset = np.array([1.0, 0.0, 0.0, 0.0, 0.0, 0.3, 0.0, 0.2])
    assert personalized_pagerank(graph, reset, 0.5) == pytest.approx(power_iteration(ADJACENCY, reset, 0.5), abs=1e-9)


def test_scores_equal_igraph_prpack_on_a_random_weighted_graph():
    import igraph as ig

    rng = np.random.default_rng(7)
    n_entities, n_units = 40, 20
    titles = [f"E{i}" for i in range(n_entities)]
    units = [f"t{j}" for j in range(n_units)]
    pairs = {tuple(sorted(p)) for p in rng.integers(0, n_entities - 3, (120, 2)).tolist() if p[0] != p[1]}  # 3 isolated
    entities = conform(
        pl.DataFrame(
            {
                "id": titles,
                "title": titles,
                "text_unit_ids": [
                    [units[j] for j in rng.choice(n_units, 2, replace=False)] if i < n_entities - 3 else []
                    for i in range(n_entities)
                ],
            }
        ),
        ENTITIES,
    )
    relationships = conform(
        pl.DataFrame(
            {
                "source": [titles[a] for a, _ in pairs],
                "target": [titles[b] for _, b in pairs],
                "weight": rng.random(len(pairs)) * 5 + 0.1,
            }
        ),
        RELATIONSHIPS,
    )
    graph = build_ranking_graph(
        entities, relationships, conform(pl.DataFrame({"id": units}), TEXT_UNITS), frames()["communities"].head(0)
    )
    source, target, probability = directed_edges(graph)
    # the walk as igraph sees it: each direction weighted by its step probability
    reference = ig.Graph(n=graph.vertex_count, edges=np.column_stack([source, target]).tolist(), directed=True)
    reset = np.zeros(graph.vertex_count)
    reset[[0, 5, n_entities - 1, n_entities + 3]] = [0.5, 0.2, 0.2, 0.1]  # one seed is isolated
    for damping in (0.5, 0.85):
        expected = reference.personalized_pagerank(
            directed=True,
            damping=damping,
            reset=reset.tolist(),
            weights=probability.tolist(),
            implementation="prpack",
        )
        assert personalized_pagerank(graph, reset, damping) == pytest.approx(expected, abs=1e-9)


def test_an_isolated_vertex_sends_its_walker_back_to_the_restart_distribution():
    f = frames()
    graph = build_ranking_graph(f["entities"], f["relationships"], f["text_units"], f["communities"])
    only_d = np.array([0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0])
    assert personalized_pagerank(graph, only_d, 0.5) == pytest.approx(only_d)
    assert not personalized_pagerank(graph, np.zeros(8), 0.5).any()


def test_restart_distribution_weighs_seeds_by_mentions_and_adds_passage_mass():
    f = frames()
    entities = f["entities"].with_columns(pl.Series("text_unit_ids", [["u1", "u2"], ["u2"], ["u3"], []]))
    graph = build_ranking_graph(entities, f["relationships"], f["text_units"], f["communities"])
    seeds = [(entity_id("A"), 0.8), (entity_id("B"), 0.2), ("not-an-entity", 5.0)]
    passages = [("u4", 0.9), ("u2", 0.5), ("u3", 0.1), ("not-a-unit", 0.7)]
    reset = restart_distribution(graph, seeds, passages, passage_weight=0.05)
    # A: 0.8 / 2 units, B: 0.2 / 1 unit -> 0.4 and 0.2, normalized to 2/3 and 1/3;
    # passages divided by the best known one (0.9, 0.5, 0.1) -> 1, 5/9, 1/9, times 0.05
    assert reset == pytest.approx([2 / 3, 1 / 3, 0, 0, 0, 0.05 * 5 / 9, 0.05 / 9, 0.05])
    negative = restart_distribution(graph, [], [("u1", -0.2), ("u2", 0.0)], passage_weight=0.05)
    assert not negative.any()  # no passage is similar to the question: no passage mass


# --- ranking -------------------------------------------------------------------------------------


def test_candidates_follow_the_walk_from_the_seed_entity():
    data = query_data()
    settings = LocalSearchSettings(top_k_entities=3, top_k_relationships=1)
    hits = data.entity_description.search([1.0, 0.0], 2)
    ranked = rank_by_graph(GraphQuery("What about A?", [1.0, 0.0], hits), data, settings, community_level=None)

    # the only seed is A (B's similarity is 0); no passage is similar to the question (all 0)
    reset = np.array([1.0, 0, 0, 0, 0, 0, 0, 0])
    expected = power_iteration(ADJACENCY, reset, 0.5)
    by_score = lambda names, score: sorted(names, key=lambda n: -score[n])  # noqa: E731
    entity_score = dict(zip(TITLES, expected[:4]))
    assert ranked.entities["title"].to_list() == by_score(["A", "B", "C"], entity_score)  # D is never reached
    assert ranked.text_units["id"].to_list() == by_score(
        ["u1", "u2", "u3"], dict(zip(UNITS, expected[4:]))
    )  # u4: never reached
    # relationships touching A, B, C by the sum of their ends' scores, at most 1 per entity
    pair_score = {
        r: entity_score[r[0]] + entity_score.get(r[1], 0.0) for r in [(s, t) for s, t, _ in RELATIONSHIPS_ROWS]
    }
    assert [tuple(r) for r in ranked.relationships.select("source", "target").rows()] == sorted(
        pair_score, key=lambda r: -pair_score[r]
    )[:3]
    # reports by their members' summed scores: {A, D}, {B, C}, {C}
    report_score = {0: entity_score["A"], 1: entity_score["B"] + entity_score["C"], 2: entity_score["C"]}
    assert ranked.reports["community"].to_list() == sorted(report_score, key=lambda c: -report_score[c])


def test_community_level_limits_the_reports():
    data = query_data()
    hits = data.entity_description.search([1.0, 0.0], 2)
    ranked = rank_by_graph(
        GraphQuery("What about A?", [1.0, 0.0], hits), data, LocalSearchSettings(top_k_entities=3), 0
    )
    assert sorted(ranked.reports["community"].to_list()) == [0, 1]


def test_passages_alone_rank_when_no_entity_seeds():
    # unit u3 matches the question best; no entity is similar to the question
    data = query_data(passage_vectors=[[0.0, 1.0], [0.0, 1.0], [1.0, 0.0], [0.0, 1.0]])
    data.entity_description = ArrayVectorIndex([entity_id("B")], [[0.0, 1.0]])
    hits = data.entity_description.search([1.0, 0.0], 2)
    ranked = rank_by_graph(GraphQuery("q", [1.0, 0.0], hits), data, LocalSearchSettings(top_k_entities=2), None)
    assert ranked.text_units["id"].to_list()[0] == "u3"
    assert ranked.entities["title"].to_list() == ["C", "B"]  # C holds u3; B is one step further


def test_local_search_uses_the_graph_ranking_by_default():
    data = query_data()
    result = asyncio.run(
        local_search(
            request(
                "What about A?",
                data,
                ScriptedChat({"query_local": "ok"}),
                ScriptedEmbedder(default=(1.0, 0.0)),
                QuerySettings(),
            )
        )
    )
    assert result.details["ranking"] == "graph"
    sources = result.context_text.split("-----Sources-----")[1]
    assert [line.split("|")[1] for line in sources.strip().splitlines()[1:]] == [
        "text of u1",
        "text of u2",
        "text of u3",
    ]
    assert result.details["mapped_entities"] == ["A", "B", "C"]


# --- the cached graph ----------------------------------------------------------------------------


def test_the_graph_is_built_once_per_loaded_index():
    data = query_data()
    first = ranking_graph(data)
    assert ranking_graph(data) is first
    assert ranking_graph(query_data()) is not first  # another loaded index
    data.entities = data.entities.head(3)  # the frames changed: the cached graph no longer describes them
    rebuilt = ranking_graph(data)
    assert rebuilt is not first and rebuilt.entity_count == 3


def test_best_first_is_a_stable_sort_s_first_k() -> None:
    """The partial selection behind vector search and the walk's top rows keeps a full stable sort's order."""
    generator = np.random.default_rng(3)
    for trial in range(2_000):
        n = int(generator.integers(1, 60))
        scores = generator.integers(0, 4, n).astype(float) if trial % 2 else generator.random(n)  # ties, or none
        if trial % 7 == 0:
            scores[generator.integers(0, n)] = np.nan
        k = int(generator.integers(0, n + 3))
        assert best_first(scores, k).tolist() == np.argsort(-scores, kind="stable")[:k].tolist(), (scores, k)
