"""The DuckDB IO manager, including each defect of dagster-duckdb-polars 0.29 we replaced it for."""

from pathlib import Path

import duckdb
import polars as pl
import pytest
from dagster import AssetIn, DagsterInstance, DynamicPartitionsDefinition, asset, materialize

from graphrag_assets.pipeline.io_manager import DuckDBPolarsIOManager
from graphrag_assets.storage.database import let_go
from graphrag_assets.storage.tables import delete_partitions, read_table, write_partitions, write_table

PARTS = DynamicPartitionsDefinition(name="docs")


@asset(partitions_def=PARTS, metadata={"partition_column": "document_key"})
def chunks(context) -> pl.DataFrame:
    key = context.partition_key
    rows = {"a": 2, "b": 1, "empty": 0}[key]
    return pl.DataFrame(
        {"document_key": [key] * rows, "n": list(range(rows)), "text": [f"{key}{i}" for i in range(rows)]},
        schema={"document_key": pl.String, "n": pl.Int64, "text": pl.String},
    )


@asset(ins={"chunks": AssetIn()})
def chunk_count(chunks: pl.DataFrame) -> pl.DataFrame:
    return chunks.group_by("document_key").agg(pl.len().alias("rows")).sort("document_key")


def run(db: Path, instance: DagsterInstance, assets, partition_key: str | None = None):
    result = materialize(
        assets,
        instance=instance,
        partition_key=partition_key,
        resources={"io_manager": DuckDBPolarsIOManager(database=str(db))},
    )
    let_go()  # the tests read the file with DuckDB directly, which cannot share the warm read-write instance
    return result


@pytest.fixture
def instance() -> DagsterInstance:
    inst = DagsterInstance.ephemeral()
    inst.add_dynamic_partitions("docs", ["a", "b", "empty"])
    return inst


@pytest.mark.parametrize("file_name", ["graph.duckdb", "main.duckdb", "chunks.duckdb"])
def test_partitions_round_trip_through_dagster(tmp_path: Path, instance: DagsterInstance, file_name: str) -> None:
    """Covers the duckdb 2.x load defect and the file-name/schema-name clash (main.duckdb)."""
    db = tmp_path / file_name
    for key in ("a", "b", "empty"):
        assert run(db, instance, [chunks], key).success
    result = materialize(
        [chunks.to_source_asset(), chunk_count],
        instance=instance,
        resources={"io_manager": DuckDBPolarsIOManager(database=str(db))},
    )
    assert result.success
    counts = result.output_for_node("chunk_count")
    assert counts.to_dicts() == [{"document_key": "a", "rows": 2}, {"document_key": "b", "rows": 1}]
    let_go()
    with duckdb.connect(str(db), read_only=True) as conn:
        assert conn.sql("select count(*) from chunks").fetchall() == [(3,)]
        assert conn.sql("select * from chunk_count order by 1").fetchall() == [("a", 2), ("b", 1)]


def test_empty_frame_creates_its_table(tmp_path: Path, instance: DagsterInstance) -> None:
    db = tmp_path / "g.duckdb"
    assert run(db, instance, [chunks], "empty").success
    with duckdb.connect(str(db), read_only=True) as conn:
        assert conn.sql("select count(*) from chunks").fetchall() == [(0,)]
        assert [r[0] for r in conn.sql("describe chunks").fetchall()] == ["document_key", "n", "text"]
    write_table(db, "nothing", pl.DataFrame(schema={"x": pl.Int64, "tags": pl.List(pl.String)}))
    assert read_table(db, "nothing").schema == pl.Schema({"x": pl.Int64, "tags": pl.List(pl.String)})


def test_rows_are_inserted_by_column_name_not_position(tmp_path: Path) -> None:
    db = tmp_path / "g.duckdb"
    write_partitions(db, "t", pl.DataFrame({"document_key": ["a"], "x": [1], "y": ["one"]}), "document_key", ["a"])
    write_partitions(db, "t", pl.DataFrame({"y": ["two"], "document_key": ["b"], "x": [2]}), "document_key", ["b"])
    assert read_table(db, "t").sort("x").to_dicts() == [
        {"document_key": "a", "x": 1, "y": "one"},
        {"document_key": "b", "x": 2, "y": "two"},
    ]


def test_partition_replace_is_atomic(tmp_path: Path) -> None:
    db = tmp_path / "g.duckdb"
    write_partitions(db, "t", pl.DataFrame({"document_key": ["a", "a"], "x": [1, 2]}), "document_key", ["a"])
    bad = pl.DataFrame({"document_key": ["a"], "x": ["not a number"]})
    with pytest.raises(duckdb.Error):
        write_partitions(db, "t", bad, "document_key", ["a"])
    assert sorted(read_table(db, "t")["x"].to_list()) == [1, 2]  # the delete was rolled back too
    write_partitions(db, "t", pl.DataFrame({"document_key": ["a"], "x": [9]}), "document_key", ["a"])
    assert read_table(db, "t")["x"].to_list() == [9]


def test_a_read_of_some_columns_and_partitions_gets_only_those(tmp_path: Path) -> None:
    db = tmp_path / "g.duckdb"
    rows = pl.DataFrame({"document_key": ["a", "b", "c"], "x": [1, 2, 3], "note": ["p", None, "r"]})
    write_partitions(db, "t", rows, "document_key", ["a", "b", "c"])
    read = read_table(db, "t", partition_column="document_key", partition_keys=["c", "a"], columns=["x"])
    assert read.sort("x").to_dicts() == [{"x": 1}, {"x": 3}]  # partitions chosen by a column not read
    assert read_table(db, "t", columns=["note"]).sort("note", nulls_last=True)["note"].to_list() == ["p", "r", None]


def test_writing_rows_of_another_partition_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cannot be written"):
        write_partitions(
            tmp_path / "g.duckdb", "t", pl.DataFrame({"document_key": ["b"], "x": [1]}), "document_key", ["a"]
        )


def test_new_columns_are_added_to_existing_tables(tmp_path: Path) -> None:
    db = tmp_path / "g.duckdb"
    write_partitions(db, "t", pl.DataFrame({"document_key": ["a"], "x": [1]}), "document_key", ["a"])
    write_partitions(db, "t", pl.DataFrame({"document_key": ["b"], "x": [2], "z": ["new"]}), "document_key", ["b"])
    assert read_table(db, "t").sort("x")["z"].to_list() == [None, "new"]


def test_delete_partitions_removes_rows_from_every_table(tmp_path: Path) -> None:
    db = tmp_path / "g.duckdb"
    for table in ("t1", "t2"):
        write_partitions(
            db, table, pl.DataFrame({"document_key": ["a", "b", "b"], "x": [1, 2, 3]}), "document_key", ["a", "b"]
        )
    deleted = delete_partitions(db, ["t1", "t2", "missing"], "document_key", ["b"])
    assert deleted == {"t1": 2, "t2": 2}
    assert read_table(db, "t1")["x"].to_list() == [1]


def test_whole_table_write_replaces_atomically(tmp_path: Path) -> None:
    db = tmp_path / "g.duckdb"
    write_table(db, "w", pl.DataFrame({"x": [1, 2]}))
    write_table(db, "w", pl.DataFrame({"x": [3], "y": ["new column"]}))
    assert read_table(db, "w").to_dicts() == [{"x": 3, "y": "new column"}]


def test_a_new_vector_size_replaces_the_column_type(tmp_path: Path) -> None:
    db = tmp_path / "g.duckdb"
    wide = pl.DataFrame(
        {"document_key": ["a", "b"], "vector": [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]},
        schema={"document_key": pl.String, "vector": pl.Array(pl.Float32, 3)},
    )
    write_partitions(db, "emb", wide, "document_key", ["a", "b"])
    narrow = pl.DataFrame(
        {"document_key": ["a"], "vector": [[7.0, 8.0]]},
        schema={"document_key": pl.String, "vector": pl.Array(pl.Float32, 2)},
    )
    write_partitions(db, "emb", narrow, "document_key", ["a"])
    rows = read_table(db, "emb").sort("document_key")
    assert rows.schema["vector"] == pl.Array(pl.Float32, 2)
    assert rows["vector"].to_list() == [[7.0, 8.0], None]  # b's old vector could not be kept; b is re-run anyway
    empty = pl.DataFrame(schema={"document_key": pl.String, "vector": pl.Array(pl.Float32, 1)})
    write_partitions(db, "emb", empty, "document_key", ["b"])  # an empty frame never retypes
    assert read_table(db, "emb").schema["vector"] == pl.Array(pl.Float32, 2)


def test_frames_make_the_column_types_pyarrow_made(tmp_path: Path) -> None:
    """Frames reach DuckDB through the Arrow C stream (``FrameStream``), no longer ``to_arrow()``:
    the tables they create have the types they had, with rows and without (placeholder types of
    empty frames), including a column of polars' Null type, which DuckDB refuses from the stream."""
    import datetime as dt

    db = tmp_path / "g.duckdb"
    frame = pl.DataFrame(
        {
            "text": ["a", None],
            "category": pl.Series(["x", "y"], dtype=pl.Categorical),
            "at": pl.Series([dt.datetime(2024, 1, 1, 12), None], dtype=pl.Datetime("us")),
            "day": [dt.date(2024, 1, 1), None],
            "count": pl.Series([1, None], dtype=pl.Int64),
            "small": pl.Series([1, None], dtype=pl.UInt32),
            "score": [0.5, None],
            "flag": [True, None],
            "ids": pl.Series([["a", "b"], []], dtype=pl.List(pl.String)),
            "children": pl.Series([[1], None], dtype=pl.List(pl.Int64)),
            "vector": pl.Series([[1.0, 2.0], None], dtype=pl.Array(pl.Float32, 2)),
            "nested": pl.Series([{"k": "v", "n": 1}, None]),
            "nothing": [None, None],
        }
    )
    expected = {
        "text": "VARCHAR",
        "category": "VARCHAR",
        "at": "TIMESTAMP",
        "day": "DATE",
        "count": "BIGINT",
        "small": "UINTEGER",
        "score": "DOUBLE",
        "flag": "BOOLEAN",
        "ids": "VARCHAR[]",
        "children": "BIGINT[]",
        "vector": "FLOAT[2]",
        "nested": "STRUCT(k VARCHAR, n BIGINT)",
        "nothing": '"NULL"',
    }
    write_table(db, "with_rows", frame)
    write_table(db, "without_rows", frame.clear())
    let_go()
    with duckdb.connect(str(db), read_only=True) as conn:
        for table in ("with_rows", "without_rows"):
            assert {row[0]: row[1] for row in conn.sql(f"describe {table}").fetchall()} == expected, table
        assert conn.sql("select * from with_rows").fetchall() == [
            (
                "a",
                "x",
                dt.datetime(2024, 1, 1, 12),
                dt.date(2024, 1, 1),
                1,
                1,
                0.5,
                True,
                ["a", "b"],
                [1],
                (1.0, 2.0),
                {"k": "v", "n": 1},
                None,
            ),
            (None, "y", None, None, None, None, None, None, [], None, None, None, None),
        ]
