"""The project's Dagster instance (``data/dagster``) and what it says about runs in progress."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from dagster import DagsterInstance, DagsterRunStatus, RunsFilter

from graphrag_assets.core.errors import UserError
from graphrag_assets.core.processes import ProcessId
from graphrag_assets.core.settings import Settings
from graphrag_assets.pipeline.runtime import compute_logs, event_log
from graphrag_assets.pipeline.runtime.dagster_files import DAGSTER_DIR, PENDING_STATUSES, uses_postgres
from graphrag_assets.pipeline.runtime.dagster_private import LOCAL_ARTIFACT_STORAGE, InstanceRef


def open_instance(settings: Settings) -> DagsterInstance:
    """The project's Dagster instance, with every storage location under ``data/dagster``.

    dagster.yaml (when the root has one) supplies the other instance settings; the storage paths
    are given as absolute paths so the CLI works from any working directory. A dagster.yaml whose
    storage is PostgreSQL (``init --instance postgres``) keeps runs, events and partitions there.
    """
    base = settings.path(DAGSTER_DIR)
    base.mkdir(parents=True, exist_ok=True)
    postgres = uses_postgres(settings)
    sqlite = {
        "custom": {
            "module": event_log.__name__,
            "class": "BatchedSqliteStorage",
            "config": {"base_dir": str(base / "storage")},
        }
    }
    overrides = {
        **({} if postgres else {"storage": sqlite}),
        "local_artifact_storage": {**LOCAL_ARTIFACT_STORAGE, "config": {"base_dir": str(base)}},
        "compute_logs": {
            "module": compute_logs.__name__,
            "class": "MirroredComputeLogManager",
            "config": {"base_dir": str(base / "compute_logs")},
        },
        "telemetry": {"enabled": False},
    }
    config_dir = settings.root if (settings.root / "dagster.yaml").exists() else base
    ref = InstanceRef.from_dir(str(base), config_dir=str(config_dir), overrides=overrides)
    instance = DagsterInstance.from_ref(ref)
    if postgres:
        # Dagster's Postgres storage writes a step's events as one batch when batching is on, but
        # opens a new connection for every query unless it serves the webserver; its webserver
        # engines (a pooled connection, no statement timeout here) make a run's events cheap.
        event_log.enable_event_batching()
        instance.optimize_for_webserver(
            statement_timeout=0, pool_recycle=POSTGRES_POOL_RECYCLE_SECONDS, max_overflow=POSTGRES_MAX_OVERFLOW
        )
    return instance


POSTGRES_POOL_RECYCLE_SECONDS = 3600
POSTGRES_MAX_OVERFLOW = 10


ACTIVE_RUN_MAX_AGE_HOURS = 12
PENDING = [DagsterRunStatus(status) for status in PENDING_STATUSES]
# The process that executes a run in-process (the CLI's index): "host:pid:start".
PROCESS_TAG = "graphrag/process"
# What started a run: the sensor, the schedule or the CLI.
TRIGGER_TAG = "graphrag/trigger"
# The code location's name in workspace.yaml and pyproject's [tool.dagster].
LOCATION_NAME = "graphrag_assets"


def fail_dead_runs(instance: DagsterInstance) -> list[str]:
    """Mark failed the pending runs whose process is gone (killed, out of memory, power cut).

    Such a run stays STARTED in Dagster's storage for ever and would block every later index;
    runs launched by Dagster's daemon have no process tag and are left to Dagster's run monitoring.
    Returns the ids of the runs marked failed.
    """
    failed = []
    for run in instance.get_runs(RunsFilter(statuses=PENDING)):
        process = ProcessId.from_tag(run.tags.get(PROCESS_TAG, ""))
        if process is not None and process.is_dead():
            instance.report_run_failed(run, f"the process that ran it (pid {process.pid} on {process.host}) is gone")
            failed.append(run.run_id)
    return failed


def pending_runs(instance: DagsterInstance, tags: dict[str, str] | None = None) -> int:
    """Runs queued or in progress (with these tags), ignoring any stuck for over 12 hours."""
    since = datetime.now(UTC) - timedelta(hours=ACTIVE_RUN_MAX_AGE_HOURS)
    return instance.get_runs_count(RunsFilter(statuses=PENDING, tags=tags or {}, created_after=since))


def refuse_while_runs_are_active(instance: DagsterInstance) -> list[str]:
    """Refuse while live runs are pending; returns the dead runs found and marked failed first."""
    dead = fail_dead_runs(instance)
    count = pending_runs(instance)
    if count:
        raise UserError(
            f"{count} Dagster run(s) of this project are queued or running (see the Dagster UI); "
            f"wait for them to finish, then run 'graphrag-assets index' again."
        )
    return dead
