"""Invariants of the ``communities`` table, as pure functions (Dagster asset checks call them).

A sound hierarchy has unique community numbers; level-0 communities have parent -1 and every
other community's parent exists exactly one level up; ``children`` lists exactly the communities
pointing at it; ``size`` is the number of entity ids; no entity is in two communities of the same
level; and the children of a community partition its entities (disjoint, union equal).

Communities of at least ``max_cluster_size`` entities without children are not a broken
invariant but are worth surfacing: the clustering tried to split them (that size is its
threshold) and Leiden found nothing better than one cluster, so they make large report contexts.
They are reported separately from ``problems``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl


@dataclass(frozen=True)
class HierarchyReport:
    """What :func:`check_hierarchy` found; ``ok`` when no invariant is broken."""

    levels: dict[int, int]  # level -> number of communities
    problems: list[str] = field(default_factory=list)  # broken invariants, one sentence each
    unsplit_oversized: list[int] = field(default_factory=list)  # childless, size >= max_cluster_size

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def unsplit_oversized_count(self) -> int:
        return len(self.unsplit_oversized)


def _ids(frame: pl.DataFrame, column: str = "community") -> str:
    values = frame[column].to_list()
    shown = ", ".join(str(v) for v in values[:10])
    return shown + (f" and {len(values) - 10} more" if len(values) > 10 else "")


def check_hierarchy(communities: pl.DataFrame, *, max_cluster_size: int = 10) -> HierarchyReport:
    """Check the hierarchy invariants of a ``communities`` table (see the module docstring)."""
    table = communities.select("community", "level", "parent", "children", "entity_ids", "size")
    levels = dict(table.group_by("level").agg(pl.len()).sort("level").iter_rows())
    problems: list[str] = []

    duplicated = table.group_by("community").agg(pl.len()).filter(pl.col("len") > 1).sort("community")
    if not duplicated.is_empty():
        problems.append(f"community numbers used more than once: {_ids(duplicated)}")

    bad_roots = table.filter((pl.col("level") == 0) & (pl.col("parent") != -1)).sort("community")
    if not bad_roots.is_empty():
        problems.append(f"level-0 communities with a parent: {_ids(bad_roots)}")

    parents = table.select(pl.col("community").alias("parent"), pl.col("level").alias("parent_level"))
    nested = table.filter(pl.col("level") > 0).join(parents, on="parent", how="left")
    orphans = nested.filter(pl.col("parent_level") != pl.col("level") - 1).vstack(
        nested.filter(pl.col("parent_level").is_null())
    )
    if not orphans.is_empty():
        problems.append(f"communities whose parent is missing or not one level up: {_ids(orphans.sort('community'))}")

    declared = table.select("community", pl.col("children").list.sort().fill_null(pl.lit([], dtype=pl.List(pl.Int64))))
    derived = (
        table.filter(pl.col("parent") >= 0)
        .group_by("parent")
        .agg(pl.col("community").sort().alias("derived"))
        .rename({"parent": "community"})
    )
    mismatched = (
        declared.join(derived, on="community", how="full", coalesce=True)
        .with_columns(
            pl.col("children").fill_null(pl.lit([], dtype=pl.List(pl.Int64))),
            pl.col("derived").fill_null(pl.lit([], dtype=pl.List(pl.Int64))),
        )
        .filter(pl.col("children") != pl.col("derived"))
        .sort("community")
    )
    if not mismatched.is_empty():
        problems.append(f"children lists that disagree with the parent column: {_ids(mismatched)}")

    wrong_size = table.filter(pl.col("size") != pl.col("entity_ids").list.len()).sort("community")
    if not wrong_size.is_empty():
        problems.append(f"size differs from the number of entity ids: {_ids(wrong_size)}")

    memberships = table.select("community", "level", "parent", pl.col("entity_ids").alias("entity")).explode("entity")
    shared = (
        memberships.group_by("level", "entity")
        .agg(pl.col("community").n_unique().alias("n"))
        .filter(pl.col("n") > 1)
        .sort("level", "entity")
    )
    if not shared.is_empty():
        problems.append(f"entities in more than one community of the same level: {_ids(shared, 'entity')}")

    child_entities = (
        memberships.filter(pl.col("parent") >= 0)
        .group_by("parent")
        .agg(pl.col("entity").sort().alias("child_entities"))
        .rename({"parent": "community"})
    )
    not_partitioned = (
        table.select("community", pl.col("entity_ids").list.sort())
        .join(child_entities, on="community")
        .filter(pl.col("entity_ids") != pl.col("child_entities"))
        .sort("community")
    )
    if not not_partitioned.is_empty():
        problems.append(f"communities whose children do not partition their entities: {_ids(not_partitioned)}")

    unsplit = (
        table.filter((pl.col("size") >= max_cluster_size) & (pl.col("children").list.len().fill_null(0) == 0))
        .sort("community")["community"]
        .to_list()
    )
    return HierarchyReport(levels=levels, problems=problems, unsplit_oversized=unsplit)
