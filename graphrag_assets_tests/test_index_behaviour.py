"""How `index` decides what to run: corpus settings, locks, touched files, grouping of changes."""

import os
import shutil
from pathlib import Path

import pytest

from graphrag_assets.core.errors import UserError
from graphrag_assets.core.settings import load_settings
from graphrag_assets.pipeline.indexing import index_project
from graphrag_assets.pipeline.partitions import contiguous_groups
from graphrag_assets.project.locks import index_lock
from graphrag_assets.project.status import project_status
from graphrag_assets_testkit.projects import query_db


@pytest.fixture
def project(nlp_index: Path, tmp_path: Path) -> Path:
    root = tmp_path / "project"
    shutil.copytree(nlp_index, root)
    return root


def test_contiguous_groups_follow_partition_order() -> None:
    order = ["a", "b", "c", "d", "e"]
    assert contiguous_groups(["b", "c", "e"], order) == [["b", "c"], ["e"]]
    assert contiguous_groups(order, order) == [order]
    assert contiguous_groups([], order) == []


def test_a_corpus_setting_change_rebuilds_the_corpus_only(project: Path) -> None:
    before = query_db(project, "select count(*) from communities")[0][0]
    with (project / "graphrag.yaml").open("a", encoding="utf-8") as handle:
        handle.write("communities:\n  max_cluster_size: 3\n")
    assert project_status(load_settings(project))["corpus"]["settings_changed"] is True
    report = index_project(load_settings(project))
    assert [run["job"] for run in report.runs] == ["corpus_job"]
    assert query_db(project, "select count(*) from communities")[0][0] > before
    assert project_status(load_settings(project))["corpus"]["stale"] is False
    assert index_project(load_settings(project)).runs == []


def test_a_per_document_setting_change_reruns_all_documents_as_one_range(project: Path) -> None:
    with (project / "graphrag.yaml").open("a", encoding="utf-8") as handle:
        handle.write("chunking:\n  size: 300\n  overlap: 30\n")
    report = index_project(load_settings(project))
    document_runs = [run for run in report.runs if run["job"] == "document_job"]
    assert len(document_runs) == 1 and len(document_runs[0]["partitions"]) == 8
    assert report.success and query_db(project, "select max(n_tokens) from text_units")[0][0] <= 300


def test_index_refuses_while_another_index_holds_the_lock(project: Path) -> None:
    settings = load_settings(project)
    with index_lock(settings):
        with pytest.raises(UserError, match="another 'graphrag-assets index' is updating"):
            index_project(settings)


def test_touched_files_are_hashed_once(project: Path) -> None:
    target = project / "data" / "input" / "letter_holm_to_varga.txt"
    os.utime(target, ns=(1_000_000_000, 1_000_000_000))
    first = index_project(load_settings(project))
    assert first.runs == [] and "letter_holm_to_varga.txt" in first.changes.hashes
    second = index_project(load_settings(project))
    assert second.changes.hashes == {}


def test_changing_the_embedder_re_embeds_everything_and_queries_say_when_they_do_not_match(project: Path) -> None:
    import lancedb
    from click.testing import CliRunner

    from graphrag_assets.cli.main import main

    with (project / "graphrag.yaml").open("a", encoding="utf-8") as handle:
        # the hashing fallback pinned: its dimension is the setting this test changes
        handle.write(
            "embeddings:\n  local_model: hashing\n  local_dimension: 256\nstorage:\n  lancedb_tables: always\n"
        )
    report = index_project(load_settings(project))
    assert report.success and len([r for r in report.runs if r["job"] == "document_job"]) == 1
    for table in ("text_unit_embeddings", "entity_embeddings", "community_report_embeddings"):
        assert query_db(project, f"select distinct len(vector) from {table}") == [(256,)], table
    db = lancedb.connect(str(project / "data" / "lancedb"))
    for name in ("text_unit_text", "entity_description", "community_full_content"):
        assert db.open_table(name).schema.field("vector").type.list_size == 256, name
    text = (
        (project / "graphrag.yaml").read_text(encoding="utf-8").replace("local_dimension: 256", "local_dimension: 128")
    )
    (project / "graphrag.yaml").write_text(text, encoding="utf-8")
    result = CliRunner().invoke(main, ["query", "Who is Søren Holm?", "--method", "basic", "--root", str(project)])
    assert result.exit_code == 1
    assert "vectors have 256 dimensions but the query embedder gives 128" in result.output


def test_a_document_whose_run_stopped_part_way_is_run_again_alone(project: Path) -> None:
    """A step that did not finish for the document's current version makes it incomplete."""
    import duckdb

    key = "letter_holm_to_varga.txt"
    with duckdb.connect(str(project / "data" / "graphrag.duckdb")) as conn:
        conn.execute(
            "update document_steps set content_hash = 'an older version' "
            "where document_key = ? and step = 'text_unit_embeddings'",
            [key],
        )
    assert project_status(load_settings(project))["documents"]["changed"] == [key]
    report = index_project(load_settings(project))
    assert [(run["job"], run["partitions"]) for run in report.runs] == [("document_job", [key]), ("corpus_job", [])]
    assert project_status(load_settings(project))["documents"]["changed"] == []
    assert index_project(load_settings(project)).runs == []


def test_a_missing_input_folder_deletes_nothing_unless_allowed(project: Path) -> None:
    from graphrag_assets.pipeline.indexing import IndexOptions

    documents = query_db(project, "select count(*) from documents")[0][0]
    (project / "graphrag.yaml").write_text(
        "method: nlp\nllm:\n  embeddings: local\ninput:\n  dir: data/inptu\n", encoding="utf-8"
    )
    with pytest.raises(
        UserError, match=r"data/inptu does not exist, but the index holds 8 document file\(s\); nothing was deleted"
    ):
        index_project(load_settings(project))
    assert query_db(project, "select count(*) from documents")[0][0] == documents
    report = index_project(load_settings(project), IndexOptions(allow_empty_input=True))
    assert report.success and len(report.changes.deleted) == 8
    assert query_db(project, "select count(*) from documents")[0][0] == 0


def test_the_cli_flag_allow_empty_input_is_wired(project: Path) -> None:
    from click.testing import CliRunner

    from graphrag_assets.cli.main import main

    shutil.rmtree(project / "data" / "input")
    (project / "data" / "input").mkdir()
    refused = CliRunner().invoke(main, ["index", "--root", str(project)])
    assert refused.exit_code == 1 and "holds no documents (.txt, .md, .csv, .json, .jsonl files)" in refused.output
    allowed = CliRunner().invoke(main, ["index", "--root", str(project), "--allow-empty-input"])
    assert allowed.exit_code == 0, allowed.output
    assert query_db(project, "select count(*) from source_files")[0][0] == 0


def test_an_empty_new_project_says_so_and_creates_nothing(tmp_path: Path) -> None:
    root = tmp_path / "empty"
    (root / "data" / "input").mkdir(parents=True)
    with pytest.raises(UserError, match=r"data/input holds no documents .*put documents there"):
        index_project(load_settings(root, environ={}))
    assert sorted(p.name for p in (root / "data").iterdir()) == ["input"]


def test_failed_runs_say_what_went_wrong_without_class_names() -> None:
    from graphrag_assets.pipeline.runtime.runner import _without_class_name

    assert (
        _without_class_name("graphrag_assets.core.errors.LLMError: the endpoint refused the key.", "LLMError")
        == "the endpoint refused the key."
    )
    assert _without_class_name("dagster._core.errors.DagsterError: step failed", "DagsterError") == "step failed"
    assert _without_class_name("builtins.KeyError: 'x'", "KeyError") == "KeyError: 'x'"


def test_vacuum_keeps_one_version_of_each_vector_table_and_queries_still_answer(project: Path) -> None:
    import json

    import duckdb
    import lancedb
    from click.testing import CliRunner

    from graphrag_assets.cli.main import main

    # over the limit of in-memory search: the update builds the LanceDB tables and the query below
    # searches them (not in memory), at the versions vacuum pinned
    (project / "graphrag.yaml").write_text(
        "method: nlp\nllm:\n  embeddings: local\nquery:\n  in_memory_search_max_tokens: 0\n", encoding="utf-8"
    )
    (project / "data" / "input" / "letter_holm_to_varga.txt").unlink()
    assert index_project(load_settings(project)).success
    db = lancedb.connect(str(project / "data" / "lancedb"))
    names = list(getattr(db.list_tables(), "tables", db.list_tables()))
    with duckdb.connect(str(project / "data" / "graphrag.duckdb")) as conn:
        conn.execute(
            "insert into llm_cache (key, kind, model, purpose, response) values ('k', 'chat', 'm', 'p', '{\"text\": \"Holm wrote\"}')"
        )
    before = {name: db.open_table(name).version for name in names}
    done = CliRunner().invoke(main, ["vacuum", "--root", str(project), "--drop-cache", "--json"])
    assert done.exit_code == 0, done.output
    figures = json.loads(done.output)
    assert figures["cache_rows_deleted"] == 1 and figures["bytes_after"] <= figures["bytes_before"]
    assert query_db(project, "select count(*) from llm_cache") == [(0,)]
    db = lancedb.connect(str(project / "data" / "lancedb"))
    assert names and all(len(db.open_table(name).list_versions()) == 1 for name in names), before
    answered = CliRunner().invoke(
        main, ["query", "Who is Søren Holm?", "--method", "local", "--root", str(project), "--json"]
    )
    assert answered.exit_code == 0, answered.output
    assert json.loads(answered.output)["context_records"]["entities"]


def test_vacuum_refuses_while_an_update_is_unpublished(project: Path) -> None:
    import polars as pl

    from graphrag_assets.project.vacuum import vacuum_index
    from graphrag_assets.storage.corpus import write_staged

    write_staged(project / "data" / "graphrag.duckdb", "entities", pl.DataFrame({"id": ["x"]}))
    with pytest.raises(UserError, match="stopped before it was published"):
        vacuum_index(load_settings(project))
