"""Every private Dagster API the project uses (``dagster._…``), in one place.

Dagster's public API does not cover what the runtime plumbing needs: running a job in this process
without keeping its outputs (:mod:`.uncaptured`), a range run's tags (:mod:`.runner`, the sensor),
SQLite storage that writes a batch of events at once (:mod:`.event_log`), compute logs mirrored
by a thread (:mod:`.compute_logs`), metadata for many partitions at once
(:func:`add_partition_metadata`), an op's materializations stored as one batch
(:func:`log_materializations`), and the name of the job the UI's "Materialize" runs
(:mod:`..resources`). Private names can change in any Dagster release, so they are
imported here only, and ``graphrag_assets_tests/test_dagster_private.py`` exercises each one: a
Dagster upgrade that moves or changes one fails a named test instead of an index run.

Besides these imports, :mod:`.event_log` subclasses Dagster's SQLite storages and calls or
overrides their private methods (``_connect``, ``_initdb``, ``_event_to_row``,
``_store_asset_event_tags``, ``_store_asset_event`` …); the test checks their signatures too.
``project/templates/dagster.yaml`` names :data:`LOCAL_ARTIFACT_STORAGE`'s class path.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dagster import AssetExecutionContext, AssetKey, AssetMaterialization, DagsterEvent, OpExecutionContext
from dagster._core.definitions.assets.job.asset_job import is_reserved_asset_job_name
from dagster._core.definitions.job_base import InMemoryJob
from dagster._core.definitions.repository_definition.valid_definitions import SINGLETON_REPOSITORY_NAME
from dagster._core.events import (
    ASSET_CHECK_EVENTS,
    ASSET_EVENTS,
    EVENT_TYPE_TO_PIPELINE_RUN_STATUS,
    DagsterEventBatchMetadata,
    generate_event_batch_id,
)
from dagster._core.execution.compute_logs import redirect_to_file
from dagster._core.execution.context.metadata_logging import AssetMetadataHandle, OutputMetadataAccumulator
from dagster._core.execution.execute_in_process import core_execute_in_process, merge_run_tags
from dagster._core.instance.ref import InstanceRef
from dagster._core.storage.compute_log_manager import CapturedLogContext, ComputeIOType
from dagster._core.storage.defs_state.base import set_defs_state_storage
from dagster._core.storage.event_log.schema import SqlEventLogStorageTable
from dagster._core.storage.event_log.sqlite.sqlite_event_log import INDEX_SHARD_NAME, SqliteEventLogStorage
from dagster._core.storage.local_compute_log_manager import IO_TYPE_EXTENSION, LocalComputeLogManager
from dagster._core.storage.runs.sqlite.sqlite_run_storage import SqliteRunStorage
from dagster._core.storage.schedules.sqlite.sqlite_schedule_storage import SqliteScheduleStorage
from dagster._core.storage.sqlite import SQLITE_BUSY_TIMEOUT_SECONDS
from dagster._core.storage.sqlite_storage import (
    DagsterSqliteStorage,
    _event_logs_directory,
    _runs_directory,
    _schedule_directory,
)
from dagster._core.storage.tags import (
    ASSET_PARTITION_RANGE_END_TAG,
    ASSET_PARTITION_RANGE_START_TAG,
    REPOSITORY_LABEL_TAG,
)
from dagster._serdes import ConfigurableClassData
from dagster._utils import ensure_file, touch_file

# The instance's local artifact storage (run and compute-log files under a base_dir), by class path.
LOCAL_ARTIFACT_STORAGE = {"module": "dagster._core.storage.root", "class": "LocalArtifactStorage"}

# Where DagsterSqliteStorage keeps runs, the event log and schedules under its base_dir.
runs_directory = _runs_directory
event_logs_directory = _event_logs_directory
schedule_directory = _schedule_directory


def add_partition_metadata(
    context: AssetExecutionContext, asset: str, metadata: Mapping[str, Mapping[str, Any]]
) -> None:
    """Attach ``metadata[key]`` to partition ``key`` of ``asset``, for many partitions at once.

    ``context.add_asset_metadata`` checks every call's key against the run's whole partition range,
    which for dynamic partitions is a database query listing every partition: 18 ms a call at 1,000
    documents, growing with the corpus, so a range run spent most of its time (O(n²)) there. The
    keys are checked once here and the metadata handed to the step's accumulator directly.
    """
    targeted = set(context.partition_keys)
    stray = sorted(set(metadata) - targeted)
    if stray:
        raise ValueError(f"partitions {stray[:3]} are not materialized by this run")
    step = context.get_step_execution_context()
    accumulated = step._metadata_accumulator.per_output_metadata  # noqa: SLF001 - see the docstring
    asset_key = AssetKey(asset)
    added = {}
    for key, values in metadata.items():
        handle = AssetMetadataHandle(asset_key=asset_key, partition_key=key)
        added[handle] = {**accumulated.get(handle, {}), **values}
    # One new accumulator for all partitions: adding them one at a time copies the mapping each time.
    step._metadata_accumulator = OutputMetadataAccumulator(per_output_metadata={**accumulated, **added})  # noqa: SLF001


def log_materializations(context: OpExecutionContext, materializations: Sequence[AssetMaterialization]) -> None:
    """Store an op's materializations as one batch of events, as Dagster stores a range run's outputs.

    ``context.log_event`` stores each event on its own (two SQLite transactions per event): the
    workers job's collect step logs six per document, and spent 92 of its 97 s doing that for
    2,000 documents (py-spy, loaded machine). Events carrying one batch id are buffered by the
    instance and handed to the storage at the batch's end (``DAGSTER_EVENT_BATCH_SIZE``, which the
    project's storages set); the rows stored are the same.
    """
    step = context.get_step_execution_context()
    batch = generate_event_batch_id()
    last = len(materializations) - 1
    for position, materialization in enumerate(materializations):
        DagsterEvent.asset_materialization(step, materialization, DagsterEventBatchMetadata(batch, position == last))


__all__ = [
    "ASSET_CHECK_EVENTS",
    "ASSET_EVENTS",
    "ASSET_PARTITION_RANGE_END_TAG",
    "ASSET_PARTITION_RANGE_START_TAG",
    "EVENT_TYPE_TO_PIPELINE_RUN_STATUS",
    "INDEX_SHARD_NAME",
    "IO_TYPE_EXTENSION",
    "LOCAL_ARTIFACT_STORAGE",
    "REPOSITORY_LABEL_TAG",
    "SINGLETON_REPOSITORY_NAME",
    "SQLITE_BUSY_TIMEOUT_SECONDS",
    "CapturedLogContext",
    "ComputeIOType",
    "ConfigurableClassData",
    "DagsterSqliteStorage",
    "InMemoryJob",
    "InstanceRef",
    "LocalComputeLogManager",
    "SqlEventLogStorageTable",
    "SqliteEventLogStorage",
    "SqliteRunStorage",
    "SqliteScheduleStorage",
    "add_partition_metadata",
    "log_materializations",
    "core_execute_in_process",
    "ensure_file",
    "event_logs_directory",
    "is_reserved_asset_job_name",
    "merge_run_tags",
    "redirect_to_file",
    "runs_directory",
    "schedule_directory",
    "set_defs_state_storage",
    "touch_file",
]
