"""The communities step's graph in integer codes equals the string version it replaced.

The step clusters relationships coded against the entity titles and read in batches
(:mod:`graphrag_assets.index.coded_graph`), so its memory is bounded by the graph, not by the
strings of the relationships table. These tests pin that every coded result is the one the
string forms give: the normalized edge list, the modularity, the communities table (whatever the
batch size), and the internal link counts DuckDB makes for extractive reports.
"""

from __future__ import annotations

import random

import igraph
import polars as pl
import pytest

from graphrag_assets.core.ids import relationship_id
from graphrag_assets.core.settings import CommunitySettings
from graphrag_assets.index.coded_graph import code_relationships, coded_frame, edges_of_frame
from graphrag_assets.index.communities import hierarchical_leiden, normalize_edges, partition_modularity
from graphrag_assets.index.extractive_reports import _internal_links
from graphrag_assets.index.stable_communities import ClusteringRequest, communities_for_update, entity_titles
from graphrag_assets.storage.corpus import internal_link_counts, write_staged


def random_graph(seed: int, nodes: int = 120, edges: int = 600) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Entities and relationships of a random clustered graph, with the awkward rows a table can hold:
    reversed duplicates, self-loops, unknown endpoints and null weights."""
    rng = random.Random(seed)
    titles = [f"T{i:03d}" for i in range(nodes)]
    rows = []
    for _ in range(edges):
        group = rng.randrange(6)
        a = titles[rng.randrange(group * 20, group * 20 + 20)]
        b = titles[rng.randrange(nodes)] if rng.random() < 0.1 else titles[rng.randrange(group * 20, group * 20 + 20)]
        rows.append((a, b, rng.choice([None, 0.5, 1.0, 2.0])))
    rows += [("T001", "T001", 1.0), ("T002", "NOT AN ENTITY", 1.0), (None, "T003", 1.0)]
    units = [f"u{rng.randrange(40):02d}" for _ in rows]
    relationships = pl.DataFrame(
        {
            "id": [relationship_id(a or "", b or "") for a, b, _ in rows],
            "source": [a for a, _, _ in rows],
            "target": [b for _, b, _ in rows],
            "weight": [w for _, _, w in rows],
            "text_unit_ids": [[u, f"u{(int(u[1:]) + 1) % 40:02d}"] for u in units],
        },
        schema={
            "id": pl.String,
            "source": pl.String,
            "target": pl.String,
            "weight": pl.Float64,
            "text_unit_ids": pl.List(pl.String),
        },
    )
    entities = pl.DataFrame({"id": [f"id-{t}" for t in titles], "title": titles})
    return entities, relationships


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_coded_normalization_equals_the_string_one(seed: int) -> None:
    _, relationships = random_graph(seed)
    edges = relationships.select("source", "target", "weight")
    assert edges_of_frame(edges).frame().equals(normalize_edges(edges))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_modularity_on_codes_equals_igraphs(seed: int) -> None:
    _, relationships = random_graph(seed)
    edges = normalize_edges(relationships.select("source", "target", "weight"))
    assignments = hierarchical_leiden(edges)
    names = pl.concat([edges["source"], edges["target"]]).unique().sort().to_list()
    graph = igraph.Graph(
        n=len(names), edges=[(names.index(a), names.index(b)) for a, b in edges.select("source", "target").iter_rows()]
    )
    label = dict(assignments.filter(pl.col("level") == 0).select("node", "community").iter_rows())
    inside = [v for v, name in enumerate(names) if name in label]
    sub = graph.induced_subgraph(inside)
    weights = {(names.index(a), names.index(b)): w for a, b, w in edges.iter_rows()}
    sub.es["weight"] = [weights[(inside[e.source], inside[e.target])] for e in sub.es]
    expected = sub.modularity([label[names[v]] for v in inside], weights="weight", resolution=1.3)
    assert partition_modularity(edges, assignments, resolution=1.3) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("batch_rows", [1, 7, 10_000])
def test_communities_are_the_same_whatever_the_batches(batch_rows: int) -> None:
    entities, relationships = random_graph(4)
    request = ClusteringRequest(CommunitySettings(max_cluster_size=5))
    expected, _ = communities_for_update(entities, relationships, request, "2026-12-02")
    titles = entity_titles(entities)
    batches = [relationships.slice(start, batch_rows) for start in range(0, relationships.height, batch_rows)]
    unit_names = coded_frame(titles, relationships).unit_names
    coded = code_relationships(titles, batches, unit_names)
    table, _ = communities_for_update(entities, coded, request, "2026-12-02")
    assert table.equals(expected)
    assert table["relationship_ids"].list.len().sum() > 0 and table["text_unit_ids"].list.len().sum() > 0


def test_link_counts_match_the_frames(tmp_path) -> None:
    entities, relationships = random_graph(5)
    communities, _ = communities_for_update(
        entities, relationships, ClusteringRequest(CommunitySettings(max_cluster_size=5)), "2026-12-02"
    )
    database = tmp_path / "graph.duckdb"
    write_staged(database, "relationships", relationships)
    write_staged(database, "communities", communities)
    assert internal_link_counts(database) == _internal_links(communities, relationships)
    # ids the relationships table does not hold are not counted
    write_staged(database, "relationships", relationships.slice(0, 100))
    assert internal_link_counts(database) == _internal_links(communities, relationships.slice(0, 100))
