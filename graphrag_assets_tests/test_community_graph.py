"""DuckDB makes the communities step's edge list and community lists; the process holds codes.

At 100,000 documents the relationships table (15 M rows) coded in polars, ids and unit entries
included, was most of the step's 5.5 GB. :mod:`graphrag_assets.storage.community_graph` makes the
normalized edge list and each chunk of community lists in DuckDB. These tests pin that both equal
the polars versions (:mod:`graphrag_assets.index.coded_graph`) and that what reaches Python is
numbers for the graph and one chunk of strings for the lists, however long the ids are.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from graphrag_assets.core.settings import CommunitySettings
from graphrag_assets.index import coded_graph
from graphrag_assets.index.coded_graph import coded_frame, internal_relationship_chunks, normalized_edges
from graphrag_assets.index.stable_communities import ClusteringRequest, cluster_for_update, entity_titles
from graphrag_assets.storage import community_graph
from graphrag_assets.storage.community_graph import staged_edge_list, staged_internal_lists
from graphrag_assets.storage.corpus import write_staged
from graphrag_assets_tests.test_coded_graph import random_graph
from graphrag_assets_tests.test_community_lists import awkward_strings


def staged(tmp_path: Path, relationships: pl.DataFrame) -> Path:
    database = tmp_path / "graph.duckdb"
    write_staged(database, "relationships", relationships)
    return database


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_edge_list_is_the_polars_one(tmp_path: Path, seed: int) -> None:
    entities, relationships = random_graph(seed)
    lonely = pl.DataFrame({"id": ["id-A", "id-U"], "title": ["A lonely one", "U lonely two"]})
    titles = entity_titles(pl.concat([entities, lonely]))
    codes, edges = staged_edge_list(staged(tmp_path, relationships), titles)
    coded = coded_frame(titles, relationships)
    expected = normalized_edges(coded.titles, coded.edges)
    assert titles.gather(codes).to_list() == expected.names.to_list()
    assert codes.len() < titles.len()  # nodes without an edge are renumbered away
    assert edges.equals(expected.edges)


def test_a_bad_weight_is_refused_with_its_ends(tmp_path: Path) -> None:
    entities, relationships = random_graph(1)
    bad = relationships.with_columns(weight=pl.when(pl.int_range(pl.len()) == 5).then(-2.0).otherwise("weight"))
    row = bad.row(5, named=True)
    with pytest.raises(ValueError, match=f"1 edge\\(s\\) have a negative or non-finite weight, e.g. '{row['source']}'"):
        staged_edge_list(staged(tmp_path, bad), entity_titles(entities))


def test_no_relationships_table_is_an_empty_graph(tmp_path: Path) -> None:
    entities, _ = random_graph(1)
    database = tmp_path / "graph.duckdb"
    codes, edges = staged_edge_list(database, entity_titles(entities))
    assert codes.is_empty() and edges.is_empty()
    one = pl.DataFrame({"node": ["T000"], "community": [0], "level": [0]})
    assert list(staged_internal_lists(database, one, 10)) == []


@pytest.mark.parametrize("chunk", [1, 7, 1_000_000])
@pytest.mark.parametrize("awkward", [False, True])
def test_the_lists_are_the_polars_chunks(tmp_path: Path, monkeypatch, chunk: int, awkward: bool) -> None:
    entities, relationships = random_graph(3)
    if awkward:
        relationships = awkward_strings(relationships)
    coded = coded_frame(entity_titles(entities), relationships)
    request = ClusteringRequest(CommunitySettings(max_cluster_size=5))
    assignments = cluster_for_update(normalized_edges(coded.titles, coded.edges), request).assignments
    database = staged(tmp_path, relationships)
    got = list(staged_internal_lists(database, assignments, chunk))
    monkeypatch.setattr(coded_graph, "LIST_CHUNK_MEMBERSHIPS", chunk)
    expected = list(internal_relationship_chunks(coded, assignments))
    assert len(got) == len(expected) > 1
    for mine, theirs in zip(got, expected, strict=True):
        assert mine.equals(theirs)


def test_the_process_gets_numbers_for_the_graph_and_a_chunk_of_strings(tmp_path: Path) -> None:
    """Ids of 2 kB each: the edge list is 24 bytes a pair whatever they hold, and a chunk of lists
    holds about ``chunk`` ids, not all of them."""
    entities, relationships = random_graph(2)
    relationships = relationships.with_columns(id=pl.col("id").str.pad_end(2_000, "x"))
    database = staged(tmp_path, relationships)
    titles = entity_titles(entities)
    codes, edges = staged_edge_list(database, titles)
    assert edges.schema == pl.Schema({"source": pl.Int64, "target": pl.Int64, "weight": pl.Float64})
    assert codes.dtype == pl.Int64
    assert edges.estimated_size() == 24 * edges.height
    assignments = cluster_for_update(
        coded_graph.CodedEdges(titles.gather(codes), edges), ClusteringRequest(CommunitySettings(max_cluster_size=5))
    ).assignments
    chunk = 50
    ids_per_chunk = [
        int(part["relationship_ids"].list.len().sum()) for part in staged_internal_lists(database, assignments, chunk)
    ]
    total = sum(ids_per_chunk)
    assert total > 10 * chunk
    assert max(ids_per_chunk) < total / 4


def one_huge_community(relationships: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Relationships of 300 entities, most inside one community of level 0 (280 entities; its two
    halves are level 1), and four small ones with none inside: the shape of a coarse level at 100,000
    documents, where one community held millions of relationships."""
    rows = pl.DataFrame({"i": pl.int_range(relationships, eager=True)})
    frame = rows.select(
        id=pl.concat_str(pl.lit("relationship-"), pl.col("i").cast(pl.String).str.pad_start(9, "0"), pl.lit("-" * 20)),
        source=pl.format("T{}", (pl.col("i") % 300).cast(pl.String).str.pad_start(3, "0")),
        target=pl.format("T{}", ((pl.col("i") * 7 + 1) % 300).cast(pl.String).str.pad_start(3, "0")),
        weight=pl.lit(1.0),
        text_unit_ids=pl.concat_list(pl.format("u{}", pl.col("i") % 50), pl.format("u{}", pl.col("i") % 7)),
    )
    titles = [f"T{n:03d}" for n in range(300)]
    level0 = [0 if n < 280 else 1 + (n - 280) // 5 for n in range(300)]
    level1 = [5 + n // 140 for n in range(280)]
    assignments = pl.DataFrame(
        {"node": titles + titles[:280], "community": level0 + level1, "level": [0] * 300 + [1] * 280}
    )
    return frame, assignments


def test_one_huge_community_stays_within_the_memory_limit(tmp_path: Path, monkeypatch) -> None:
    """500,000 relationships inside one community, listed under a 48 MB limit: DuckDB's list
    aggregate (with distinct and order by) held the whole community and needed about 128 MB; the
    sort that now hands polars the rows spills. Two threads, as DuckDB's memory needs grow with them."""
    relationships, assignments = one_huge_community(500_000)
    database = staged(tmp_path, relationships)
    monkeypatch.setitem(community_graph.SETTINGS, "memory_limit", "'48MB'")
    monkeypatch.setitem(community_graph.SETTINGS, "threads", "2")
    got = list(staged_internal_lists(database, assignments, 100_000))
    coded = coded_frame(entity_titles(assignments.select(title="node").unique()), relationships)
    monkeypatch.setattr(coded_graph, "LIST_CHUNK_MEMBERSHIPS", 100_000)
    expected = list(internal_relationship_chunks(coded, assignments))
    assert [part["community"].to_list() for part in got] == [[0], [5], [6]]
    assert got[0]["relationship_ids"].list.len().item() > 400_000
    for mine, theirs in zip(got, expected, strict=True):
        assert mine.equals(theirs)
