"""The communities step writes its table a chunk of communities at a time.

``relationship_ids`` and ``text_unit_ids`` hold each relationship once per level it is inside a
community (2.1 M ids at 20,000 documents); the step made them for every level at once, then sorted,
filtered and wrote the whole table. It now makes and writes them a chunk of communities at a time
(:func:`~graphrag_assets.index.coded_graph.internal_relationship_chunks`). These tests pin that the
written table is the one the previous algorithm (kept below as the reference) made, row for row
and in list order, whatever the chunk size, and that the step holds one chunk's lists, not all.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from graphrag_assets.core.ids import stable_uuid
from graphrag_assets.core.schemas import COMMUNITIES, conform, empty_frame
from graphrag_assets.core.settings import CommunitySettings
from graphrag_assets.index import coded_graph
from graphrag_assets.index.coded_graph import CODE, CodedRelationships, coded_frame
from graphrag_assets.index.communities import community_rows, community_table_chunks
from graphrag_assets.index.stable_communities import (
    ClusteringRequest,
    cluster_for_update,
    entity_titles,
    previous_assignments,
)
from graphrag_assets.pipeline.assets.communities import stage_communities
from graphrag_assets.storage.corpus import read_published_columns, read_staged, write_staged
from graphrag_assets_tests.test_coded_graph import random_graph

PERIOD = "2026-12-02"


# --- the previous algorithm: every level's lists at once ------------------------------------------


def reference_internal(coded: CodedRelationships, assignments: pl.DataFrame) -> pl.DataFrame:
    """``community``, ``relationship_ids``, ``text_unit_ids`` of the relationships inside each community.

    A relationship is inside a community when both ends are in it at that level. Level by level,
    on codes: each relationship lies in at most one community of a level, so a level costs a
    gather per relationship, and strings are made only for the ids and units that are stored.
    """
    schema = {"community": pl.Int64, "relationship_ids": pl.List(pl.String), "text_unit_ids": pl.List(pl.String)}
    if assignments.is_empty() or coded.height == 0:
        return pl.DataFrame(schema=schema)
    n = coded.titles.len()
    node_code = pl.col("node").cast(pl.Enum(coded.titles), strict=False).to_physical().cast(pl.Int64)
    id_rank = coded.ids.rank("dense").cast(pl.Int64)  # ids sorted as strings, duplicates once
    parts: list[pl.DataFrame] = []
    for level in assignments["level"].unique().sort().to_list():
        at_level = assignments.filter(pl.col("level") == level).select(node=node_code, community="community")
        at_level = at_level.drop_nulls()
        label = pl.Series([None] * n, dtype=pl.Int64).scatter(at_level["node"], at_level["community"])
        inside = (
            coded.edges.select(a=label.gather(coded.edges["source"]), b=label.gather(coded.edges["target"]))
            .with_row_index("row")
            .filter(pl.col("a") == pl.col("b"))
            .select(pl.col("row").cast(CODE), community="a")
        )
        ids = (
            inside.with_columns(rank=id_rank.gather(inside["row"]), id=coded.ids.gather(inside["row"]))
            .unique(["community", "rank"])
            .sort("community", "rank")
            .group_by("community", maintain_order=True)
            .agg(relationship_ids="id")
        )
        units = coded.units.join(inside, on="row").select("community", "unit").unique().sort("community", "unit")
        unit_lists = (
            units.select("community", unit=coded.unit_names.gather(units["unit"]))
            .group_by("community", maintain_order=True)
            .agg(text_unit_ids="unit")
        )
        parts.append(ids.join(unit_lists, on="community", how="left"))
    return pl.concat(parts).select(list(schema)).cast(schema)


def reference_table(
    titles: pl.DataFrame, rels: CodedRelationships, assignments: pl.DataFrame, period: str
) -> pl.DataFrame:
    """The ``communities`` table of a clustering (``ASSIGNMENTS`` rows, nodes are entity titles).

    ``titles`` holds the entities' id and title, ``rels`` the relationships between known
    entities (in codes); used for fresh and warm-started clusterings alike, so both give the same columns.
    """
    if assignments.is_empty():
        return empty_frame(COMMUNITIES)

    members = (
        assignments.join(titles, left_on="node", right_on="title")
        .group_by("community", "level", "parent")
        .agg(pl.col("id").sort().alias("entity_ids"))
    )
    internal = reference_internal(rels, assignments)
    children = (
        assignments.filter(pl.col("parent") >= 0)
        .select("parent", "community")
        .unique()
        .group_by("parent")
        .agg(pl.col("community").sort().alias("children"))
    )
    empty_strings = pl.lit([], dtype=pl.List(pl.String))
    table = (
        members.join(internal, on="community", how="left")
        .join(children, left_on="community", right_on="parent", how="left")
        .sort("level", "community")
        .with_columns(
            pl.col("relationship_ids").fill_null(empty_strings),
            pl.col("text_unit_ids").fill_null(empty_strings),
            pl.col("children").fill_null(pl.lit([], dtype=pl.List(pl.Int64))),
            pl.col("community").alias("human_readable_id"),
            pl.format("Community {}", pl.col("community")).alias("title"),
            pl.col("entity_ids").list.len().cast(pl.Int64).alias("size"),
            pl.lit(period, dtype=pl.String).alias("period"),
        )
    )
    ids = [
        stable_uuid("community", level, *entity_ids)
        for level, entity_ids in zip(table["level"].to_list(), table["entity_ids"].to_list())
    ]
    return conform(table.with_columns(pl.Series("id", ids, dtype=pl.String)), COMMUNITIES)


# --- the step against it ---------------------------------------------------------------------------


def awkward_strings(relationships: pl.DataFrame) -> pl.DataFrame:
    """Ids and units whose sort order differs between byte order and a locale or case-folding one."""
    marks = ["é", "Z", "a", "_", "Ü", "ß", "0", "~"]
    return relationships.with_columns(
        id=pl.concat_str(pl.Series([marks[i % len(marks)] for i in range(relationships.height)]), pl.col("id")),
        text_unit_ids=pl.col("text_unit_ids").list.eval(pl.element().str.replace("u", "Ü").str.replace("0", "a")),
    )


def staged_and_reference(tmp_path: Path, entities, relationships, settings: CommunitySettings, previous=None):
    """The step's rows and written table, and the previous algorithm's table of the same clustering."""
    request = ClusteringRequest(settings, previous=previous)
    database = tmp_path / "graph.duckdb"
    write_staged(database, "relationships", relationships)
    rows, outcome = stage_communities(database, entities, request, PERIOD)
    coded = coded_frame(entity_titles(entities), relationships)
    assert outcome.assignments.equals(
        cluster_for_update(coded_graph.normalized_edges(coded.titles, coded.edges), request).assignments
    )
    titles = entities.select("id", "title").unique().sort("title", "id")
    return rows, read_staged(database, "communities"), reference_table(titles, coded, outcome.assignments, PERIOD)


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("awkward", [False, True])
@pytest.mark.parametrize("chunk", [1, 7, 1_000_000])
def test_the_written_table_is_the_previous_algorithms(
    tmp_path: Path, monkeypatch, seed: int, awkward: bool, chunk: int
) -> None:
    monkeypatch.setattr(coded_graph, "LIST_CHUNK_MEMBERSHIPS", chunk)
    entities, relationships = random_graph(seed)
    if awkward:
        relationships = awkward_strings(relationships)
    rows, written, expected = staged_and_reference(
        tmp_path, entities, relationships, CommunitySettings(max_cluster_size=5)
    )
    assert written.schema == expected.schema
    assert written.equals(expected)
    assert written["level"].n_unique() >= 2
    assert written["relationship_ids"].list.len().sum() > 0 and written["text_unit_ids"].list.len().sum() > 0
    # what the step keeps in memory is the table without its lists
    assert rows.equals(expected.drop("relationship_ids", "text_unit_ids"))


def test_a_warm_start_writes_the_previous_algorithms_table_too(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(coded_graph, "LIST_CHUNK_MEMBERSHIPS", 5)
    entities, relationships = random_graph(6)
    settings = CommunitySettings(max_cluster_size=5, update="stable")
    (tmp_path / "first").mkdir()
    (tmp_path / "second").mkdir()
    _, first, _ = staged_and_reference(tmp_path / "first", entities, relationships, settings)
    previous = previous_assignments(first.select("community", "level", "parent", "entity_ids"), entities)
    changed = relationships.slice(0, relationships.height - 40)
    _, written, expected = staged_and_reference(tmp_path / "second", entities, changed, settings, previous)
    assert written.equals(expected)


def test_no_relationships_write_an_empty_table(tmp_path: Path) -> None:
    entities, relationships = random_graph(1)
    _, written, expected = staged_and_reference(
        tmp_path, entities, relationships.clear(), CommunitySettings(max_cluster_size=5)
    )
    assert written.height == 0 and expected.height == 0
    assert written.schema == expected.schema


def test_only_the_published_table_is_read_for_a_warm_start(tmp_path: Path) -> None:
    database = tmp_path / "graph.duckdb"
    assert read_published_columns(database, "communities", ["community"]) is None
    entities, relationships = random_graph(2)
    write_staged(database, "relationships", relationships)
    stage_communities(database, entities, ClusteringRequest(CommunitySettings()), PERIOD)
    assert read_published_columns(database, "communities", ["community"]) is None  # staged, not published


@pytest.mark.parametrize("chunk", [3, 50])
def test_lists_come_a_bounded_chunk_at_a_time(monkeypatch, chunk: int) -> None:
    """What the step writes batch by batch: slices in table order, each holding about ``chunk``
    relationship memberships (more only for a single community that alone holds more)."""
    monkeypatch.setattr(coded_graph, "LIST_CHUNK_MEMBERSHIPS", chunk)
    entities, relationships = random_graph(3)
    coded = coded_frame(entity_titles(entities), relationships)
    request = ClusteringRequest(CommunitySettings(max_cluster_size=5))
    assignments = cluster_for_update(coded_graph.normalized_edges(coded.titles, coded.edges), request).assignments
    titles = entities.select("id", "title").unique().sort("title", "id")
    rows = community_rows(titles, assignments, PERIOD)
    slices = list(community_table_chunks(rows, coded_graph.internal_relationship_chunks(coded, assignments)))
    whole = reference_table(titles, coded, assignments, PERIOD)
    assert pl.concat(slices).equals(whole)
    largest = int(whole["relationship_ids"].list.len().max())
    sizes = [int(part["relationship_ids"].list.len().sum()) for part in slices]
    assert len(slices) > whole["level"].n_unique()
    assert max(sizes) <= max(chunk + largest, 2 * chunk), sizes
