"""LanceDB tables only when the index needs them (``storage.lancedb_tables``).

The sample is far below ``query.in_memory_search_max_tokens``: with ``auto`` its index has no
LanceDB folder and queries search DuckDB's vectors in memory. Lowering the limit to 0 makes the
next ``index`` build the tables from DuckDB (the text units' in one write, with the full-text
index), record their versions with the build and store its search tables, which queries then
search by SQL (through LanceDB when a build has no search tables); from then on every run keeps
the tables in sync, deletions included.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from graphrag_assets.cli.main import main
from graphrag_assets.core.settings import Settings, load_settings
from graphrag_assets.pipeline.indexing import index_project
from graphrag_assets.project.query_data import load_query_data
from graphrag_assets.project.querying import answer_question
from graphrag_assets.project.status import project_status
from graphrag_assets.query.array_index import ArrayVectorIndex
from graphrag_assets.query.request import QueryOptions
from graphrag_assets.storage.corpus import vector_versions
from graphrag_assets.storage.database import connect
from graphrag_assets.storage.index_lookups import StoredVectors, StoredWords
from graphrag_assets.storage.search_tables import HEADER as SEARCH_HEADER
from graphrag_assets.storage.vectors import ENTITY_TABLE, REPORT_TABLE, TEXT_UNIT_TABLE, LanceVectorIndex, table_ids
from graphrag_assets_testkit.projects import query_db

SMALL = "method: nlp\nllm:\n  embeddings: local\n"
OVER_THE_LIMIT = SMALL + "query:\n  in_memory_search_max_tokens: 0\n"
QUESTION = "Who is Søren Holm?"


def settings_of(root: Path, exact: bool = False) -> Settings:
    """The project's settings; ``exact``: searches that only rank by cosine similarity (no BM25)."""
    settings = load_settings(root, environ={})
    if exact:
        settings.query.basic.mode = "vector"
        settings.query.local.ranking = "msgraphrag"
    return settings


def copy_of(nlp_index: Path, root: Path, settings_text: str) -> Path:
    shutil.copytree(nlp_index, root)
    (root / "graphrag.yaml").write_text(settings_text, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def grown(nlp_index: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample index after the in-memory limit was lowered to 0, updated once (nothing else changed)."""
    root = copy_of(nlp_index, tmp_path_factory.mktemp("grown") / "project", OVER_THE_LIMIT)
    assert project_status(settings_of(root))["corpus"]["lancedb_missing"] is True
    shown = CliRunner().invoke(main, ["status", "--root", str(root)])
    assert "no LanceDB tables yet; 'graphrag-assets index' builds them" in shown.output
    report = index_project(settings_of(root))
    assert report.success and [run["job"] for run in report.runs] == ["corpus_job"], report.as_dict()
    return root


def test_a_small_index_has_no_lancedb_tables_and_is_searched_in_memory(nlp_index: Path) -> None:
    settings = settings_of(nlp_index)
    assert not settings.lancedb_path.exists()
    assert vector_versions(settings.database_path) == {}
    assert project_status(settings)["corpus"]["lancedb_missing"] is False
    assert isinstance(load_query_data(settings).text_unit_text, ArrayVectorIndex)


def test_a_lowered_limit_searches_in_memory_until_the_next_index(nlp_index: Path, tmp_path: Path) -> None:
    """No error and the same answer: the build recorded no LanceDB tables, so the limit is not applied yet."""
    root = copy_of(nlp_index, tmp_path / "project", OVER_THE_LIMIT)
    data = load_query_data(settings_of(root))
    assert isinstance(data.text_unit_text, ArrayVectorIndex) and isinstance(data.entity_description, ArrayVectorIndex)
    lowered = answer_question(settings_of(root), QUESTION, QueryOptions(method="basic"))
    small = answer_question(settings_of(nlp_index), QUESTION, QueryOptions(method="basic"))
    assert lowered.context_records.citations("sources") == small.context_records.citations("sources") != []


def test_crossing_the_limit_builds_every_text_unit_with_its_full_text_index(grown: Path) -> None:
    import lancedb

    lance = grown / "data" / "lancedb"
    table = lancedb.connect(str(lance)).open_table(TEXT_UNIT_TABLE)
    units = dict(query_db(grown, "select id, text from text_units"))
    rows = table.to_arrow()
    assert dict(zip(rows.column("id").to_pylist(), rows.column("text").to_pylist())) == units
    written, indexed = table.list_versions()  # every row in one write (however many documents), then the index
    assert int(written["metadata"]["total_data_file_rows"]) == len(units) == table.count_rows()
    (fts,) = [index for index in table.list_indices() if "text" in index.columns]
    assert fts.index_type == "FTS"
    assert table_ids(lance, ENTITY_TABLE) == sorted(r[0] for r in query_db(grown, "select id from entities"))
    assert table_ids(lance, REPORT_TABLE) == sorted(r[0] for r in query_db(grown, "select id from community_reports"))
    assert set(vector_versions(grown / "data" / "graphrag.duckdb")) == {TEXT_UNIT_TABLE, ENTITY_TABLE, REPORT_TABLE}
    assert project_status(settings_of(grown))["corpus"]["lancedb_missing"] is False
    assert index_project(settings_of(grown)).runs == []  # built: nothing left to do


@pytest.fixture(scope="module")
def through_lancedb(grown: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The grown index as a build by code that stored no search tables: it is searched through LanceDB."""
    root = Path(
        shutil.copytree(grown, tmp_path_factory.mktemp("lancedb") / "project", ignore=shutil.ignore_patterns("*.lock"))
    )
    with connect(root / "data" / "graphrag.duckdb") as conn:
        conn.execute(f"drop table {SEARCH_HEADER}")
    return root


KINDS = [("local", ("entities", "relationships", "reports", "sources")), ("basic", ("sources",))]


@pytest.mark.parametrize(("method", "kinds"), KINDS)
def test_lancedb_search_finds_what_in_memory_search_finds(
    nlp_index: Path, through_lancedb: Path, method: str, kinds: tuple[str, ...]
) -> None:
    """Exact cosine search either way. Searches that fuse BM25 hits are left out: LanceDB's BM25 scores are not ours."""
    assert isinstance(load_query_data(settings_of(through_lancedb)).text_unit_text, LanceVectorIndex)
    over_lancedb = answer_question(settings_of(through_lancedb, exact=True), QUESTION, QueryOptions(method=method))
    in_memory = answer_question(settings_of(nlp_index, exact=True), QUESTION, QueryOptions(method=method))
    for kind in kinds:
        assert over_lancedb.context_records.citations(kind) == in_memory.context_records.citations(kind), kind
    assert over_lancedb.context_records.citations("sources")


@pytest.mark.parametrize(("method", "kinds"), KINDS)
def test_the_search_tables_find_what_in_memory_search_finds(
    nlp_index: Path, grown: Path, method: str, kinds: tuple[str, ...]
) -> None:
    """Vectors by SQL and BM25 over the stored words: the same context as in memory, hybrid search included."""
    data = load_query_data(settings_of(grown))
    assert isinstance(data.text_unit_text, StoredVectors) and isinstance(data.text_unit_lexical, StoredWords)
    over_tables = answer_question(settings_of(grown), QUESTION, QueryOptions(method=method))
    in_memory = answer_question(settings_of(nlp_index), QUESTION, QueryOptions(method=method))
    for kind in kinds:
        assert over_tables.context_records.citations(kind) == in_memory.context_records.citations(kind), kind
    assert over_tables.context_records.citations("sources")


def test_always_writes_the_tables_of_a_small_index_and_queries_answer_the_same(nlp_index: Path, tmp_path: Path) -> None:
    root = copy_of(nlp_index, tmp_path / "project", SMALL + "storage:\n  lancedb_tables: always\n")
    assert index_project(settings_of(root)).success
    assert table_ids(root / "data" / "lancedb", TEXT_UNIT_TABLE) == sorted(
        r[0] for r in query_db(root, "select id from text_units")
    )
    for method in ("basic", "local"):
        always = answer_question(settings_of(root), QUESTION, QueryOptions(method=method))
        auto = answer_question(settings_of(nlp_index), QUESTION, QueryOptions(method=method))
        assert always.context_records.citations("sources") == auto.context_records.citations("sources") != [], method


def test_once_built_the_tables_follow_changes_and_deletions(grown: Path, tmp_path: Path) -> None:
    root = tmp_path / "project"
    shutil.copytree(grown, root)
    # the corpus shrinks back under any limit: the tables exist, so they are still kept in sync
    (root / "graphrag.yaml").write_text(SMALL, encoding="utf-8")
    inputs = root / "data" / "input"
    deleted_key = "letter_holm_to_varga.txt"
    (inputs / deleted_key).unlink()
    (inputs / "zz_new.txt").write_text("Piet Oduya dives at Sable Reef with Søren Holm.", encoding="utf-8")
    report = index_project(settings_of(root))
    assert report.success and report.deleted_rows[f"lancedb:{TEXT_UNIT_TABLE}"] >= 1
    lance = root / "data" / "lancedb"
    ids = table_ids(lance, TEXT_UNIT_TABLE)
    assert ids == sorted(r[0] for r in query_db(root, "select id from text_units"))
    assert query_db(root, "select count(*) from text_units where document_key = 'zz_new.txt'") == [(1,)]
    assert table_ids(lance, ENTITY_TABLE) == sorted(r[0] for r in query_db(root, "select id from entities"))


def test_a_cold_index_over_the_limit_writes_the_text_units_once_in_the_corpus_run(tmp_path: Path) -> None:
    """The document runs skip LanceDB (no table yet); publishing the build writes every text unit in one go."""
    import lancedb

    from graphrag_assets_testkit.projects import make_project

    root = make_project(tmp_path / "project")
    (root / "graphrag.yaml").write_text(OVER_THE_LIMIT, encoding="utf-8")
    report = index_project(settings_of(root))
    assert report.success and [run["job"] for run in report.runs] == ["document_job", "corpus_job"]
    table = lancedb.connect(str(root / "data" / "lancedb")).open_table(TEXT_UNIT_TABLE)
    assert len(table.list_versions()) == 2  # the rows, then the full-text index
    assert table_ids(root / "data" / "lancedb", TEXT_UNIT_TABLE) == sorted(
        r[0] for r in query_db(root, "select id from text_units")
    )
    assert isinstance(load_query_data(settings_of(root)).text_unit_text, StoredVectors)  # its search tables


def test_keeping_some_scopes_deletes_the_rows_of_the_others_and_nothing_when_all_are_kept(tmp_path: Path) -> None:
    import polars as pl

    from graphrag_assets.storage.vectors import delete_scopes_except, lancedb_module, publish

    rows = pl.DataFrame(
        {
            "id": ["u1", "u2", "u3", "u4"],
            "vector": [[0.1, 0.2], [0.3, 0.4], [0.5, 0.6], [0.7, 0.8]],
            "text_hash": ["h1", "h2", "h3", "h4"],
            "document_key": ["a", "b", "b", "it's"],
        },
        schema_overrides={"vector": pl.Array(pl.Float32, 2)},
    )
    folder = tmp_path / "lancedb"
    made = publish(folder, "units", rows)
    assert delete_scopes_except(folder, "units", "document_key", ["a", "b", "it's", "c"]) == 0
    assert lancedb_module().connect(str(folder)).open_table("units").version == made.version  # nor a new version
    assert delete_scopes_except(folder, "units", "document_key", ["b"]) == 2
    assert table_ids(folder, "units") == ["u2", "u3"]
    assert delete_scopes_except(folder, "units", "document_key", []) == 2
    assert table_ids(folder, "units") == []
