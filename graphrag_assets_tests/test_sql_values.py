"""``sql`` prints every DuckDB type sensibly, in table, CSV and JSON output, and never panics."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from graphrag_assets.cli.main import main
from graphrag_assets_testkit.projects import make_project


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project whose database holds one small table (enough to open it; the values are literals)."""
    root = make_project(tmp_path_factory.mktemp("sql-values") / "project", with_sample=False)
    with duckdb.connect(str(root / "data" / "graphrag.duckdb")) as conn:
        conn.execute("create table entities as select 'Søren Holm' as title")
    return root


def sql(root: Path, query: str, *flags: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["sql", query, "--root", str(root), *flags], catch_exceptions=False)
    return result.exit_code, result.output


# (query, the value as JSON gives it, text the table and CSV outputs hold)
VALUES = [
    ("select [interval 1 day, interval 2 hours] as v", "[1 day, '02:00:00']", "1 day"),
    ("select union_value(a := 1) as v", "1", "1"),
    ("select 'infinity'::date as v", "infinity", "infinity"),
    ("select '-infinity'::timestamp as v", "-infinity", "-infinity"),
    ("select '101'::bit as v", "101", "101"),
    ("select 12345678901234567890123::varint as v", "12345678901234567890123", "12345678901234567890123"),
    ("select '12:00:00+05'::timetz as v", "12:00:00+05", "12:00:00+05"),
    ("select 'a'::blob as v", "a", "a"),
]


@pytest.mark.parametrize(("query", "as_json", "shown"), VALUES, ids=[q.split()[1] for q, _, _ in VALUES])
def test_every_type_prints_in_each_output(project: Path, query: str, as_json: str, shown: str) -> None:
    code, out = sql(project, query, "--json")
    assert code == 0, out
    assert json.loads(out) == [{"v": as_json}]
    code, out = sql(project, query, "--csv")
    assert code == 0, out
    assert out.splitlines()[0] == "v" and shown in out.splitlines()[1]
    code, out = sql(project, query)
    assert code == 0, out
    assert shown in out and "b'" not in out and 'b"' not in out


def test_ordinary_values_keep_their_types(project: Path) -> None:
    query = "select 1 as n, 2.5 as x, true as ok, 'Søren Holm' as name, [1, 2] as ids, sum(3) as total"
    code, out = sql(project, query, "--json")
    assert code == 0 and json.loads(out) == [
        {"n": 1, "x": 2.5, "ok": True, "name": "Søren Holm", "ids": [1, 2], "total": 3}
    ]


def test_nested_values_print_in_csv(project: Path) -> None:
    code, out = sql(project, "select [1, 2] as ids, {'k': 'x'} as s, map {1: 'a'} as m", "--csv")
    assert code == 0, out
    assert out.splitlines() == ["ids,s,m", "\"[1, 2]\",{'k': x},{1=a}"]


def test_the_widest_integers_print_whole(project: Path) -> None:
    query = (
        "select 340282366920938463463374607431768211455::uhugeint as u, "
        "(-170141183460469231731687303715884105728)::hugeint as h"
    )
    code, out = sql(project, query, "--json")
    assert code == 0 and json.loads(out) == [
        {"u": "340282366920938463463374607431768211455", "h": -170141183460469231731687303715884105728}
    ]


def test_repeated_column_names_are_one_sentence(project: Path) -> None:
    code, out = sql(project, "select 1 as a, 2 as a")
    assert code == 1 and out == "error: the result has more than one column named a; name them apart with AS.\n"
