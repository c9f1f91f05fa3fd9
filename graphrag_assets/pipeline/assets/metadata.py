"""Helpers for Dagster materialization metadata."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import polars as pl
from dagster import AssetExecutionContext, MetadataValue

from graphrag_assets.core.buckets import bucket_of, is_bucket_key, parse_bucket_key
from graphrag_assets.pipeline.runtime.dagster_private import add_partition_metadata

PARTITION_COLUMN = "document_key"


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


Describe = Callable[[pl.DataFrame, bool], Mapping[str, Any]]


def describe_partitions(
    context: AssetExecutionContext,
    asset: str,
    frame: pl.DataFrame,
    describe: Describe,
    run_wide: Mapping[str, Any] | None = None,
) -> None:
    """Give each partition of ``asset`` metadata about its own rows: ``describe(rows, bucketed)``.

    A range run materializes many partitions with one output; metadata attached to the output
    would be copied to every partition (so a file with 3 text units would show the range's 13).
    In bucket mode (:mod:`graphrag_assets.core.buckets`) a partition's rows are those of the
    documents of its bucket that the run worked on. ``run_wide`` figures that belong to the run
    as a whole (model usage of a shared pool) are added under ``run/`` so nobody reads them as the
    partition's own.
    """
    keys = list(context.partition_keys)
    bucketed = any(is_bucket_key(key) for key in keys)
    shared = {f"run/{name}": value for name, value in (run_wide or {}).items()}
    if len(keys) > 1:
        shared["run/documents" if not bucketed else "run/buckets"] = len(keys)
    groups = {}
    if PARTITION_COLUMN in frame.columns and frame.height:
        groups = {
            key[0]: rows
            for key, rows in _with_partition(frame, keys, bucketed)
            .partition_by("_partition", as_dict=True, include_key=False)
            .items()
        }
    empty = frame.head(0)
    add_partition_metadata(
        context,
        asset,
        {
            key: {**describe(rows := groups.get(key, empty), bucketed), "dagster/row_count": rows.height, **shared}
            for key in keys
        },
    )


def _with_partition(frame: pl.DataFrame, keys: list[str], bucketed: bool) -> pl.DataFrame:
    if not bucketed:
        return frame.with_columns(pl.col(PARTITION_COLUMN).alias("_partition"))
    buckets = parse_bucket_key(keys[0])[1]
    documents = frame.get_column(PARTITION_COLUMN).unique()
    mapping = pl.DataFrame(
        {PARTITION_COLUMN: documents, "_partition": [bucket_of(key, buckets) for key in documents.to_list()]}
    )
    return frame.join(mapping, on=PARTITION_COLUMN, how="left")


DOCUMENT_TABLE_ROWS = 1_000


def document_table(rows: pl.DataFrame) -> MetadataValue:
    """Per-document state for a bucket's metadata: a table of (at most 1,000 of) its documents."""
    return preview(rows.sort(PARTITION_COLUMN), rows=DOCUMENT_TABLE_ROWS)


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
            reports.select("community", "rank", pl.col("title").alias("report")),
            on="community",
            how="left",
            maintain_order="left",
        )
        columns = ["community", "level", "size", "rank", "report", "top entities"]
    return preview(table.select(columns), rows=rows)
