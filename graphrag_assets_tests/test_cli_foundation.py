"""The CLI's project commands on a temporary copy of the sample corpus (Dagster runs in-process)."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from graphrag_assets.cli.main import main
from graphrag_assets_testkit.projects import make_project


def cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def test_init_writes_project_files(tmp_path: Path) -> None:
    code, out = cli("init", "--root", str(tmp_path / "p"))
    assert code == 0
    for name in ("graphrag.yaml", "dagster.yaml", "workspace.yaml"):
        assert (tmp_path / "p" / name).exists() and f"wrote {tmp_path / 'p' / name}" in out
    assert (tmp_path / "p" / "data" / "input").is_dir()
    code, out = cli("init", "--root", str(tmp_path / "p"))
    assert code == 0 and "kept existing" in out


def test_bad_settings_file_gives_one_line_error(tmp_path: Path) -> None:
    (tmp_path / "graphrag.yaml").write_text("chunking:\n  size: lots\n")
    code, out = cli("status", "--root", str(tmp_path))
    assert code == 1
    assert out.strip().splitlines() == [
        "error: graphrag.yaml: 'chunking.size': Input should be a valid integer, unable to parse string as an integer (got 'lots')."
    ]


def test_sql_without_index_says_what_to_do(tmp_path: Path) -> None:
    code, out = cli("sql", "select 1", "--root", str(tmp_path))
    assert code == 1 and "run 'graphrag-assets index' first" in out


@pytest.fixture(scope="module")
def ingested(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = make_project(tmp_path_factory.mktemp("cli") / "project")
    code, out = cli("index", "--root", str(root), "--json")
    assert code == 0, out
    return root


def test_index_ingests_every_sample_file(ingested: Path) -> None:
    inputs = sorted(p for p in (ingested / "data" / "input").rglob("*") if p.is_file())
    with duckdb.connect(str(ingested / "data" / "graphrag.duckdb"), read_only=True) as conn:
        files = conn.sql("select count(*) from source_files where status = 'ingested'").fetchall()[0][0]
        units = conn.sql("select count(*), count(distinct id) from text_units").fetchall()[0]
        docs = conn.sql("select count(*) from documents where len(text_unit_ids) > 0").fetchall()[0][0]
    assert files == len(inputs)
    assert units[0] >= len(inputs) and units[0] == units[1]
    assert docs >= len(inputs)  # the csv and jsonl files hold several documents


def test_sql_reads_and_refuses_writes(ingested: Path) -> None:
    code, out = cli("sql", "select count(*) as n from text_units", "--root", str(ingested), "--json")
    assert code == 0 and json.loads(out)[0]["n"] > 0
    code, out = cli("sql", "delete from text_units", "--root", str(ingested))
    assert code == 1 and "only reads (SELECT, SHOW, DESCRIBE, EXPLAIN) and refuses DELETE" in out
    code, out = cli("sql", "select nope from text_units", "--root", str(ingested))
    assert code == 1 and out.startswith("error: the query failed: Binder Error")


def test_sql_refuses_side_effects_and_file_access_unless_allowed(ingested: Path, tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    code, out = cli("sql", f"call enable_logging(storage='file', storage_path='{logs}')", "--root", str(ingested))
    assert code == 1 and "refuses CALL" in out and not logs.exists()
    secret = tmp_path / "secret.txt"
    secret.write_text("not for you", encoding="utf-8")
    code, out = cli("sql", f"select content from read_text('{secret}')", "--root", str(ingested))
    assert code == 1 and "pass --allow-file-access if you mean it" in out and "not for you" not in out
    code, out = cli(
        "sql", f"select content from read_text('{secret}')", "--root", str(ingested), "--allow-file-access", "--csv"
    )
    assert code == 0 and "not for you" in out
    code, out = cli("sql", "show tables", "--root", str(ingested), "--csv")
    assert code == 0 and "text_units" in out


def test_index_again_does_nothing_then_picks_up_changes(ingested: Path) -> None:
    code, out = cli("index", "--root", str(ingested), "--json")
    report = json.loads(out[out.index("{") :])
    assert code == 0 and report["new"] == [] and report["changed"] == [] and report["runs"] == []
    inputs = ingested / "data" / "input"
    (inputs / "letter_holm_to_varga.txt").write_text("Søren Holm writes again.", encoding="utf-8")
    (inputs / "new note.md").write_text("A new note about Sable Reef.", encoding="utf-8")
    (inputs / "empty.md").write_text("")
    shutil.rmtree(inputs / "archive")
    code, out = cli("index", "--root", str(ingested), "--json")
    report = json.loads(out[out.index("{") :])
    assert code == 0, out
    assert report["new"] == ["empty.md", "new_note.md~" + report["new"][1].split("~")[1]]
    assert report["changed"] == ["letter_holm_to_varga.txt"]
    assert report["deleted"] == ["archive/kestrel_accord_summary.md", "archive/lantern_festival_2024_programme.txt"]
    assert report["deleted_rows"]["text_units"] >= 2
    with duckdb.connect(str(ingested / "data" / "graphrag.duckdb"), read_only=True) as conn:
        assert conn.sql("select count(*) from documents where path like 'archive/%'").fetchall() == [(0,)]
        assert conn.sql("select text from documents where path = 'letter_holm_to_varga.txt'").fetchall() == [
            ("Søren Holm writes again.",)
        ]
        assert conn.sql("select status from source_files where path = 'empty.md'").fetchall() == [("skipped",)]
    code, out = cli("status", "--root", str(ingested), "--json")
    status = json.loads(out)
    assert status["documents"]["new"] == [] and status["documents"]["skipped"][0]["document_key"] == "empty.md"
    assert status["tables"]["documents"] > 0


def test_console_script_is_installed() -> None:
    exe = Path(sys.executable).parent / "graphrag-assets"
    result = subprocess.run([str(exe), "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and "index" in result.stdout and "sql" in result.stdout


def test_without_an_endpoint_index_says_in_one_line_that_it_works_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    root = make_project(tmp_path / "p", with_sample=False)
    (root / "data" / "input" / "note.txt").write_text(
        "Søren Holm keeps the Kestrel Point Lighthouse near Vellmouth.", encoding="utf-8"
    )
    code, out = cli("index", "--root", str(root))
    assert code == 0, out
    lines = [line for line in out.splitlines() if "no model endpoint configured" in line]
    assert lines == ["method: nlp (no model endpoint configured: offline noun-phrase graph and local embeddings)"]
    assert sum(line.startswith("method:") for line in out.splitlines()) == 1
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    from graphrag_assets.core.settings import load_settings

    assert load_settings(root).resolved_method == "standard"


def test_took_counts_from_the_start_of_the_process() -> None:
    """`index` reports its time from process start (imports included), not from when indexing began."""
    code = "import time; time.sleep(0.6); from graphrag_assets.core.processes import seconds_since_start; print(seconds_since_start())"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert 0.6 <= float(done.stdout) < 30
