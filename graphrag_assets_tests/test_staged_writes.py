"""Staged corpus tables are written in chunks; what is read back must equal what was written."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from graphrag_assets.storage import corpus
from graphrag_assets.storage.corpus import read_staged, write_staged

FRAME = pl.DataFrame(
    {
        "id": [f"r{i}" for i in range(11)],
        "weight": [i / 3 for i in range(11)],
        "text_unit_ids": [[f"u{i}", f"u{i + 1}"] if i % 3 else [] for i in range(11)],
    }
)


@pytest.mark.parametrize("chunk_rows", [1, 4, 11, 1000])
def test_chunked_write_reads_back_equal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk_rows: int) -> None:
    monkeypatch.setattr(corpus, "STAGE_CHUNK_ROWS", chunk_rows)
    path = tmp_path / "index.duckdb"
    write_staged(path, "relationships", FRAME.head(2))  # replaced by the next write
    write_staged(path, "relationships", FRAME)
    assert read_staged(path, "relationships").equals(FRAME)


def test_empty_frame_makes_an_empty_table_with_its_columns(tmp_path: Path) -> None:
    path = tmp_path / "index.duckdb"
    write_staged(path, "relationships", FRAME.clear())
    back = read_staged(path, "relationships")
    assert back.is_empty() and back.schema == FRAME.schema
