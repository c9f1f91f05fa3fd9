"""`show` and `sql` print aligned tables that say how many rows they hold, not a polars dump."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import polars as pl
from click.testing import CliRunner

from graphrag_assets.cli.main import main
from graphrag_assets.cli.output import CELL_WIDTH, render_table


def cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


def test_a_table_is_aligned_text_with_numbers_right_and_no_dtypes() -> None:
    frame = pl.DataFrame(
        {
            "title": ["SCROOGE", "a\nlong " + "x" * 100, None],
            "degree": [12, 3, None],
            "cost": pl.Series([Decimal("219"), Decimal("1.50"), None], dtype=pl.Decimal(38, 2)),
        }
    )
    lines = render_table(frame).splitlines()
    assert lines[0].split() == ["title", "degree", "cost"]
    assert set(lines[1].replace(" ", "")) == {"-"}
    assert lines[2].split() == ["SCROOGE", "12", "219"] and lines[3].split()[-2:] == ["3", "1.50"]
    assert len(lines[2]) == len(lines[3]) == len(lines[1])  # numbers right-aligned under their headers
    assert len(lines[3].split("  ")[0]) == CELL_WIDTH and lines[3].split("  ")[0].endswith("…")
    assert lines[-1] == "(3 rows)"
    text = "\n".join(lines)
    assert "shape:" not in text and "decimal[" not in text and "i64" not in text and "str" not in text


def test_a_cut_table_says_how_many_rows_there_are_and_how_to_see_them() -> None:
    frame = pl.DataFrame({"n": list(range(50))})
    assert render_table(frame, total=219).splitlines()[-1] == "(50 of 219 rows; --all or --limit N for more)"
    assert render_table(pl.DataFrame({"n": [1]})).splitlines()[-1] == "(1 row)"


def test_sql_prints_a_table_and_cuts_it_where_asked(nlp_index: Path) -> None:
    root = str(nlp_index)
    total = json.loads(cli("sql", "select count(*) as n from entities", "--root", root, "--json")[1])[0]["n"]
    assert total > 5
    code, out = cli("sql", "select title, degree from entities order by degree desc", "--root", root, "--limit", "5")
    lines = out.splitlines()
    assert code == 0 and lines[0].split() == ["title", "degree"] and len(lines) == 2 + 5 + 1
    assert lines[-1] == f"(5 of {total} rows; --all or --limit N for more)"
    code, out = cli("sql", "select title from entities", "--root", root, "--all", "--limit", "5")
    assert code == 0 and out.splitlines()[-1] == f"({total} rows)" and len(out.splitlines()) == 2 + total + 1
    code, out = cli("sql", "select sum(degree) as s, 2.50::decimal(10,2) as d from entities", "--root", root)
    assert code == 0 and out.splitlines()[2].split()[1] == "2.5" and out.splitlines()[2].split()[0].isdigit()
    assert "decimal" not in out and "shape" not in out


def test_show_lists_say_how_many_match_and_all_lists_them_all(nlp_index: Path) -> None:
    root = str(nlp_index)
    total = len(json.loads(cli("show", "entities", "--root", root, "--all", "--json")[1]))
    assert total > 3
    code, out = cli("show", "entities", "--root", root, "--limit", "3")
    assert code == 0 and out.splitlines()[-1] == f"(3 of {total} rows; --all or --limit N for more)"
    assert out.splitlines()[0].split()[:4] == ["id", "title", "type", "degree"]
    code, out = cli("show", "entities", "--root", root, "--all")
    assert code == 0 and out.splitlines()[-1] == f"({total} rows)"
    rows = json.loads(cli("show", "reports", "--root", root, "--limit", "2", "--json")[1])
    assert len(rows) == 2 and "total_rows" not in rows[0]
    code, out = cli("show", "reports", "--root", root, "--search", "no such text anywhere")
    assert code == 0 and out.strip().endswith("(0 rows)")
