"""Scheduled incremental reindexing: a sensor and a schedule watching the input folder.

Both compare the input folder with the stored ``source_files`` state (see
:mod:`graphrag_assets.index.changes`) and request, in this order: one range run for all new
documents, one run per changed document, then one corpus run. Deleted documents lose their
partitions here; their rows are purged by the corpus run (``graph`` asset). Nothing is
requested when nothing changed.

Run keys name the exact change (document key and content hash), so a change that is already
queued is not requested again on the next tick. We do not rely on Dagster's eager automation
for correctness: it lost an upstream update in a same-tick race in our measurements.
"""

from dataclasses import dataclass, field

from dagster import (
    AddDynamicPartitionsRequest,
    DagsterRunStatus,
    RunsFilter,
    DefaultScheduleStatus,
    DefaultSensorStatus,
    DeleteDynamicPartitionsRequest,
    RunRequest,
    ScheduleEvaluationContext,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    schedule,
    sensor,
)
from dagster._core.storage.tags import ASSET_PARTITION_RANGE_END_TAG, ASSET_PARTITION_RANGE_START_TAG

from graphrag_assets.assets.partitions import complete_document_partitions
from graphrag_assets.errors import UserError
from graphrag_assets.fingerprints import document_fingerprint
from graphrag_assets.ids import stable_hash
from graphrag_assets.index.changes import ChangeSet, detect_changes
from graphrag_assets.resources import GraphRAGProject
from graphrag_assets.settings import Settings
from graphrag_assets.storage.tables import read_table

PARTITIONS = "documents"
DOCUMENTS_JOB = "document_job"
CORPUS_JOB = "corpus_job"


@dataclass
class ReindexPlan:
    changes: ChangeSet
    run_requests: list[RunRequest] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.run_requests


def plan_reindex(settings: Settings, instance, registered: set[str], reason: str) -> ReindexPlan:
    """What the sensor or schedule should do now (raises UserError when the database is busy).

    Besides new, changed and deleted files, a corpus graph that is older than the ingested
    documents (a corpus run failed or never ran after the CLI indexed documents) gets one corpus
    run; its run key names the state, so a run that fails is not requested again for that state.
    """
    stored = read_table(settings.database_path, "source_files", read_only=True, wait_seconds=5.0)
    ingested = complete_document_partitions(instance, sorted(registered)) if registered else set()
    fingerprint = document_fingerprint(settings)
    changes = detect_changes(settings.input_dir, settings.input.file_types, stored, registered, ingested, fingerprint)
    plan = ReindexPlan(changes)
    if not changes.any and not _corpus_is_stale(settings, stored):
        return plan
    hashes = dict(zip(stored["document_key"], stored["content_hash"])) if stored is not None else {}
    hashes.update(changes.hashes)

    def state(key: str) -> str:
        return f"{key}={hashes.get(key) or 'new'}@{fingerprint}"

    tags = {"graphrag/trigger": reason}
    if changes.new:
        plan.run_requests.append(
            RunRequest(
                run_key=f"new:{stable_hash(*(state(k) for k in changes.new))[:16]}",
                job_name=DOCUMENTS_JOB,
                tags={**tags, ASSET_PARTITION_RANGE_START_TAG: changes.new[0], ASSET_PARTITION_RANGE_END_TAG: changes.new[-1]},
            )
        )
    for key in changes.changed:
        plan.run_requests.append(
            RunRequest(run_key=f"changed:{stable_hash(state(key))[:16]}", job_name=DOCUMENTS_JOB, partition_key=key, tags=tags)
        )
    final_state = sorted(state(k) for k in (registered | set(changes.new)) - set(changes.deleted))
    plan.run_requests.append(RunRequest(run_key=f"corpus:{stable_hash(*final_state)[:16]}", job_name=CORPUS_JOB, tags=tags))
    return plan


def _corpus_is_stale(settings: Settings, source_files) -> bool:
    from graphrag_assets.status import corpus_staleness

    manifest = read_table(settings.database_path, "corpus_manifest", read_only=True, wait_seconds=5.0)
    if manifest is None:
        return source_files is not None and not source_files.is_empty()
    return bool(corpus_staleness(source_files, manifest)["stale"])


PENDING = [DagsterRunStatus.QUEUED, DagsterRunStatus.NOT_STARTED, DagsterRunStatus.STARTING, DagsterRunStatus.STARTED]


def _evaluate(settings: Settings, instance, registered: set[str], reason: str) -> ReindexPlan | SkipReason:
    """The plan, or why this tick does nothing (no change, runs still pending, database busy).

    While runs requested by an earlier tick are queued or running, the stored state is between
    two versions (a new document is registered but not ingested yet, a deleted one's rows are not
    purged yet); planning then would request the same work again under other run keys.
    """
    pending = instance.get_runs_count(RunsFilter(statuses=PENDING, tags={"graphrag/trigger": reason}))
    if pending:
        return SkipReason(f"waiting for {pending} run(s) requested earlier to finish")
    try:
        plan = plan_reindex(settings, instance, registered, reason)
    except UserError as exc:
        return SkipReason(str(exc))
    return SkipReason("no new, changed or deleted input files") if plan.empty else plan


def _message(plan: ReindexPlan) -> str:
    return f"{plan.changes.summary()}; requested {len(plan.run_requests)} run(s)"


def build_automation(interval_seconds: int, cron: str | None, jobs: list) -> tuple[list, list]:
    """The sensor (always defined, off until turned on) and the schedule (only when a cron is set)."""

    @sensor(
        name="input_files_sensor",
        minimum_interval_seconds=interval_seconds,
        default_status=DefaultSensorStatus.STOPPED,
        description="Watches data/input: new files add document partitions, changed files re-run theirs, deleted files are removed; then the corpus is rebuilt.",
        jobs=jobs,
    )
    def input_files_sensor(context: SensorEvaluationContext, project: GraphRAGProject):
        registered = set(context.instance.get_dynamic_partitions(PARTITIONS))
        plan = _evaluate(project.settings, context.instance, registered, "sensor")
        if isinstance(plan, SkipReason):
            return plan
        partition_requests = []
        if plan.changes.new:
            partition_requests.append(AddDynamicPartitionsRequest(PARTITIONS, plan.changes.new))
        gone = [k for k in plan.changes.deleted if k in registered]
        if gone:
            partition_requests.append(DeleteDynamicPartitionsRequest(PARTITIONS, gone))
        context.log.info(_message(plan))
        return SensorResult(run_requests=plan.run_requests, dynamic_partitions_requests=partition_requests)

    schedules = []
    if cron:

        @schedule(
            name="input_files_schedule",
            cron_schedule=cron,
            job_name=CORPUS_JOB,
            default_status=DefaultScheduleStatus.STOPPED,
            description="The same check as input_files_sensor, at fixed times.",
        )
        def input_files_schedule(context: ScheduleEvaluationContext, project: GraphRAGProject):
            registered = set(context.instance.get_dynamic_partitions(PARTITIONS))
            plan = _evaluate(project.settings, context.instance, registered, "schedule")
            if isinstance(plan, SkipReason):
                return plan
            # Schedules cannot return partition requests, so the instance is updated directly.
            if plan.changes.new:
                context.instance.add_dynamic_partitions(PARTITIONS, plan.changes.new)
            for key in plan.changes.deleted:
                if key in registered:
                    context.instance.delete_dynamic_partition(PARTITIONS, key)
            return plan.run_requests

        schedules.append(input_files_schedule)
    return [input_files_sensor], schedules
