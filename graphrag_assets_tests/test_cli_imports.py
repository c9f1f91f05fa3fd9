"""What each command imports: reading the index never loads Dagster, and a small index never LanceDB.

`status`, `sql`, `show` and an `index` with nothing to do load neither pyarrow nor numpy either, and a
cold `index` of a small corpus with the standard method loads neither (numpy costs 12 MB of the 300 MB
an index of A Christmas Carol may use).

Importing Dagster costs about a second and LanceDB about another; for `query`, `status`, `sql` and
`show` on a small index that would be most of the time a user waits.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from graphrag_assets.cli.main import COMMANDS, main

# The report is an atexit handler: `index` ends the console script's process through
# cli/process_exit.exit_now, which runs atexit handlers and then skips the interpreter's teardown.
PROBE = """
import atexit, json, sys
code = "no exit"
def report():
    modules = sorted(m for m in ("dagster", "lancedb", "openai", "pyarrow", "numpy") if m in sys.modules)
    print(json.dumps({"modules": modules, "code": code}), file=sys.stderr)
atexit.register(report)
sys.argv = ["graphrag-assets", *json.loads(sys.argv[1])]
from graphrag_assets.cli.main import main
try:
    main()
except SystemExit as exit:
    code = exit.code
except BaseException:
    code = "raised"
    raise
"""
HEAVY = ("dagster", "lancedb", "openai")


def loaded_by(args: list[str], watched: tuple[str, ...] = HEAVY) -> list[str]:
    """The ``watched`` modules the command imported; it must not fail (a failure may import less)."""
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(args)], capture_output=True, text=True, timeout=120)
    report = json.loads(done.stderr.strip().splitlines()[-1])
    # ("no exit": `index` ends through exit_now, which runs the report before any SystemExit)
    assert report["code"] in (0, None, "no exit"), (args, done.stdout[-500:], done.stderr[-2000:])
    return [m for m in report["modules"] if m in watched]


@pytest.mark.parametrize(
    "args",
    [
        ["query", "Who is Søren Holm?", "--method", "local"],
        ["query", "Who is Søren Holm?", "--method", "basic"],
        ["query", "What happened?", "--method", "global"],
        ["status"],
        ["sql", "select count(*) from entities"],
        ["show", "entity", "Søren Holm"],
    ],
    ids=["query-local", "query-basic", "query-global", "status", "sql", "show"],
)
def test_reading_commands_import_neither_dagster_nor_lancedb_on_a_small_index(nlp_index: Path, args: list[str]) -> None:
    assert loaded_by([*args, "--root", str(nlp_index)]) == []


@pytest.mark.parametrize(
    "args",
    [["status"], ["sql", "select count(*) from entities"], ["show", "entity", "Søren Holm"], ["index"]],
    ids=["status", "sql", "show", "index-nothing-to-do"],
)
def test_commands_that_only_read_tables_load_neither_pyarrow_nor_numpy(nlp_index: Path, args: list[str]) -> None:
    """DuckDB results reach polars through the Arrow C stream; `index` with nothing to do needs no Dagster."""
    assert loaded_by([*args, "--root", str(nlp_index)], (*HEAVY, "pyarrow", "numpy")) == []


def test_a_cold_index_of_a_small_corpus_never_imports_lancedb(tmp_path: Path) -> None:
    """storage.lancedb_tables: auto writes no LanceDB table while queries search in memory."""
    from graphrag_assets_testkit.projects import make_project

    root = make_project(tmp_path / "project")
    (root / "graphrag.yaml").write_text("method: nlp\nllm:\n  embeddings: local\n", encoding="utf-8")
    assert loaded_by(["index", "--root", str(root)], ("lancedb",)) == []
    assert (root / "data" / "graphrag.duckdb").is_file() and not (root / "data" / "lancedb").exists()


def test_a_cold_standard_index_of_a_small_corpus_never_imports_pyarrow_or_numpy(
    graphrag_server, tmp_path: Path
) -> None:
    """Frames reach DuckDB through the Arrow C stream and the cache writes its rows as list
    parameters: pyarrow (25 MB resident) would serve nothing else in this process. Vectors travel
    as ``array('f')`` and igraph's graphs are built without its numpy check (core/float32.py,
    index/communities.py): numpy (12 MB) would serve nothing else either."""
    from graphrag_assets_testkit.openai_server import embedding_vector
    from graphrag_assets_testkit.projects import query_db
    from graphrag_assets_tests.conftest import make_llm_project

    root = make_llm_project(tmp_path / "project", graphrag_server.base_url)
    assert loaded_by(["index", "--root", str(root)], ("pyarrow", "lancedb", "numpy")) == []
    # the run really wrote every kind of row that used to go through pyarrow
    for table in (
        "entities",
        "communities",
        "llm_cache",
        "embedding_cache",
        "llm_cache_owners",
        "llm_usage",
        "corpus_build",
        "document_steps",
    ):
        assert query_db(root, f"select count(*) from {table}")[0][0] > 0, table
    for table in ("text_unit_embeddings", "entity_embeddings", "community_report_embeddings"):
        rows, sizes = query_db(root, f"select count(*), list(distinct len(vector)) from {table}")[0]
        assert rows > 0 and len(sizes) == 1 and sizes[0] > 0, table
    # the vectors are the server's, number for number (they went from base64 to FLOAT[n] as bytes)
    [(text, vector)] = query_db(
        root, "select t.text, e.vector from text_unit_embeddings e join text_units t using (id) order by id limit 1"
    )
    assert vector == pytest.approx(embedding_vector(text, len(vector)), abs=1e-6)


@pytest.mark.parametrize("method", ["basic", "local"])
def test_a_large_index_is_searched_without_lancedb_unless_its_build_has_no_search_tables(
    big_build_index: Path, tmp_path: Path, method: str
) -> None:
    import shutil

    from graphrag_assets.storage.database import connect
    from graphrag_assets.storage.search_tables import HEADER

    question = ["query", "Who is Søren Holm?", "--method", method, "--root"]
    assert loaded_by([*question, str(big_build_index)]) == []  # vectors and words searched by DuckDB
    root = Path(shutil.copytree(big_build_index, tmp_path / "project", ignore=shutil.ignore_patterns("*.lock")))
    with connect(root / "data" / "graphrag.duckdb") as conn:
        conn.execute(f"drop table {HEADER}")  # as a build by code that stored no search tables
    assert loaded_by([*question, str(root)]) == ["lancedb"]


def test_every_command_in_the_lazy_list_is_the_command_it_names() -> None:
    import click

    context = click.Context(main)
    for name in COMMANDS:
        command = main.get_command(context, name)
        assert isinstance(command, click.Command) and command.name in (name, f"{name}_command"), name
