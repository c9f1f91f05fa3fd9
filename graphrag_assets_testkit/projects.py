"""Temporary projects built from the bundled sample corpus, and reading their database."""

from __future__ import annotations

import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SAMPLE_INPUT = REPO / "data" / "input"


def make_project(root: Path, with_sample: bool = True) -> Path:
    """A project folder with the project files and (optionally) a copy of the sample corpus."""
    from graphrag_assets.project.init_files import write_project_files

    write_project_files(root)
    if with_sample:
        shutil.rmtree(root / "data" / "input")
        shutil.copytree(SAMPLE_INPUT, root / "data" / "input")
    return root


def query_db(root: Path, sql: str) -> list[tuple]:
    """Rows of ``sql`` over the project's database (waiting, like the product, while it is written)."""
    from graphrag_assets.storage.database import connect

    with connect(root / "data" / "graphrag.duckdb", read_only=True) as conn:
        return conn.sql(sql).fetchall()
