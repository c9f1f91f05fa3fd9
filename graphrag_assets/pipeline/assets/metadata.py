"""Helpers for Dagster materialization metadata."""

from __future__ import annotations

import polars as pl
from dagster import MetadataValue


def _cell(value: object) -> str:
    text = "" if value is None else str(value)
    return text.replace("|", "\\|").replace("\n", " ")[:120]


def preview(frame: pl.DataFrame, rows: int = 5) -> MetadataValue:
    """A markdown table of the first rows, shown in the Dagster UI."""
    head = frame.head(rows)
    if head.is_empty():
        return MetadataValue.md("_(no rows)_")
    lines = ["| " + " | ".join(head.columns) + " |", "|" + "---|" * len(head.columns)]
    for row in head.iter_rows():
        lines.append("| " + " | ".join(_cell(v) for v in row) + " |")
    return MetadataValue.md("\n".join(lines))


TOP_MEMBERS = 5


def largest_communities(
    communities: pl.DataFrame, entities: pl.DataFrame, reports: pl.DataFrame | None = None, rows: int = 10
) -> MetadataValue:
    """A markdown table of the largest communities: level, parent, size, their best-connected
    members and, once the reports exist, each report's rank and title."""
    largest = communities.sort(["size", "level", "community"], descending=[True, False, False]).head(rows)
    members = (
        largest.select("community", pl.col("entity_ids").alias("id"))
        .explode("id")
        .join(entities.select("id", "title", "degree"), on="id", how="inner")
        .sort(["degree", "title"], descending=[True, False])
        .group_by("community", maintain_order=True)
        .agg(pl.col("title").head(TOP_MEMBERS).str.join(", ").alias("top entities"))
    )
    table = largest.join(members, on="community", how="left", maintain_order="left")
    columns = ["community", "level", "parent", "size", "top entities"]
    if reports is not None:
        table = table.join(
            reports.select("community", "rank", pl.col("title").alias("report")), on="community", how="left", maintain_order="left"
        )
        columns = ["community", "level", "size", "rank", "report", "top entities"]
    return preview(table.select(columns), rows=rows)
