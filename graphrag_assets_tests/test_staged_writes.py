"""Staged corpus tables are written in chunks; what is read back must equal what was written."""

from __future__ import annotations

import random
import uuid
from pathlib import Path

import duckdb
import polars as pl
import pytest

from graphrag_assets.storage import corpus
from graphrag_assets.storage.corpus import read_staged, write_staged
from graphrag_assets.storage.database import FrameStream, connect
from graphrag_assets.storage.tables import read_table

FRAME = pl.DataFrame(
    {
        "id": [f"r{i}" for i in range(11)],
        "weight": [i / 3 for i in range(11)],
        "text_unit_ids": [[f"u{i}", f"u{i + 1}"] if i % 3 else [] for i in range(11)],
    }
)


@pytest.fixture
def statements(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The rows of each statement the staged writes make, in order."""
    heights: list[int] = []

    class Counted(FrameStream):
        def __init__(self, frame: pl.DataFrame) -> None:
            heights.append(frame.height)
            super().__init__(frame)

    monkeypatch.setattr(corpus, "FrameStream", Counted)
    return heights


@pytest.mark.parametrize("chunk_rows", [1, 4, 11, 1000])
def test_chunked_write_reads_back_equal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk_rows: int) -> None:
    monkeypatch.setattr(corpus, "STAGE_CHUNK_ROWS", chunk_rows)
    path = tmp_path / "index.duckdb"
    write_staged(path, "relationships", FRAME.head(2))  # replaced by the next write
    write_staged(path, "relationships", FRAME)
    assert read_staged(path, "relationships").equals(FRAME)


def test_vectors_go_in_chunks_of_about_a_megabyte_and_read_back_equal(tmp_path: Path, statements: list[int]) -> None:
    """Rows of 2 KB (512 float32) go in statements of about a megabyte or half the frame; narrow rows keep STAGE_CHUNK_ROWS."""
    vectors = pl.DataFrame({"id": [f"e{i}" for i in range(1100)]}).with_columns(
        pl.Series("vector", [[i / 7, -i / 3] * 256 for i in range(1100)], dtype=pl.Array(pl.Float32, 512))
    )
    path = tmp_path / "index.duckdb"
    write_staged(path, "entity_embeddings", vectors)
    assert read_staged(path, "entity_embeddings").equals(vectors)
    assert (
        len(statements) == 3
        and sum(statements) == 1100
        and max(statements) * 2048 <= max(1 << 20, vectors.estimated_size() / 2)
    )
    statements.clear()
    write_staged(path, "relationships", FRAME)
    assert statements == [FRAME.height]


def test_empty_frame_makes_an_empty_table_with_its_columns(tmp_path: Path) -> None:
    path = tmp_path / "index.duckdb"
    write_staged(path, "relationships", FRAME.clear())
    back = read_staged(path, "relationships")
    assert back.is_empty() and back.schema == FRAME.schema


# Staged tables of this version (a reserved name prefix) and of builds before (a schema).
STAGED_TABLES_LEFT = (
    "select count(*) from information_schema.tables "
    f"where starts_with(table_name, '{corpus.STAGED_PREFIX}') or table_schema = '{corpus.LEGACY_STAGING_SCHEMA}'"
)


def test_publish_puts_the_staged_tables_in_place_and_leaves_none_staged(tmp_path: Path) -> None:
    path = tmp_path / "index.duckdb"
    with duckdb.connect(str(path)) as conn:
        conn.execute("create table relationships as select 'old' as id")
        conn.execute("create table document_steps as select 'untouched' as document_key")
    write_staged(path, "relationships", FRAME)
    write_staged(path, "entities", FRAME.select("id"))
    assert read_table(path, "relationships").to_dicts() == [
        {"id": "old"}
    ]  # readers see the published build until the commit

    published = corpus.publish_corpus(path, pl.DataFrame({"document_key": ["a.txt"]}), {"run_id": "r1"})

    assert sorted(published) == ["entities", "relationships"]
    assert read_table(path, "relationships").equals(FRAME)
    assert read_table(path, "entities").equals(FRAME.select("id"))
    assert read_table(path, "document_steps").to_dicts() == [{"document_key": "untouched"}]
    assert corpus.staged_tables(path) == []
    with duckdb.connect(str(path)) as conn:
        assert conn.execute(STAGED_TABLES_LEFT).fetchall() == [(0,)]
        assert conn.execute("select run_id from corpus_build").fetchall() == [("r1",)]


def test_a_new_run_drops_what_an_unfinished_one_staged_in_either_layout(tmp_path: Path) -> None:
    path = tmp_path / "index.duckdb"
    write_staged(path, "relationships", FRAME)
    with duckdb.connect(str(path)) as conn:  # what a run of an earlier version left
        conn.execute(f"create schema {corpus.LEGACY_STAGING_SCHEMA}")
        conn.execute(f"create table {corpus.LEGACY_STAGING_SCHEMA}.entities as select 1 as id")

    corpus.begin_corpus_run(path, "r2")

    assert corpus.staged_tables(path) == [corpus.RUN_MARKER]
    with duckdb.connect(str(path)) as conn:
        assert conn.execute(STAGED_TABLES_LEFT).fetchall() == [(1,)]  # the new run's marker


def _numbers(start: int, rows: int) -> pl.DataFrame:
    return pl.DataFrame({"n": pl.int_range(start, start + rows, eager=True), "text": [f"t{start}"] * rows})


def test_batches_are_written_in_whole_row_groups(tmp_path: Path) -> None:
    """Batches of any size go in statements of whole DuckDB row groups, so the table has the fewest
    row groups: three batches of 130,000 rows in 250,000-row statements made five."""
    path = tmp_path / "index.duckdb"
    batches = [_numbers(start, 130_000) for start in (0, 130_000, 260_000)]
    assert corpus.write_staged_batches(path, "relationships", iter(batches), checkpoint=True) == 390_000
    with connect(path, read_only=True) as conn:
        groups = conn.execute(
            f"select count(distinct row_group_id) from pragma_storage_info('{corpus.STAGED_PREFIX}relationships')"
        ).fetchall()[0][0]
    assert groups == -(-390_000 // corpus.DUCKDB_ROW_GROUP_ROWS) == 4
    assert read_staged(path, "relationships").equals(pl.concat(batches))


def test_batches_are_cut_into_statements_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, statements: list[int]
) -> None:
    """Rows left at a batch's end go with the next batch's first; an empty batch adds nothing; a
    wide batch after narrow ones comes after the rows carried; only empty batches make an empty table."""
    monkeypatch.setattr(corpus, "STAGE_CHUNK_ROWS", 4)
    path = tmp_path / "index.duckdb"
    batches = [_numbers(0, 3), _numbers(3, 0), _numbers(3, 6), _numbers(9, 1)]
    assert corpus.write_staged_batches(path, "relationships", iter(batches)) == 10
    assert statements == [4, 4, 2]
    assert read_staged(path, "relationships").equals(pl.concat(batches))
    statements.clear()
    corpus.write_staged_batches(path, "relationships", iter([_numbers(0, 0), _numbers(0, 0)]))
    assert statements == [0] and read_staged(path, "relationships").is_empty()
    statements.clear()
    wide = pl.DataFrame({"n": [7, 8], "text": ["w" * 2048] * 2})
    corpus.write_staged_batches(path, "relationships", iter([_numbers(0, 5), wide]))
    assert statements == [4, 1, 2]
    assert read_staged(path, "relationships")["n"].to_list() == [0, 1, 2, 3, 4, 7, 8]


def test_a_large_frame_of_wide_rows_goes_in_few_statements(tmp_path: Path, statements: list[int]) -> None:
    """Each statement commits on its own; 1 MB statements made writing 150 MB of entities 2.5x slower."""
    rows = pl.DataFrame({"id": [f"e{i}" for i in range(4000)], "text": ["x" * 2048] * 4000})  # ~8 MB
    path = tmp_path / "index.duckdb"
    write_staged(path, "entities", rows)
    assert len(statements) == corpus.WIDE_STATEMENTS and sum(statements) == rows.height
    assert read_staged(path, "entities").equals(rows)


def test_the_communities_lists_are_stored_without_fsst_and_other_tables_keep_it(tmp_path: Path) -> None:
    """Random hex ids: choosing FSST for the communities' lists took half their write at 100,000
    documents; the setting is the connection's, so the next table must be compressed as before."""
    rng = random.Random(7)
    lists = pl.DataFrame(
        {
            "community": list(range(3000)),
            "relationship_ids": [[str(uuid.UUID(int=rng.getrandbits(128))) for _ in range(40)] for _ in range(3000)],
        }
    )
    path = tmp_path / "index.duckdb"
    corpus.write_staged_batches(path, "communities", [lists.head(1000), lists.tail(2000)])
    corpus.write_staged_batches(path, "relationships", [lists], checkpoint=True)

    def compressions(table: str) -> set[str]:
        with connect(path) as conn:
            query = f"select distinct compression from pragma_storage_info('{corpus.staged_name(table)}')"
            return {row[0] for row in conn.sql(query).fetchall()}

    assert not any("FSST" in c for c in compressions("communities"))
    assert any("FSST" in c for c in compressions("relationships"))
    assert read_staged(path, "communities").equals(lists)
