"""Invariants of the entity graph, as pure functions (Dagster asset checks call them)."""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl


@dataclass(frozen=True)
class GraphReport:
    orphan_relationships: list[str] = field(default_factory=list)  # relationship ids
    duplicate_titles: list[str] = field(default_factory=list)
    degree_mismatches: list[str] = field(default_factory=list)  # entity titles or relationship ids

    @property
    def ok(self) -> bool:
        return not (self.orphan_relationships or self.duplicate_titles or self.degree_mismatches)


def expected_degrees(relationships: pl.DataFrame) -> pl.DataFrame:
    """Undirected, de-duplicated neighbour count per title."""
    pairs = relationships.select(
        pl.min_horizontal("source", "target").alias("a"), pl.max_horizontal("source", "target").alias("b")
    ).unique()
    ends = pl.concat([pairs.select(pl.col("a").alias("title")), pairs.select(pl.col("b").alias("title"))])
    return ends.group_by("title").agg(pl.len().cast(pl.Int64).alias("expected"))


def check_graph(entities: pl.DataFrame, relationships: pl.DataFrame) -> GraphReport:
    titles = entities.select("title")
    orphans = relationships.join(titles, left_on="source", right_on="title", how="anti")
    orphans = pl.concat([orphans, relationships.join(titles, left_on="target", right_on="title", how="anti")])
    duplicates = entities.group_by("title").agg(pl.len()).filter(pl.col("len") > 1)["title"].sort().to_list()
    degrees = (
        entities.select("title", "degree")
        .join(expected_degrees(relationships), on="title", how="left")
        .with_columns(pl.col("expected").fill_null(0))
    )
    bad_entities = degrees.filter(pl.col("degree") != pl.col("expected"))["title"].sort().to_list()
    lookup = degrees.select("title", "expected")
    combined = (
        relationships.select("id", "source", "target", "combined_degree")
        .join(lookup.rename({"title": "source", "expected": "d_source"}), on="source", how="left")
        .join(lookup.rename({"title": "target", "expected": "d_target"}), on="target", how="left")
        .filter(pl.col("combined_degree") != pl.col("d_source").fill_null(0) + pl.col("d_target").fill_null(0))
    )
    return GraphReport(
        orphan_relationships=sorted(set(orphans["id"].to_list())),
        duplicate_titles=duplicates,
        degree_mismatches=bad_entities + sorted(combined["id"].to_list()),
    )
