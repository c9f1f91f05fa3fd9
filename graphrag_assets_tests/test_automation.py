"""The input-folder sensor and schedule: what they request for add / change / delete / no change."""

import shutil
from datetime import UTC
from pathlib import Path

import pytest
from dagster import (
    AddDynamicPartitionsRequest,
    DeleteDynamicPartitionsRequest,
    SensorResult,
    SkipReason,
    build_schedule_context,
    build_sensor_context,
)
from dagster._core.storage.tags import ASSET_PARTITION_RANGE_END_TAG, ASSET_PARTITION_RANGE_START_TAG

from graphrag_assets.core.settings import load_settings
from graphrag_assets.pipeline.definitions import build_definitions
from graphrag_assets.pipeline.indexing import index_project
from graphrag_assets.pipeline.resources import GraphRAGProject
from graphrag_assets.pipeline.runtime.instance import open_instance
from graphrag_assets.pipeline.runtime.runner import run_job
from graphrag_assets.storage.vectors import TEXT_UNIT_TABLE, table_ids
from graphrag_assets_testkit.projects import query_db
from graphrag_assets_tests.sensor_ticks import tick


@pytest.fixture
def project(nlp_index: Path, tmp_path: Path) -> Path:
    root = tmp_path / "project"
    shutil.copytree(nlp_index, root)
    return root


def test_nothing_changed_requests_nothing(project: Path) -> None:
    result, _, _ = tick(project)
    assert isinstance(result, SkipReason) and "no new, changed or deleted" in result.skip_message


def test_new_files_get_partitions_one_range_run_then_a_corpus_run(project: Path) -> None:
    inputs = project / "data" / "input"
    (inputs / "zz_new_a.txt").write_text("Piet Oduya dives at Sable Reef.", encoding="utf-8")
    (inputs / "zz_new_b.txt").write_text("Zoë Alvarez runs Café Brisa.", encoding="utf-8")
    result, _, _ = tick(project)
    assert isinstance(result, SensorResult)
    (add,) = result.dynamic_partitions_requests
    assert isinstance(add, AddDynamicPartitionsRequest) and list(add.partition_keys) == ["zz_new_a.txt", "zz_new_b.txt"]
    documents, corpus = result.run_requests
    assert documents.job_name == "document_job"
    assert (documents.tags[ASSET_PARTITION_RANGE_START_TAG], documents.tags[ASSET_PARTITION_RANGE_END_TAG]) == (
        "zz_new_a.txt",
        "zz_new_b.txt",
    )
    assert corpus.job_name == "corpus_job" and corpus.partition_key is None
    again, _, _ = tick(project)
    assert [r.run_key for r in again.run_requests] == [
        r.run_key for r in result.run_requests
    ]  # deduplicated by Dagster


def test_changed_file_gets_its_own_run(project: Path) -> None:
    (project / "data" / "input" / "letter_holm_to_varga.txt").write_text("Søren Holm resigns.", encoding="utf-8")
    result, _, _ = tick(project)
    assert not result.dynamic_partitions_requests
    changed, corpus = result.run_requests
    assert changed.job_name == "document_job" and changed.partition_key == "letter_holm_to_varga.txt"
    assert corpus.job_name == "corpus_job"
    (project / "data" / "input" / "letter_holm_to_varga.txt").write_text("Søren Holm stays.", encoding="utf-8")
    second, _, _ = tick(project)
    assert second.run_requests[0].run_key != changed.run_key  # a new edit is a new request


def test_deleted_file_loses_its_partition_and_the_corpus_run_purges_its_rows(project: Path) -> None:
    with (project / "graphrag.yaml").open("a", encoding="utf-8") as handle:
        handle.write("storage:\n  lancedb_tables: always\n")  # the sample is small: LanceDB tables only when asked
    assert index_project(load_settings(project)).success
    key = "letter_holm_to_varga.txt"
    (project / "data" / "input" / key).unlink()
    result, instance, defs = tick(project)
    (delete,) = result.dynamic_partitions_requests
    assert isinstance(delete, DeleteDynamicPartitionsRequest) and list(delete.partition_keys) == [key]
    (corpus,) = result.run_requests
    assert corpus.job_name == "corpus_job"
    before_vectors = table_ids(project / "data" / "lancedb", TEXT_UNIT_TABLE)
    assert query_db(project, f"select count(*) from text_units where document_key = '{key}'") == [(1,)]
    # what the daemon does with the result: delete the partition, then run the corpus job
    instance.delete_dynamic_partition("documents", key)
    assert run_job(defs, instance, "corpus_job").success
    for table in (
        "source_files",
        "documents",
        "text_units",
        "graph_extractions",
        "extraction_status",
        "text_unit_embeddings",
    ):
        assert query_db(project, f"select count(*) from {table} where document_key = '{key}'") == [(0,)], table
    after_vectors = table_ids(project / "data" / "lancedb", TEXT_UNIT_TABLE)
    assert len(after_vectors) == len(before_vectors) - 1
    assert set(after_vectors) == {row[0] for row in query_db(project, "select id from text_units")}
    assert query_db(
        project, "select count(*) from corpus_manifest where document_key = 'letter_holm_to_varga.txt'"
    ) == [(0,)]
    assert isinstance(tick(project)[0], SkipReason)


def test_schedule_is_off_unless_a_cron_is_set_and_then_does_the_same_check(project: Path) -> None:
    assert not list(build_definitions(project).schedules or [])
    (project / "graphrag.yaml").write_text(
        (project / "graphrag.yaml").read_text() + "incremental:\n  schedule_cron: '0 * * * *'\n", encoding="utf-8"
    )
    defs = build_definitions(project)
    schedule = defs.resolve_schedule_def("input_files_schedule")
    instance = open_instance(load_settings(project))
    from datetime import datetime

    tick_time = datetime(2026, 11, 30, 12, tzinfo=UTC)
    with build_schedule_context(
        instance=instance, resources={"project": GraphRAGProject(root=str(project))}, scheduled_execution_time=tick_time
    ) as context:
        assert isinstance(schedule(context), SkipReason)
        (project / "data" / "input" / "zz_new.txt").write_text(
            "Mira Santos trains the lifeboat crew.", encoding="utf-8"
        )
        requests = schedule(context)
    assert [r.job_name for r in requests] == ["document_job", "corpus_job"]
    assert "zz_new.txt" in instance.get_dynamic_partitions("documents")


def test_no_new_requests_while_earlier_ones_are_pending(project: Path) -> None:
    from dagster import DagsterRunStatus
    from dagster._core.test_utils import create_run_for_test

    (project / "data" / "input" / "zz_new.txt").write_text("Mira Santos trains the lifeboat crew.", encoding="utf-8")
    first, instance, _ = tick(project)
    assert isinstance(first, SensorResult)
    create_run_for_test(
        instance, job_name="document_job", status=DagsterRunStatus.STARTED, tags={"graphrag/trigger": "sensor"}
    )
    second, _, _ = tick(project)
    assert isinstance(second, SkipReason) and "waiting for 1 run(s)" in second.skip_message


def test_a_stale_corpus_gets_one_corpus_run(project: Path) -> None:
    import duckdb

    with duckdb.connect(str(project / "data" / "graphrag.duckdb")) as conn:
        conn.execute("update corpus_manifest set content_hash = 'old' where document_key = 'interviews.jsonl'")
    result, _, _ = tick(project)
    assert not result.dynamic_partitions_requests
    assert [r.job_name for r in result.run_requests] == ["corpus_job"]


def test_a_file_returning_to_an_earlier_state_is_indexed_again(project: Path) -> None:
    """Run keys carry the cursor's generation, so an edit that restores earlier content is not dropped."""
    settings = load_settings(project)
    defs = build_definitions(project)
    instance = open_instance(settings)
    sensor = defs.resolve_sensor_def("input_files_sensor")
    path = project / "data" / "input" / "letter_holm_to_varga.txt"
    original = path.read_text(encoding="utf-8")
    keys = []
    cursor = None
    for text in ("Edited once.", original + " ", "Edited once."):
        path.write_text(text, encoding="utf-8")
        with build_sensor_context(
            instance=instance,
            cursor=cursor,
            resources={"project": GraphRAGProject(root=str(project))},
            definitions=defs,
        ) as context:
            result = sensor(context)
        keys.append(result.run_requests[0].run_key)
        cursor = result.cursor
    assert len(set(keys)) == 3 and keys[0].split(":")[2] == keys[2].split(":")[2]  # same change, new generation


def test_a_document_whose_extraction_failed_is_requested_again(project: Path) -> None:
    import duckdb

    with duckdb.connect(str(project / "data" / "graphrag.duckdb")) as conn:
        conn.execute(
            "update extraction_status set status = 'failed', error = 'model down' where document_key = 'interviews.jsonl'"
        )
    result, _, _ = tick(project)
    assert [(r.job_name, r.partition_key) for r in result.run_requests] == [
        ("document_job", "interviews.jsonl"),
        ("corpus_job", None),
    ]


def test_nothing_is_requested_while_the_cli_holds_the_index_lock(project: Path) -> None:
    from graphrag_assets.project.locks import index_lock

    (project / "data" / "input" / "zz_new.txt").write_text("Mira Santos trains the lifeboat crew.", encoding="utf-8")
    with index_lock(load_settings(project)):
        result, _, _ = tick(project)
    assert isinstance(result, SkipReason) and "graphrag-assets index" in result.skip_message
    assert isinstance(tick(project)[0], SensorResult)


def test_a_missing_input_folder_is_skipped_not_purged(project: Path) -> None:
    shutil.move(project / "data" / "input", project / "data" / "unmounted")
    result, _, _ = tick(project)
    assert (
        isinstance(result, SkipReason)
        and "does not exist, but the index holds 8 document file(s)" in result.skip_message
    )
