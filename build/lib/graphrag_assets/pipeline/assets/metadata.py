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
