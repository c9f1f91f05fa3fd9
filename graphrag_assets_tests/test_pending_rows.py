"""Rows of the build's document tables wait for the publish; the pipeline reads them before readers do."""

from __future__ import annotations

from pathlib import Path

import polars as pl
from polars.testing import assert_frame_equal

from graphrag_assets.storage.corpus import publish_corpus, write_staged
from graphrag_assets.storage.database import connect, frame_of
from graphrag_assets.storage.pending import mark_deleted, write_document_partitions
from graphrag_assets.storage.tables import read_table

MANIFEST = pl.DataFrame({"document_key": ["a", "b"]})


def units(*rows: tuple[str, str]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema={"id": pl.String, "document_key": pl.String}, orient="row")


def published(path: Path) -> pl.DataFrame:
    """What a reader reads: the table itself."""
    with connect(path, read_only=True) as conn:
        return frame_of(conn.sql("select * from text_units order by id"))


def test_document_rows_are_read_by_the_pipeline_at_once_and_by_readers_after_the_publish(tmp_path: Path) -> None:
    path = tmp_path / "index.duckdb"
    write_document_partitions(path, "text_units", units(("a1", "a"), ("b1", "b")), "document_key", ["a", "b"])
    publish_corpus(path, MANIFEST, {"run_id": "r1"})
    first = published(path)
    assert_frame_equal(first, units(("a1", "a"), ("b1", "b")))

    write_document_partitions(path, "text_units", units(("a2", "a")), "document_key", ["a"])
    mark_deleted(path, ["b"])
    assert_frame_equal(read_table(path, "text_units").sort("id"), units(("a2", "a")))
    assert_frame_equal(read_table(path, "text_units", partition_column="document_key", partition_keys=["b"]), units())
    assert_frame_equal(published(path), first)

    publish_corpus(path, MANIFEST.head(1), {"run_id": "r2"})
    assert_frame_equal(published(path), units(("a2", "a")))
    assert_frame_equal(read_table(path, "text_units"), units(("a2", "a")))


def test_a_table_published_whole_drops_the_pending_rows(tmp_path: Path) -> None:
    """An import stages every table whole; rows a document run left pending must not come back."""
    path = tmp_path / "index.duckdb"
    write_document_partitions(path, "text_units", units(("a1", "a")), "document_key", ["a"])
    write_staged(path, "text_units", units(("x1", "x")))
    publish_corpus(path, MANIFEST, {"run_id": "import"})
    assert_frame_equal(published(path), units(("x1", "x")))
    assert_frame_equal(read_table(path, "text_units"), units(("x1", "x")))
