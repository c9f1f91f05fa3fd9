"""Helpers for Dagster materialization metadata."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import polars as pl
from dagster import AssetExecutionContext, AssetKey, MetadataValue
from dagster._core.execution.context.metadata_logging import AssetMetadataHandle, OutputMetadataAccumulator

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


def describe_partitions(
    context: AssetExecutionContext,
    asset: str,
    frame: pl.DataFrame,
    describe: Callable[[pl.DataFrame], Mapping[str, Any]],
    run_wide: Mapping[str, Any] | None = None,
) -> None:
    """Give each document partition of ``asset`` metadata about its own rows.

    A range run materializes many partitions with one output; metadata attached to the output
    would be copied to every partition (so a file with 3 text units would show the range's 13).
    ``run_wide`` figures that belong to the run as a whole (model usage of a shared pool) are
    added under ``run/`` so nobody reads them as the partition's own.
    """
    keys = list(context.partition_keys)
    shared = {f"run/{name}": value for name, value in (run_wide or {}).items()}
    if len(keys) > 1:
        shared["run/documents"] = len(keys)
    groups = frame.partition_by(PARTITION_COLUMN, as_dict=True) if PARTITION_COLUMN in frame.columns and frame.height else {}
    empty = frame.head(0)
    add_partition_metadata(
        context,
        asset,
        {key: {**describe(rows := groups.get((key,), empty)), "dagster/row_count": rows.height, **shared} for key in keys},
    )


def add_partition_metadata(context: AssetExecutionContext, asset: str, metadata: Mapping[str, Mapping[str, Any]]) -> None:
    """Attach ``metadata[key]`` to partition ``key`` of ``asset``, for many partitions at once.

    ``context.add_asset_metadata`` checks every call's key against the run's whole partition range,
    which for dynamic partitions is a database query listing every partition: 18 ms a call at 1,000
    documents, growing with the corpus, so a range run spent most of its time (O(n²)) there. The
    keys are checked once here and the metadata handed to the step's accumulator directly.
    """
    targeted = set(context.partition_keys)
    stray = sorted(set(metadata) - targeted)
    if stray:
        raise ValueError(f"partitions {stray[:3]} are not materialized by this run")
    step = context.get_step_execution_context()
    accumulated = step._metadata_accumulator.per_output_metadata  # noqa: SLF001 - see the docstring
    asset_key = AssetKey(asset)
    added = {}
    for key, values in metadata.items():
        handle = AssetMetadataHandle(asset_key=asset_key, partition_key=key)
        added[handle] = {**accumulated.get(handle, {}), **values}
    # One new accumulator for all partitions: adding them one at a time copies the mapping each time.
    step._metadata_accumulator = OutputMetadataAccumulator(per_output_metadata={**accumulated, **added})  # noqa: SLF001


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
