"""Scheduled incremental reindexing: a sensor and a schedule watching the input folder.

Both use the same change detection as ``graphrag-assets index``
(:mod:`graphrag_assets.project.state`) and request, in this order: one range run for all new
documents, one run per changed (or incomplete, or failed) document, then one corpus run. Deleted
documents lose their partitions here; their rows are purged by the corpus run (``graph`` asset).
Nothing is requested when nothing changed.

A tick does nothing while runs it requested earlier are still queued or running (the stored
state is then between two versions), or while ``graphrag-assets index`` holds the index lock.
Run keys combine the change with a generation number kept in the sensor's cursor (the scheduled
time, for the schedule): a tick that is evaluated twice cannot request the same work twice, and
a file that returns to an earlier state is still indexed again. We do not rely on Dagster's eager
automation for correctness: it lost an upstream update in a same-tick race in our measurements.
"""

from dataclasses import dataclass, field

from dagster import (
    AddDynamicPartitionsRequest,
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

from graphrag_assets.core.buckets import bucket_of
from graphrag_assets.core.errors import UserError
from graphrag_assets.core.ids import stable_hash
from graphrag_assets.core.settings import Settings
from graphrag_assets.index.partition_plan import PartitionPlan, plan_partitions
from graphrag_assets.pipeline.partitions import CORPUS_JOB, DOCUMENTS_JOB, PARTITIONS_NAME
from graphrag_assets.pipeline.resources import GraphRAGProject
from graphrag_assets.pipeline.runtime.dagster_private import (
    ASSET_PARTITION_RANGE_END_TAG,
    ASSET_PARTITION_RANGE_START_TAG,
)
from graphrag_assets.pipeline.runtime.instance import TRIGGER_TAG, pending_runs
from graphrag_assets.project.fingerprints import document_fingerprint
from graphrag_assets.project.index_plan import IndexPlan
from graphrag_assets.project.locks import index_lock_held
from graphrag_assets.project.state import check_input

DATABASE_WAIT_SECONDS = 5.0


@dataclass
class ReindexPlan:
    documents: IndexPlan  # the tick's one read of the folder and the state tables
    partitions: PartitionPlan
    run_requests: list[RunRequest] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.run_requests


def plan_reindex(settings: Settings, instance, reason: str, generation: str) -> ReindexPlan:
    """What the sensor or schedule should do now (raises UserError when the database is busy).

    Besides new, changed and deleted files, a corpus graph that is older than the ingested
    documents or the corpus settings (a corpus run failed, or never ran after the CLI indexed
    documents) gets one corpus run.
    """
    documents = IndexPlan.read(settings, wait_seconds=DATABASE_WAIT_SECONDS)
    check_input(settings, documents.state)  # a missing or emptied input folder never deletes the index from a tick
    changes = documents.changes
    registered = list(instance.get_dynamic_partitions(PARTITIONS_NAME))
    partitions = plan_partitions(changes, registered, settings.partitions)
    plan = ReindexPlan(documents, partitions)
    if not changes.any and not partitions.forget and not documents.corpus_stale:
        return plan
    hashes = documents.state.hashes
    fingerprint = document_fingerprint(settings)

    def key(kind: str, *parts: str) -> str:
        return f"{kind}:{generation}:{stable_hash(*parts, fingerprint)[:16]}"

    def version(key: str) -> str:
        if partitions.bucketed:  # a bucket's version: those of its documents that need work
            changed = [
                doc
                for doc in [*changes.new, *changes.changed, *changes.deleted]
                if bucket_of(doc, settings.partitions.buckets) == key
            ]
            versions = sorted(doc + "=" + hashes.get(doc, "gone") for doc in changed)
            return f"{key}={stable_hash(*versions)[:16]}"
        return f"{key}={hashes.get(key, 'new')}"

    tags = {TRIGGER_TAG: reason}
    if partitions.add:
        plan.run_requests.append(
            RunRequest(
                run_key=key("new", *map(version, partitions.add)),
                job_name=DOCUMENTS_JOB,
                tags={
                    **tags,
                    ASSET_PARTITION_RANGE_START_TAG: partitions.add[0],
                    ASSET_PARTITION_RANGE_END_TAG: partitions.add[-1],
                },
            )
        )
    for doc in partitions.rerun:
        plan.run_requests.append(
            RunRequest(run_key=key("changed", version(doc)), job_name=DOCUMENTS_JOB, partition_key=doc, tags=tags)
        )
    final = sorted(map(version, (set(registered) | set(partitions.add)) - set(partitions.forget)))
    plan.run_requests.append(RunRequest(run_key=key("corpus", *final), job_name=CORPUS_JOB, tags=tags))
    return plan


def _evaluate(settings: Settings, instance, reason: str, generation: str) -> ReindexPlan | SkipReason:
    """The plan, or why this tick does nothing (no change, runs still pending, index busy)."""
    pending = pending_runs(instance, {TRIGGER_TAG: reason})
    if pending:
        return SkipReason(f"waiting for {pending} run(s) requested earlier to finish")
    if index_lock_held(settings):
        return SkipReason("'graphrag-assets index' is updating the project; checking again next time")
    try:
        plan = plan_reindex(settings, instance, reason, generation)
    except UserError as exc:
        return SkipReason(str(exc))
    return SkipReason("no new, changed or deleted input files") if plan.empty else plan


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
        generation = int(context.cursor or 0)
        plan = _evaluate(project.settings, context.instance, "sensor", str(generation))
        if isinstance(plan, SkipReason):
            return plan
        partition_requests = []
        if plan.partitions.add:
            partition_requests.append(AddDynamicPartitionsRequest(PARTITIONS_NAME, plan.partitions.add))
        if plan.partitions.forget:
            partition_requests.append(DeleteDynamicPartitionsRequest(PARTITIONS_NAME, plan.partitions.forget))
        context.log.info(f"{plan.documents.changes.summary()}; requested {len(plan.run_requests)} run(s)")
        return SensorResult(
            run_requests=plan.run_requests, dynamic_partitions_requests=partition_requests, cursor=str(generation + 1)
        )

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
            generation = context.scheduled_execution_time.isoformat()
            plan = _evaluate(project.settings, context.instance, "schedule", generation)
            if isinstance(plan, SkipReason):
                return plan
            # Schedules cannot return partition requests, so the instance is updated directly.
            if plan.partitions.add:
                context.instance.add_dynamic_partitions(PARTITIONS_NAME, plan.partitions.add)
            for key in plan.partitions.forget:
                context.instance.delete_dynamic_partition(PARTITIONS_NAME, key)
            return plan.run_requests

        schedules.append(input_files_schedule)
    return [input_files_sensor], schedules
