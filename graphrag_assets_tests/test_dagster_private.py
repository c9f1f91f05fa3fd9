"""Each private Dagster API we use (pipeline/runtime/dagster_private.py) still does what we rely on.

Private names can move or change in any Dagster release. Every use is exercised here for real (a
run through our uncaptured execution, our storage and our compute-log manager; the storage
layout we read without Dagster; the private methods our storage subclasses call or override), so
an upgrade that breaks one fails a test named after it instead of an index run. The last test
keeps every other module off ``dagster._``.
"""

import importlib
import inspect
import io
import os
import re
from pathlib import Path

import pytest
import yaml
from dagster import (
    AssetExecutionContext,
    AssetKey,
    AssetMaterialization,
    BackfillPolicy,
    DagsterEventType,
    DagsterInstance,
    DagsterRunStatus,
    Definitions,
    EventRecordsFilter,
    StaticPartitionsDefinition,
    asset,
    define_asset_job,
    in_process_executor,
    job,
    op,
)

from graphrag_assets.pipeline.runtime import dagster_private as private
from graphrag_assets.pipeline.runtime.compute_logs import MirroredComputeLogManager
from graphrag_assets.pipeline.runtime.dagster_files import EVENT_INDEX_DB, RUNS_DB
from graphrag_assets.pipeline.runtime.event_log import (
    BatchedSqliteEventLogStorage,
    BatchedSqliteStorage,
    KeptEngineRunStorage,
)
from graphrag_assets.pipeline.runtime.uncaptured import execute_without_capture

PACKAGE = Path(__file__).resolve().parents[1] / "graphrag_assets"
LETTERS = StaticPartitionsDefinition(["a", "b", "c"])
seen: dict[str, object] = {}


@asset(partitions_def=LETTERS, backfill_policy=BackfillPolicy.single_run())
def letters(context: AssetExecutionContext) -> None:
    seen["range"] = (context.partition_key_range.start, context.partition_key_range.end)
    private.add_partition_metadata(context, "letters", {key: {"letter": key.upper()} for key in context.partition_keys})
    print("a line for the compute log", flush=True)


JOB = Definitions(
    assets=[letters], jobs=[define_asset_job("letters_job", [letters])], executor=in_process_executor
).resolve_job_def("letters_job")


def project_instance(base: Path) -> DagsterInstance:
    """An instance as pipeline/runtime/instance.py builds one: our storage, artifact storage and compute logs."""
    overrides = {
        "storage": {
            "custom": {
                "module": BatchedSqliteStorage.__module__,
                "class": "BatchedSqliteStorage",
                "config": {"base_dir": str(base / "storage")},
            }
        },
        "local_artifact_storage": {**private.LOCAL_ARTIFACT_STORAGE, "config": {"base_dir": str(base)}},
        "compute_logs": {
            "module": MirroredComputeLogManager.__module__,
            "class": "MirroredComputeLogManager",
            "config": {"base_dir": str(base / "compute_logs")},
        },
        "telemetry": {"enabled": False},
    }
    return DagsterInstance.from_ref(private.InstanceRef.from_dir(str(base), overrides=overrides))


@pytest.fixture(scope="module")
def range_run(tmp_path_factory: pytest.TempPathFactory):
    """One range run of partitions a..b, executed the way pipeline/runtime/runner.py executes ours."""
    base = tmp_path_factory.mktemp("dagster")
    instance = project_instance(base)
    tags = {
        private.ASSET_PARTITION_RANGE_START_TAG: "a",
        private.ASSET_PARTITION_RANGE_END_TAG: "b",
        private.REPOSITORY_LABEL_TAG: f"{private.SINGLETON_REPOSITORY_NAME}@test",
    }
    seen.clear()
    with private.set_defs_state_storage(instance.defs_state_storage):
        result = execute_without_capture(JOB, run_config={}, instance=instance, partition_key=None, tags=tags)
    yield base, instance, result
    instance.dispose()


def materializations(instance: DagsterInstance) -> dict[str, dict]:
    records = instance.get_event_records(EventRecordsFilter(DagsterEventType.ASSET_MATERIALIZATION))
    return {
        r.event_log_entry.dagster_event.partition: {
            k: v.value for k, v in r.event_log_entry.asset_materialization.metadata.items()
        }
        for r in records
    }


def test_range_run_tags_make_one_run_of_a_partition_range(range_run) -> None:
    _, instance, result = range_run
    assert result.success
    assert seen["range"] == ("a", "b")
    run = instance.get_run_by_id(result.run_id)
    assert run.tags[private.REPOSITORY_LABEL_TAG] == "__repository__@test"
    assert run.status == DagsterRunStatus.SUCCESS


def test_the_uis_materialize_job_has_a_reserved_name(tmp_path: Path) -> None:
    """What the UI's "Materialize" button runs: the implicit asset job (pipeline/resources.py)."""
    from graphrag_assets.pipeline.definitions import build_definitions
    from graphrag_assets_testkit.projects import make_project

    defs = build_definitions(make_project(tmp_path / "project"))
    assert private.is_reserved_asset_job_name(defs.resolve_implicit_global_asset_job_def().name)
    assert not private.is_reserved_asset_job_name("corpus_job")


def test_execute_in_process_without_capture_keeps_no_outputs(range_run) -> None:
    """InMemoryJob, core_execute_in_process and merge_run_tags (pipeline/runtime/uncaptured.py)."""
    _, _, result = range_run
    assert result.success
    with pytest.raises(Exception):  # noqa: B017 - any error: the output was not captured
        result.output_for_node("letters")


def test_partition_metadata_goes_through_the_step_accumulator(range_run) -> None:
    _, instance, _ = range_run
    assert materializations(instance) == {"a": {"letter": "A"}, "b": {"letter": "B"}}


def test_our_storage_writes_through_the_private_sqlite_storages(range_run) -> None:
    base, instance, result = range_run
    assert isinstance(instance.event_log_storage, BatchedSqliteEventLogStorage)
    assert isinstance(instance.run_storage, KeptEngineRunStorage)
    assert isinstance(instance.schedule_storage, private.SqliteScheduleStorage)
    # the layout pipeline/runtime/dagster_files.py reads without Dagster
    storage = base / "storage"
    assert Path(private.runs_directory(str(storage))) / "runs.db" == base / RUNS_DB
    assert Path(private.event_logs_directory(str(storage))) / "index.db" == base / EVENT_INDEX_DB
    assert (base / RUNS_DB).is_file() and (base / EVENT_INDEX_DB).is_file()
    assert Path(private.schedule_directory(str(storage))).is_dir()
    assert private.INDEX_SHARD_NAME == "index"
    assert private.SQLITE_BUSY_TIMEOUT_SECONDS > 0
    # event kinds the batched writer sorts by
    kinds = {e.dagster_event_type for e in instance.all_logs(result.run_id) if e.is_dagster_event}
    assert DagsterEventType.ASSET_MATERIALIZATION in kinds & set(private.ASSET_EVENTS)
    assert DagsterEventType.RUN_SUCCESS in private.EVENT_TYPE_TO_PIPELINE_RUN_STATUS
    assert DagsterEventType.ASSET_CHECK_EVALUATION in private.ASSET_CHECK_EVENTS
    # rows are made for Dagster's event table
    entry = instance.all_logs(result.run_id)[0]
    row = instance.event_log_storage._event_to_row(entry)  # noqa: SLF001
    assert set(row) <= set(private.SqlEventLogStorageTable.c.keys())
    # the storage describes its event log by a class path Dagster can rehydrate
    storage = instance.get_ref().storage
    assert isinstance(storage, BatchedSqliteStorage) and isinstance(storage, private.DagsterSqliteStorage)
    data = storage.event_storage_data
    assert isinstance(data, private.ConfigurableClassData)
    rehydrated = data.rehydrate(private.SqliteEventLogStorage)
    assert isinstance(rehydrated, BatchedSqliteEventLogStorage)
    rehydrated.dispose()
    storage.dispose()


@op
def note_letters(context) -> None:
    private.log_materializations(context, [AssetMaterialization("noted", partition=key) for key in ("a", "b", "c")])


@job(executor_def=in_process_executor)
def note_job() -> None:
    note_letters()


def test_an_ops_materializations_are_stored_as_one_batch(tmp_path: Path) -> None:
    """The workers job's collect step (pipeline/workers.py): every partition's materialization
    stored, none left in the instance's batch buffer."""
    instance = project_instance(tmp_path)
    try:
        result = execute_without_capture(note_job, run_config={}, instance=instance, partition_key=None, tags={})
        assert result.success
        stored = instance.fetch_materializations(AssetKey("noted"), limit=10).records
        assert sorted(record.partition_key for record in stored) == ["a", "b", "c"]
        assert {record.run_id for record in stored} == {result.run_id}
        assert instance.get_materialized_partitions(AssetKey("noted")) == {"a", "b", "c"}
    finally:
        instance.dispose()


def test_compute_logs_are_captured_by_our_manager(range_run) -> None:
    base, instance, result = range_run
    assert isinstance(instance.compute_log_manager, MirroredComputeLogManager)
    assert isinstance(instance.compute_log_manager, private.LocalComputeLogManager)
    logs = base / "compute_logs"
    out = private.IO_TYPE_EXTENSION[private.ComputeIOType.STDOUT]
    assert "a line for the compute log" in "".join(p.read_text() for p in logs.rglob(f"*.{out}"))
    assert list(logs.rglob("*.complete"))  # touch_file: Dagster's mark of a finished capture
    assert inspect.signature(private.CapturedLogContext).parameters["log_key"]


def test_file_helpers_and_redirect(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "out.log"
    private.ensure_file(str(target))
    assert target.is_file()
    private.touch_file(str(tmp_path / "done.complete"))
    assert (tmp_path / "done.complete").is_file()
    with open(tmp_path / "stream", "w") as stream:
        with private.redirect_to_file(stream, str(target)):
            os.write(stream.fileno(), b"native write\n")
    assert target.read_text() == "native write\n"
    with pytest.raises(io.UnsupportedOperation):  # a stream without a descriptor: we fall back (compute_logs)
        io.StringIO().fileno()


# Private methods and attributes our storage subclasses (pipeline/runtime/event_log.py) call or override.
PRIVATE_METHODS = [
    (private.SqliteEventLogStorage, "_connect", ["shard"]),
    (private.SqliteEventLogStorage, "_initdb", ["engine"]),
    (private.SqliteEventLogStorage, "conn_string_for_shard", ["shard_name"]),
    (private.SqliteEventLogStorage, "run_connection", ["run_id"]),
    (private.SqliteEventLogStorage, "index_connection", []),
    (private.SqliteEventLogStorage, "index_transaction", []),
    (private.SqliteEventLogStorage, "has_table", ["table_name"]),
    (private.SqliteEventLogStorage, "store_event_batch", ["events"]),
    (private.SqliteEventLogStorage, "_event_to_row", ["event"]),
    (private.SqliteEventLogStorage, "_store_asset_event_tags", ["conn", "events", "event_ids"]),
    (private.SqliteEventLogStorage, "_store_asset_event", ["conn", "event", "event_id"]),
    (private.SqliteEventLogStorage, "store_asset_check_event", ["event", "event_id"]),
    (private.SqliteEventLogStorage, "prepare_insert_event", ["event"]),
    (private.SqliteRunStorage, "connect", []),
    (private.SqliteRunStorage, "from_local", ["base_dir"]),
    (private.SqliteScheduleStorage, "from_local", ["base_dir"]),
    (private.LocalComputeLogManager, "capture_logs", ["log_key"]),
    (private.LocalComputeLogManager, "get_captured_local_path", ["log_key", "extension"]),
    (private.LocalComputeLogManager, "complete_artifact_path", ["log_key"]),
]


@pytest.mark.parametrize(("owner", "name", "parameters"), PRIVATE_METHODS, ids=lambda v: getattr(v, "__name__", v))
def test_private_methods_we_call_or_override_keep_their_signature(owner, name, parameters) -> None:
    method = inspect.unwrap(getattr(owner, name))
    names = [p for p in inspect.signature(method).parameters if p not in ("self", "cls")]
    assert names[: len(parameters)] == parameters


def test_private_execution_signatures() -> None:
    wanted = {"job", "run_config", "instance", "output_capturing_enabled", "raise_on_error", "run_tags", "run_id"}
    assert wanted | {"asset_selection"} <= set(inspect.signature(private.core_execute_in_process).parameters)
    assert {"job_def", "partition_key", "tags", "asset_selection", "instance", "run_config"} <= set(
        inspect.signature(private.merge_run_tags).parameters
    )
    assert "job_def" in inspect.signature(private.InMemoryJob).parameters


def test_storage_class_paths_resolve() -> None:
    """The class paths an instance is configured with: the artifact storage (also in the dagster.yaml
    template) and ours."""
    module = importlib.import_module(private.LOCAL_ARTIFACT_STORAGE["module"])
    assert inspect.isclass(getattr(module, private.LOCAL_ARTIFACT_STORAGE["class"]))
    template = PACKAGE / "project" / "templates" / "dagster.yaml"
    config = yaml.safe_load(template.read_text(encoding="utf-8"))
    assert {k: config["local_artifact_storage"][k] for k in ("module", "class")} == private.LOCAL_ARTIFACT_STORAGE
    compute_logs = importlib.import_module(config["compute_logs"]["module"])
    assert getattr(compute_logs, config["compute_logs"]["class"]) is MirroredComputeLogManager


def test_no_other_module_imports_private_dagster() -> None:
    private_import = re.compile(r"^\s*(from|import)\s+dagster\._", re.MULTILINE)
    offenders = [
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if path.name != "dagster_private.py" and private_import.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []
