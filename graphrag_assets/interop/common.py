"""What the export and import formats share: the index tables, the result records, the output folder."""

from __future__ import annotations

import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from graphrag_assets.core import schemas
from graphrag_assets.core.errors import UserError
from graphrag_assets.core.settings import Settings
from graphrag_assets.storage import table_names as tables
from graphrag_assets.storage.index_reads import read_index_tables as read_stored_tables
from graphrag_assets.storage.tables import read_table

INDEX_TABLES: dict[str, dict[str, pl.DataType]] = {
    tables.DOCUMENTS: schemas.DOCUMENTS,
    tables.TEXT_UNITS: schemas.TEXT_UNITS,
    tables.ENTITIES: schemas.ENTITIES,
    tables.RELATIONSHIPS: schemas.RELATIONSHIPS,
    tables.COMMUNITIES: schemas.COMMUNITIES,
    tables.COMMUNITY_REPORTS: schemas.COMMUNITY_REPORTS,
    tables.COVARIATES: schemas.COVARIATES,
}


@dataclass
class ExportResult:
    """What an export wrote: files (relative to ``out_dir``) and row counts per table/file."""

    format: str
    out_dir: Path
    files: list[str] = field(default_factory=list)
    rows: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    loaded: dict[str, Any] = field(default_factory=dict)  # cypher --load: target, statements, nodes, relationships

    def as_dict(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "out_dir": str(self.out_dir),
            "files": list(self.files),
            "rows": dict(self.rows),
            "warnings": list(self.warnings),
            "loaded": dict(self.loaded),
        }


@dataclass
class ImportResult:
    """What an import loaded: rows per table, where the vectors came from, and warnings."""

    format: str
    source_dir: Path
    rows: dict[str, int] = field(default_factory=dict)
    embeddings: dict[str, str] = field(default_factory=dict)  # table -> "imported" | "computed"
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "source_dir": str(self.source_dir),
            "rows": dict(self.rows),
            "embeddings": dict(self.embeddings),
            "warnings": list(self.warnings),
        }


def read_index_tables(settings: Settings, names: Sequence[str] = tuple(INDEX_TABLES)) -> dict[str, pl.DataFrame]:
    """The index tables (conformed to :mod:`graphrag_assets.core.schemas`); a missing table is empty.

    Raises a :class:`UserError` when the project has no graph yet.
    """
    stored = read_stored_tables(settings.database_path, dict.fromkeys(names))
    if stored is None:
        raise UserError(f"the project at {settings.root} has no index yet; run 'graphrag-assets index' first.")
    return {
        name: schemas.conform(stored[name], INDEX_TABLES[name])
        if name in stored
        else schemas.empty_frame(INDEX_TABLES[name])
        for name in names
    }


def read_embeddings(settings: Settings, table: str) -> pl.DataFrame | None:
    """An embedding table (id, vector, ...) from the database, or None when it does not exist."""
    return read_table(settings.database_path, table, read_only=True)


def prepare_output_dir(out_dir: Path, outputs: Iterable[str], *, force: bool) -> None:
    """Create ``out_dir``; refuse a non-empty one unless ``force``, then remove our old outputs.

    ``outputs`` are the file or folder names the format writes; with ``force`` exactly those are
    removed first (so a table that is now empty does not leave a stale file behind).
    """
    if out_dir.exists() and not out_dir.is_dir():
        raise UserError(f"{out_dir} is a file; give a folder to export into.")
    if out_dir.exists() and any(out_dir.iterdir()):
        if not force:
            raise UserError(f"{out_dir} is not empty; choose an empty or new folder, or pass --force to overwrite.")
        for name in outputs:
            path = out_dir / name
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            elif path.exists() or path.is_symlink():
                path.unlink()
    out_dir.mkdir(parents=True, exist_ok=True)


def entity_communities(entities: pl.DataFrame, communities: pl.DataFrame) -> pl.DataFrame:
    """Per entity id: its deepest community and its level-0 community (-1 when it has none).

    Hierarchical Leiden puts an entity in at most one community per level, so "deepest" is the
    community of the highest level containing it; ties (not expected) go to the smallest id.
    """
    membership = (
        communities.select("community", "level", pl.col("entity_ids").alias("id")).explode("id").drop_nulls("id")
    )
    deepest = (
        membership.sort(["id", "level", "community"], descending=[False, True, False])
        .group_by("id", maintain_order=True)
        .first()
        .select("id", pl.col("community").alias("community"), pl.col("level").alias("community_level"))
    )
    top = (
        membership.filter(pl.col("level") == 0).group_by("id").agg(pl.col("community").min().alias("level0_community"))
    )
    return (
        entities.select("id")
        .join(deepest, on="id", how="left")
        .join(top, on="id", how="left")
        .with_columns(
            pl.col("community").fill_null(-1),
            pl.col("community_level").fill_null(-1),
            pl.col("level0_community").fill_null(-1),
        )
    )
