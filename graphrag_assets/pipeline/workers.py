"""``document_workers_job``: the per-document steps on N workers, one coordinator writing the index.

    plan_shards (coordinator) -> index_shard (one step per shard, run in parallel) -> collect_shards (coordinator)

Workers compute, one process writes: a shard's step never opens the index, it exchanges Parquet
files with the coordinator's steps (:mod:`.workers_plan`, :mod:`.workers_shard`,
:mod:`.workers_collect`). The job is partitioned like the document assets, and after
``collect_shards`` the document assets' partitions show as materialized, so Dagster sees what
``document_job`` would have shown. A shard whose process dies (kill -9) is retried alone by the
op's retry policy (on dask, by the scheduler: :mod:`.workers_dask`); the other shards' outputs are kept.

The executor comes from the settings (:func:`workers_executor`): Dagster's multiprocess executor
with ``workers.count`` processes, dagster-dask's on a running dask.distributed scheduler
(:mod:`.workers_dask`, which also says why that engine's job fans out to fixed shard outputs), or
dagster-k8s's, a pod per step (:mod:`.workers_k8s`).
Both run each step in another process that rebuilds the job (:mod:`.workers_entry`).
"""

from dagster import (
    AssetKey,
    AssetMaterialization,
    DynamicOut,
    DynamicOutput,
    ExecutorDefinition,
    FilesystemIOManager,
    In,
    JobDefinition,
    OpDefinition,
    OpExecutionContext,
    Out,
    Output,
    RetryPolicy,
    job,
    multiprocess_executor,
    op,
)

from graphrag_assets.core.schemas import PER_DOCUMENT_TABLES
from graphrag_assets.core.settings import Settings
from graphrag_assets.pipeline.partitions import DOCUMENT_PARTITIONS, WORKERS_JOB
from graphrag_assets.pipeline.resources import GraphRAGProject
from graphrag_assets.pipeline.runtime.dagster_private import log_materializations
from graphrag_assets.pipeline.runtime.step_server import START_METHOD
from graphrag_assets.pipeline.workers_collect import clear_run, collect_shards
from graphrag_assets.pipeline.workers_dask import dask_executor_def
from graphrag_assets.pipeline.workers_k8s import k8s_executor_def
from graphrag_assets.pipeline.workers_plan import ShardRef, exchange_location, plan_shards
from graphrag_assets.pipeline.workers_shard import run_shard
from graphrag_assets.storage.database import let_go

# Steps pass each other only small shard references; Dagster keeps them as files under the instance.
SHARD_REFS = "shard_refs"
SHARD_REF_IO_MANAGER = FilesystemIOManager()
SHARD_RETRIES = 2
# The module step processes rebuild the job from (imported once by the fork server, not per step).
STEP_MODULES = ("graphrag_assets.pipeline.workers_entry",)


def workers_executor(settings: Settings) -> ExecutorDefinition:
    """The executor that runs the shards in parallel, chosen by ``workers.engine``."""
    if settings.workers.engine == "multiprocess":
        start = {START_METHOD: {"preload_modules": list(STEP_MODULES)}}  # see pipeline/runtime/step_server.py
        return multiprocess_executor.configured(
            {"max_concurrent": settings.workers.count, "start_method": start}, name="workers_multiprocess"
        )
    if settings.workers.engine == "k8s":
        return k8s_executor_def(settings)
    return dask_executor_def(settings)


def _planned(context: OpExecutionContext, settings: Settings) -> list[ShardRef]:
    try:
        refs = plan_shards(settings, list(context.partition_keys), context.run_id, settings.workers.count)
    finally:
        let_go()  # a dask worker lives on: it must not keep the index file locked
    context.log.info(f"{sum(ref.documents for ref in refs)} document(s) in {len(refs)} shard(s)")
    return refs


@op(out=DynamicOut(ShardRef, io_manager_key=SHARD_REFS))
def plan_shards_op(context: OpExecutionContext, project: GraphRAGProject):
    for ref in _planned(context, project.settings):
        yield DynamicOutput(ref, mapping_key=f"shard_{ref.index}")


def fixed_plan_shards_op(count: int) -> OpDefinition:
    """plan_shards with ``count`` fixed outputs, each always emitted (the dask executor runs neither
    mapped steps nor steps whose input was not emitted); a shard without documents does nothing."""

    @op(name="plan_shards_op", out={f"shard_{i}": Out(ShardRef, io_manager_key=SHARD_REFS) for i in range(count)})
    def plan_fixed_shards(context: OpExecutionContext, project: GraphRAGProject):
        refs = {ref.index: ref for ref in _planned(context, project.settings)}
        location = exchange_location(project.settings)
        for index in range(count):
            empty = ShardRef(location, context.run_id, index, len(refs), 0)
            yield Output(refs.get(index, empty), f"shard_{index}")

    return plan_fixed_shards


@op(
    ins={"ref": In(ShardRef)},
    out=Out(ShardRef, io_manager_key=SHARD_REFS),
    retry_policy=RetryPolicy(max_retries=SHARD_RETRIES),
)
def index_shard(context: OpExecutionContext, project: GraphRAGProject, ref: ShardRef) -> ShardRef:
    if not ref.documents:  # a fixed output the plan had no documents for
        return ref
    done = run_shard(project.settings, ref, context.log)
    context.log.info(f"shard {ref.index}: {done} document(s)")
    return ref


def _collect(context: OpExecutionContext, settings: Settings, refs: list[ShardRef]) -> None:
    refs = sorted((ref for ref in refs if ref.documents), key=lambda ref: ref.index)
    try:
        written = collect_shards(settings, refs)
    finally:
        let_go()  # a dask worker lives on: it must not keep the index file locked
    partitions = context.partition_keys
    # the document assets whose partitions the run materialized, stored as one batch
    materialized = [
        AssetMaterialization(AssetKey(asset), partition=key) for asset in PER_DOCUMENT_TABLES for key in partitions
    ]
    log_materializations(context, materialized)
    context.log.info(f"{len(written)} document(s) written to the index")
    if refs:
        clear_run(settings, refs[0].location, context.run_id)


@op(ins={"refs": In(list[ShardRef])})
def collect_shards_op(context: OpExecutionContext, project: GraphRAGProject, refs: list[ShardRef]) -> None:
    _collect(context, project.settings, refs)


def fixed_collect_shards_op(count: int) -> OpDefinition:
    """collect_shards with one input per fixed shard: the dask executor gives a fan-in input only the
    outputs known when the run started (none), so a list input would arrive empty."""

    @op(name="collect_shards_op", ins={f"shard_{i}": In(ShardRef) for i in range(count)})
    def collect_fixed_shards(context: OpExecutionContext, project: GraphRAGProject, **shards: ShardRef) -> None:
        _collect(context, project.settings, list(shards.values()))

    return collect_fixed_shards


def build_workers_job(settings: Settings) -> JobDefinition:
    """The job for this project's settings (its executor follows ``workers``)."""

    @job(
        name=WORKERS_JOB,
        partitions_def=DOCUMENT_PARTITIONS,
        executor_def=workers_executor(settings),
        description="Per-document steps on workers: plan shards, index each shard in its own process, "
        "collect them into the index (settings: workers).",
    )
    def document_workers_job():
        if settings.workers.engine == "dask":
            count = settings.workers.count
            planned = fixed_plan_shards_op(count)()
            handles = planned if count > 1 else (planned,)  # one output comes back bare, not in a tuple
            indexed = {f"shard_{i}": index_shard.alias(f"index_shard_{i}")(handles[i]) for i in range(count)}
            fixed_collect_shards_op(count)(**indexed)
        else:
            collect_shards_op(plan_shards_op().map(index_shard).collect())

    return document_workers_job
