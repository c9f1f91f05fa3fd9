"""Reading the index: one shared read-only connection per block, and frames without pyarrow."""

from __future__ import annotations

import threading
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from graphrag_assets.storage.database import connect, frame_of, reading


@pytest.fixture
def database(tmp_path: Path) -> Path:
    path = tmp_path / "index.duckdb"
    with connect(path) as conn:
        conn.execute(
            "create table t as select 1::bigint as n, 'x' as s, [1.5, 2.5]::float[2] as v, ['a', 'b'] as l, "
            "{'k': 1, 'w': 'y'} as st, timestamp '2026-01-01 10:00' as ts, 1.25::decimal(10, 2) as d"
        )
    return path


def test_inside_reading_read_only_connections_are_one_and_closed_after(database: Path) -> None:
    with reading(database):
        with connect(database, read_only=True) as first, connect(database, read_only=True) as second:
            assert first is second
        seen: list[object] = []
        worker = threading.Thread(target=lambda: seen.append(_open_and_keep(database)))
        worker.start()
        worker.join()
        assert seen[0] is not first  # other threads open their own
    with connect(database) as writer:  # the shared connection is closed: a writer may open the file
        writer.execute("insert into t (n) values (2)")
    with connect(database, read_only=True) as a, connect(database, read_only=True) as b:
        assert a is not b


def _open_and_keep(path: Path) -> object:
    with connect(path, read_only=True) as conn:
        return conn


def test_frame_of_gives_the_frame_pyarrow_gives(database: Path) -> None:
    with connect(database, read_only=True) as conn:
        assert_frame_equal(frame_of(conn.sql("select * from t")), conn.sql("select * from t").pl())
        assert_frame_equal(
            frame_of(conn.sql("select * from t where n < 0")), conn.sql("select * from t where n < 0").pl()
        )


def test_frame_of_an_interval_is_an_ordinary_error_not_an_abort(database: Path) -> None:
    # Through the Arrow C stream polars panics on intervals (a BaseException that ends the
    # process); frame_of sends such results through pyarrow, which raises an ordinary error.
    with connect(database, read_only=True) as conn:
        with pytest.raises(pl.exceptions.PolarsError):
            frame_of(conn.sql("select interval 1 day as i"))
        assert frame_of(conn.sql("select 1 as n")).to_dicts() == [{"n": 1}]
