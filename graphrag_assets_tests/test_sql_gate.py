"""``sql`` never writes: on an existing index, every statement that writes or changes state is
refused (also wrapped in EXPLAIN ANALYZE or a WITH clause), nothing changes in the database or the
project folder and no file appears; and the database is opened as a reader."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from graphrag_assets.cli.main import main
from graphrag_assets_testkit.projects import query_db

OUTSIDE = "{outside}"  # where a statement would write a file; replaced by a fresh folder per test
TEMP = "{temp}"  # the database's temporary folder, which DuckDB lets queries write to


@pytest.fixture(scope="module")
def index_copy(nlp_index: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the offline sample index, with the database's temporary folder present."""
    root = tmp_path_factory.mktemp("sql-gate") / "project"
    shutil.copytree(nlp_index, root)
    (root / "data" / "graphrag.duckdb.tmp").mkdir(exist_ok=True)
    return root


def sql(root: Path, query: str, *flags: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["sql", query, "--root", str(root), *flags], catch_exceptions=False)
    return result.exit_code, result.output


def row_counts(root: Path) -> dict[str, int]:
    tables = [name for (name,) in query_db(root, "select table_name from duckdb_tables() order by 1")]
    assert "entities" in tables
    return {table: query_db(root, f'select count(*) from "{table}"')[0][0] for table in tables}


def folder_state(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(path.relative_to(folder)): _stamp(path) for path in sorted(folder.rglob("*"))}


def _stamp(path: Path) -> tuple[int, int]:
    info = path.stat()
    return (info.st_size if path.is_file() else 0, info.st_mtime_ns)


WRITES = [
    "EXPLAIN ANALYZE DELETE FROM entities",
    "WITH x AS (DELETE FROM entities RETURNING *) SELECT * FROM x",
    "SELECT (WITH x AS (UPDATE entities SET title = 'x' RETURNING *) SELECT count(*) FROM x)",
    "EXPLAIN ANALYZE WITH x AS (DELETE FROM entities RETURNING *) SELECT count(*) FROM x",
    f"COPY entities TO '{OUTSIDE}/x.csv'",
    f"EXPLAIN ANALYZE COPY entities TO '{OUTSIDE}/x.csv'",
    f"EXPLAIN ANALYZE COPY entities TO '{TEMP}/x.csv'",
    f"explain /* the plan */ analyze -- of\n copy (select * from entities) to '{TEMP}/y.parquet'",
    f"EXPLAIN (ANALYZE) COPY entities TO '{OUTSIDE}/x.csv'",
    f"EXPORT DATABASE '{OUTSIDE}/export'",
    f"ATTACH '{OUTSIDE}/other.duckdb' AS other",
    f"CALL enable_logging(storage = 'file', storage_path = '{OUTSIDE}/logs')",
    f"EXPLAIN ANALYZE CALL enable_logging(storage = 'file', storage_path = '{OUTSIDE}/logs')",
    f"SELECT * FROM enable_logging(storage = 'file', storage_path = '{OUTSIDE}/logs')",
    f"PRAGMA profiling_output = '{OUTSIDE}/profile.json'",
    "PRAGMA enable_profiling",
    "SET threads = 1",
    "SET enable_external_access = true",
    "EXPLAIN ANALYZE SET lock_configuration = false",
    "INSTALL json",
    "LOAD json",
    "CHECKPOINT",
    "EXPLAIN ANALYZE CHECKPOINT",
    "EXPLAIN ANALYZE CREATE TABLE copied AS SELECT * FROM entities",
    "DETACH graphrag",
    "VACUUM",
]


@pytest.mark.parametrize("file_access", [False, True], ids=["default", "allow-file-access"])
@pytest.mark.parametrize("statement", WRITES)
def test_no_statement_writes_anything(index_copy: Path, tmp_path: Path, statement: str, file_access: bool) -> None:
    data = index_copy / "data"
    outside = tmp_path / "outside"
    outside.mkdir()
    query = statement.replace(OUTSIDE, str(outside)).replace(TEMP, str(data / "graphrag.duckdb.tmp"))
    counts, before = row_counts(index_copy), folder_state(data)
    code, out = sql(index_copy, query, *(["--allow-file-access"] if file_access else []))
    assert code == 1 and out.startswith("error: ") and len(out.strip().splitlines()) == 1, out
    assert list(outside.iterdir()) == []
    assert folder_state(data) == before
    assert row_counts(index_copy) == counts


def test_reading_forms_still_pass(index_copy: Path) -> None:
    expected = query_db(index_copy, "select count(*) from entities")[0][0]
    for query in (
        "select count(*) as n from entities",
        "with x as (select * from entities) select count(*) as n from x",
        "from entities select count(*) as n",
    ):
        code, out = sql(index_copy, query, "--csv")
        assert (code, out) == (0, f"n\n{expected}\n"), query
    for query in ("explain analyze select count(*) from entities", "EXPLAIN (ANALYZE) select 1", "explain (select 1)"):
        code, out = sql(index_copy, query, "--json")
        assert code == 0 and "explain_value" in out, out
    for query in ("show tables", "describe entities", "summarize entities"):
        assert sql(index_copy, query)[0] == 0, query


def test_sql_reads_while_another_process_reads(index_copy: Path) -> None:
    """DuckDB lets several processes read a file, and none of them write it while one reads:
    ``sql`` opened read-write would wait for the reader below (then give up as locked)."""
    database = index_copy / "data" / "graphrag.duckdb"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, duckdb\n"
            f"conn = duckdb.connect({str(database)!r}, read_only=True)\n"
            "print('open', flush=True)\n"
            "sys.stdin.readline()\n",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "open"
        started = time.monotonic()
        code, out = sql(index_copy, "select count(*) as n from entities", "--csv")
        assert code == 0 and out.startswith("n\n"), out
        assert time.monotonic() - started < 10
    finally:
        holder.communicate("\n", timeout=10)
