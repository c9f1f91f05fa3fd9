"""Import of a Microsoft GraphRAG v3 output folder, and our engines answering on it.

The real material is MS's own index of *A Christmas Carol* (``tests/verbs/data`` in ../shared;
those tests skip when it is absent). It has no ``lancedb/`` folder, so the import embeds every
text with the project's embedder (the offline local one here).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import polars as pl
import pyarrow.parquet as pq
import pytest

from graphrag_assets.core import schemas
from graphrag_assets.core.errors import UserError
from graphrag_assets.core.settings import load_settings
from graphrag_assets.interop.commands import export_index, import_index
from graphrag_assets.interop.msgraphrag import MS_SCHEMAS, ms_vector_table
from graphrag_assets.interop.msgraphrag_import import (
    attach_vectors,
    document_keys,
    our_community_reports,
    our_text_units,
)
from graphrag_assets.project.querying import answer_question
from graphrag_assets.query.request import QueryOptions
from graphrag_assets.storage.database import let_go
from graphrag_assets_testkit.shared_data import MS_VERBS_DATA, require
from graphrag_assets_tests.test_staged_writes import STAGED_TABLES_LEFT

MS_ROWS = {
    "documents": 1,
    "text_units": 42,
    "entities": 529,
    "relationships": 978,
    "communities": 122,
    "community_reports": 122,
    "covariates": 406,
}
QUESTION = "What happens to Scrooge after the ghosts visit him?"


# --- pure mapping ------------------------------------------------------------------------------


def test_document_keys_use_titles_and_disambiguate_repeats() -> None:
    documents = pl.DataFrame({"id": ["aaaaaaaaaaaa1", "bbbbbbbbbbbb2", "c3"], "title": ["same.txt", "same.txt", None]})
    assert document_keys(documents).rows() == [
        ("aaaaaaaaaaaa1", "imported/same.txt#aaaaaaaaaaaa"),
        ("bbbbbbbbbbbb2", "imported/same.txt#bbbbbbbbbbbb"),
        ("c3", "imported/c3"),
    ]


def test_text_units_get_chunk_index_per_document_in_ms_order() -> None:
    documents = pl.DataFrame({"id": ["d1", "d2"], "title": ["one.txt", "two.txt"]})
    units = pl.DataFrame(
        {
            "id": ["u3", "u1", "u2", "u4"],
            "human_readable_id": [3, 1, 2, 0],
            "text": ["c", "a", "b", "z"],
            "n_tokens": [1, 1, 1, 1],
            "document_id": ["d1", "d1", "d1", "d2"],
        }
    )
    result = our_text_units(units, documents)
    assert result.columns == list(schemas.TEXT_UNITS)
    assert result.select("id", "chunk_index", "human_readable_id", "document_key").rows() == [
        ("u3", 2, 2, "imported/one.txt"),
        ("u1", 0, 0, "imported/one.txt"),
        ("u2", 1, 1, "imported/one.txt"),
        ("u4", 0, 0, "imported/two.txt"),
    ]
    assert result["start_token"].null_count() == 4


def test_report_findings_are_matched_by_field_name() -> None:
    reports = pl.DataFrame(
        {
            "id": ["r"],
            "community": [0],
            "level": [0],
            "full_content": ["# T"],
            "findings": [[{"explanation": "E", "summary": "S"}]],
        }
    )
    result = our_community_reports(reports)
    assert result["findings"].to_list() == [[{"summary": "S", "explanation": "E"}]]
    assert result["generation"].to_list() == ["llm"]
    assert result.columns == list(schemas.COMMUNITY_REPORTS)


def test_attach_vectors_keeps_rows_with_a_vector_and_counts_the_rest() -> None:
    from graphrag_assets.index.embedding_texts import text_hashes

    texts = pl.DataFrame({"id": ["a", "b"], "text": ["x", "y"]})
    vectors = pl.DataFrame({"id": ["b", "zz"], "vector": [[1.0, 0.0], [0.0, 1.0]]})
    frame, without = attach_vectors(texts, vectors, "model-x")
    assert without == 1
    assert frame.rows() == [("b", text_hashes("model-x", ["y"])[0], [1.0, 0.0], "model-x")]
    assert frame.schema["vector"] == pl.Array(pl.Float32, 2)


# --- errors --------------------------------------------------------------------------------------


def test_missing_parquet_files_are_named(tmp_path: Path) -> None:
    source = tmp_path / "ms"
    source.mkdir()
    pl.DataFrame({"id": ["e"], "title": ["E"]}).write_parquet(source / "entities.parquet")
    settings = load_settings(tmp_path, environ={})
    with pytest.raises(UserError) as error:
        import_index(settings, "msgraphrag", source)
    message = str(error.value)
    for name in (
        "documents.parquet",
        "text_units.parquet",
        "relationships.parquet",
        "communities.parquet",
        "community_reports.parquet",
    ):
        assert name in message
    assert "entities.parquet" not in message
    with pytest.raises(UserError, match="does not exist"):
        import_index(settings, "msgraphrag", tmp_path / "nowhere")
    with pytest.raises(UserError, match="unknown import format 'neo4j'"):
        import_index(settings, "neo4j", source)


# --- Microsoft's Christmas Carol index -----------------------------------------------------------


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory):
    require(MS_VERBS_DATA)
    root = tmp_path_factory.mktemp("import") / "project"
    root.mkdir()
    # the hashing fallback pinned: the test checks its model name and dimension
    settings = load_settings(root, environ={}, overrides={"embeddings": {"local_model": "hashing"}})
    result = import_index(settings, "msgraphrag", MS_VERBS_DATA)
    let_go()  # the tests read the file with DuckDB directly, which cannot share the warm read-write instance
    return settings, result


def ms_ids(table: str) -> set[str]:
    return set(pl.read_parquet(MS_VERBS_DATA / f"{table}.parquet", columns=["id"])["id"])


def test_import_keeps_every_row_and_id(imported) -> None:
    settings, result = imported
    assert {k: v for k, v in result.rows.items() if k in MS_ROWS} == MS_ROWS
    with duckdb.connect(str(settings.database_path), read_only=True) as conn:
        for table in MS_ROWS:
            ids = {row[0] for row in conn.sql(f"select id from {table}").fetchall()}
            assert ids == ms_ids(table), table
        keys = conn.sql("select distinct document_key from text_units").fetchall()
        chunks = sorted(row[0] for row in conn.sql("select chunk_index from text_units").fetchall())
        generations = conn.sql("select distinct generation from community_reports").fetchall()
        finding = conn.sql("select findings[1].summary from community_reports where community = 0").fetchall()[0][0]
        directed = conn.sql("select count(*) from relationships where source > target").fetchall()[0][0]
    assert keys == [("imported/a-christmas-carol.txt",)]
    assert chunks == list(range(42))
    assert generations == [("llm",)]
    theirs = pl.read_parquet(MS_VERBS_DATA / "community_reports.parquet").filter(pl.col("community") == 0)
    assert finding == theirs["findings"][0][0]["summary"]
    assert directed > 0  # MS's relationship direction is kept as written
    assert result.warnings == ["84 relationship(s) name an entity missing from entities.parquet; kept as they are."]


def test_an_imported_index_is_a_published_build(imported) -> None:
    from graphrag_assets.project.status import project_status

    settings, _ = imported
    corpus = project_status(settings)["corpus"]
    assert corpus["built"] and not corpus["stale"] and not corpus["unfinished"]
    with duckdb.connect(str(settings.database_path), read_only=True) as conn:
        assert conn.sql(STAGED_TABLES_LEFT).fetchall() == [(0,)]
        # the source is recorded as its canonical path (links resolved), the one the CLI prints too
        assert conn.sql("select run_id from corpus_build").fetchall() == [(f"import:{MS_VERBS_DATA.resolve()}",)]


def test_import_embeds_every_text_with_the_project_embedder(imported) -> None:
    from graphrag_assets.storage.vectors import table_names

    settings, result = imported
    assert result.embeddings == {
        "text_unit_embeddings": "computed",
        "entity_embeddings": "computed",
        "community_report_embeddings": "computed",
    }
    with duckdb.connect(str(settings.database_path), read_only=True) as conn:
        for table, ms_table in (
            ("text_unit_embeddings", "text_units"),
            ("entity_embeddings", "entities"),
            ("community_report_embeddings", "community_reports"),
        ):
            assert {row[0] for row in conn.sql(f"select id from {table}").fetchall()} == ms_ids(ms_table), table
        models = conn.sql("select distinct model from entity_embeddings").fetchall()
        kinds = {row[0]: row[1] for row in conn.sql("describe text_unit_embeddings").fetchall()}
    assert models == [("local-hash-v1-512",)]
    assert kinds["vector"] == "FLOAT[512]" and "document_key" in kinds
    # 42 text units are searched in memory (storage.lancedb_tables: auto): no LanceDB tables written
    assert table_names(settings.lancedb_path) == [] and not any(key.startswith("lancedb/") for key in result.rows)


def test_import_writes_lancedb_tables_as_an_index_would(tmp_path: Path) -> None:
    from graphrag_assets.storage.vectors import ENTITY_TABLE, REPORT_TABLE, TEXT_UNIT_TABLE, table_ids, table_names

    require(MS_VERBS_DATA)
    root = tmp_path / "project"
    root.mkdir()
    always = load_settings(root, environ={}, overrides={"storage": {"lancedb_tables": "always"}})
    result = import_index(always, "msgraphrag", MS_VERBS_DATA)
    assert table_ids(always.lancedb_path, TEXT_UNIT_TABLE) == sorted(ms_ids("text_units"))
    assert table_ids(always.lancedb_path, ENTITY_TABLE) == sorted(ms_ids("entities"))
    assert table_ids(always.lancedb_path, REPORT_TABLE) == sorted(ms_ids("community_reports"))
    assert result.rows[f"lancedb/{TEXT_UNIT_TABLE}"] == 42
    assert answer_question(always, QUESTION, QueryOptions(method="basic")).context_records.ids("sources")
    # replaced by an import that keeps none (auto, small): the old tables go, queries search in memory
    let_go()
    auto = load_settings(root, environ={})
    import_index(auto, "msgraphrag", MS_VERBS_DATA, force=True)
    assert table_names(auto.lancedb_path) == []
    assert answer_question(auto, QUESTION, QueryOptions(method="basic")).context_records.ids("sources")


@pytest.mark.parametrize(
    "method, kinds",
    [
        ("local", ("entities", "sources", "reports")),
        ("global", ("reports",)),
        ("basic", ("sources",)),
    ],
)
def test_our_engines_answer_on_the_imported_index(imported, method: str, kinds: tuple[str, ...]) -> None:
    settings, _ = imported
    result = answer_question(settings, QUESTION, QueryOptions(method=method))
    assert not result.llm_used and "Scrooge" in result.answer
    tables = {"entities": "entities", "sources": "text_units", "reports": "community_reports"}
    for kind in kinds:
        cited = set(result.context_records.ids(kind))
        assert cited and cited <= ms_ids(tables[kind]), kind


def test_import_refuses_to_replace_an_index_unless_forced(imported, tmp_path: Path) -> None:
    settings, _ = imported
    with pytest.raises(UserError, match="already has an index; pass --force"):
        import_index(settings, "msgraphrag", MS_VERBS_DATA)


def test_reexport_reproduces_ms_files(imported, tmp_path: Path) -> None:
    settings, _ = imported
    out = tmp_path / "again"
    export_index(settings, "msgraphrag", out)
    for name in MS_SCHEMAS:
        ours = pq.read_table(out / f"{name}.parquet")
        theirs = pq.read_table(MS_VERBS_DATA / f"{name}.parquet")
        assert ours.schema.remove_metadata().equals(theirs.schema.remove_metadata()), name
        assert set(ours.column("id").to_pylist()) == set(theirs.column("id").to_pylist()), name
    units = pl.read_parquet(out / "text_units.parquet").sort("id")
    theirs = pl.read_parquet(MS_VERBS_DATA / "text_units.parquet").sort("id")
    assert units["human_readable_id"].sort().to_list() == list(range(42))
    for column in ("entity_ids", "relationship_ids", "covariate_ids"):
        assert [set(x) for x in units[column]] == [set(x) for x in theirs[column]], column


def test_vectors_in_lancedb_are_imported_for_an_endpoint_embedder(tmp_path: Path) -> None:
    require(MS_VERBS_DATA)
    source = tmp_path / "ms"
    shutil.copytree(MS_VERBS_DATA, source)
    dimension = 8
    import lancedb

    db = lancedb.connect(str(source / "lancedb"))
    for lance_name, table in (
        ("text_unit_text", "text_units"),
        ("entity_description", "entities"),
        ("community_full_content", "community_reports"),
    ):
        ids = sorted(ms_ids(table))
        vectors = pl.DataFrame(
            {"id": ids, "vector": [[float(i % 7), 1.0] + [0.0] * (dimension - 2) for i in range(len(ids))]}
        )
        db.create_table(lance_name, data=ms_vector_table(vectors, "2025-01-02T03:04:05+00:00"))
    root = tmp_path / "project"
    root.mkdir()
    # An endpoint embedder that is never called: every table has its vectors.
    endpoint = {
        "llm": {
            "embeddings": "openai",
            "base_url": "http://127.0.0.1:9/v1",
            "embedding_model": "text-embedding-3-large",
        }
    }
    settings = load_settings(root, environ={}, overrides=endpoint)
    result = import_index(settings, "msgraphrag", source)
    assert set(result.embeddings.values()) == {"imported"} and not any("lancedb" in w for w in result.warnings)
    let_go()
    with duckdb.connect(str(settings.database_path), read_only=True) as conn:
        kinds = {row[0]: row[1] for row in conn.sql("describe entity_embeddings").fetchall()}
        models = conn.sql("select distinct model from community_report_embeddings").fetchall()
    assert kinds["vector"] == f"FLOAT[{dimension}]" and models == [("text-embedding-3-large",)]

    offline = load_settings(tmp_path / "project", environ={})
    again = import_index(offline, "msgraphrag", source, force=True)
    assert set(again.embeddings.values()) == {"computed"}
    assert any("embedded again with the local embedder" in w for w in again.warnings)


def test_our_own_export_reimported_offline_keeps_its_vectors(nlp_index: Path, tmp_path: Path) -> None:
    """An export of an offline index, imported offline again: the vectors are the local embedder's
    own (the export records its model), so they are kept, with no warning and nothing re-embedded."""
    exported = tmp_path / "export"
    export_index(load_settings(nlp_index, environ={}), "msgraphrag", exported)
    root = tmp_path / "project"
    root.mkdir()
    settings = load_settings(root, environ={})
    result = import_index(settings, "msgraphrag", exported)
    assert set(result.embeddings.values()) == {"imported"}
    assert not any("lancedb" in w or "embedded again" in w for w in result.warnings)
    let_go()
    query = "select id, vector, model from entity_embeddings order by id"
    with duckdb.connect(str(settings.database_path), read_only=True) as conn:
        imported = conn.sql(query).pl()
    with duckdb.connect(str(nlp_index / "data" / "graphrag.duckdb"), read_only=True) as conn:
        original = conn.sql(query).pl()
    assert imported.height > 0 and imported.equals(original)
