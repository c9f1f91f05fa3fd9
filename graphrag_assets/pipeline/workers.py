"""``document_workers_job``: the per-document steps on N workers, one coordinator writing the index.

    plan_shards (coordinator) -> index_shard (one step per shard, run in parallel) -> collect_shards (coordinator)

Workers compute, one process writes: a shard's step never opens the index, it exchanges Parquet
files with the coordinator's steps (:mod:`.workers_plan`, :mod:`.workers_shard`,
:mod:`.workers_collect`). The job is partitioned like the document assets, and after
``collect_shards`` the document assets' partitions show as materialized, so Dagster sees what
``document_job`` would have shown. A shard whose process dies (kill -9) is retried alone by the
op's retry policy; the other shards' outputs are kept.

The executor comes from the settings (:func:`workers_executor`): Dagster's multiprocess executor
with ``workers.count`` processes. It runs each step in a new process that rebuilds the job
(:mod:`.workers_entry`).
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
    OpExecutionContext,
    Out,
    RetryPolicy,
    job,
    multiprocess_executor,
    op,
)

from graphrag_assets.core.errors import ConfigError
from graphrag_assets.core.settings import Settings
from graphrag_assets.pipeline.partitions import DOCUMENT_PARTITIONS
from graphrag_assets.pipeline.resources import GraphRAGProject
from graphrag_assets.pipeline.workers_collect import clear_run, collect_shards
from graphrag_assets.pipeline.workers_plan import ShardRef, plan_shards
from graphrag_assets.pipeline.workers_shard import run_shard

WORKERS_JOB = "document_workers_job"
# Steps pass each other only small shard references; Dagster keeps them as files under the instance.
SHARD_REFS = "shard_refs"
SHARD_REF_IO_MANAGER = FilesystemIOManager()
# The document assets whose partitions a workers run materializes.
DOCUMENT_ASSET_KEYS = (
    "source_files",
    "documents",
    "text_units",
    "graph_extractions",
    "extraction_status",
    "text_unit_embeddings",
)
SHARD_RETRIES = 2


def workers_executor(settings: Settings) -> ExecutorDefinition:
    """The executor that runs the shards in parallel, chosen by ``workers.engine``."""
    if settings.workers.engine == "multiprocess":
        return multiprocess_executor.configured({"max_concurrent": settings.workers.count}, name="workers_multiprocess")
    raise ConfigError(f"workers.engine '{settings.workers.engine}' is not available here; use 'multiprocess'.")


@op(out=DynamicOut(ShardRef, io_manager_key=SHARD_REFS))
def plan_shards_op(context: OpExecutionContext, project: GraphRAGProject):
    settings = project.settings
    refs = plan_shards(settings, list(context.partition_keys), context.run_id, settings.workers.count)
    context.log.info(f"{sum(ref.documents for ref in refs)} document(s) in {len(refs)} shard(s)")
    for ref in refs:
        yield DynamicOutput(ref, mapping_key=f"shard_{ref.index}")


@op(
    ins={"ref": In(ShardRef)},
    out=Out(ShardRef, io_manager_key=SHARD_REFS),
    retry_policy=RetryPolicy(max_retries=SHARD_RETRIES),
)
def index_shard(context: OpExecutionContext, project: GraphRAGProject, ref: ShardRef) -> ShardRef:
    done = run_shard(project.settings, ref, context.log)
    context.log.info(f"shard {ref.index}: {done} document(s)")
    return ref


@op(ins={"refs": In(list[ShardRef])})
def collect_shards_op(context: OpExecutionContext, project: GraphRAGProject, refs: list[ShardRef]) -> None:
    settings = project.settings
    refs = sorted(refs, key=lambda ref: ref.index)
    written = collect_shards(settings, refs)
    for asset in DOCUMENT_ASSET_KEYS:
        for partition in context.partition_keys:
            context.log_event(AssetMaterialization(asset_key=AssetKey(asset), partition=partition))
    context.log.info(f"{len(written)} document(s) written to the index")
    if refs:
        clear_run(refs[0].location, context.run_id)


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
        collect_shards_op(plan_shards_op().map(index_shard).collect())

    return document_workers_job
