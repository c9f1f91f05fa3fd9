"""Run a job in this process without keeping every step's output in memory.

``JobDefinition.execute_in_process`` captures each step's output value (so that
``result.output_for_node`` works) until the run ends. Our steps hand their outputs to the DuckDB
IO manager and we never read them back from the result, but the capture kept them all alive: on
a 30 MB corpus the relationships, communities, reports and embeddings of one corpus run stacked
up to ~2.3 GB between steps. This is ``execute_in_process`` as we call it (no op or asset
selection, no input values or resources) with capturing off. It uses Dagster's internal
``core_execute_in_process``; ``graphrag_assets_tests`` run every pipeline through it.
"""

from __future__ import annotations

from collections.abc import Mapping

from dagster import DagsterInstance, ExecuteInProcessResult, JobDefinition

from graphrag_assets.pipeline.runtime.dagster_private import InMemoryJob, core_execute_in_process, merge_run_tags
from graphrag_assets.storage.database import let_go


def execute_without_capture(
    job: JobDefinition,
    *,
    run_config: Mapping[str, object],
    instance: DagsterInstance,
    partition_key: str | None,
    tags: Mapping[str, str],
) -> ExecuteInProcessResult:
    """``job.execute_in_process(..., raise_on_error=False)`` minus the in-memory output capture."""
    ephemeral = job.as_ephemeral_job(resource_defs={}, input_values={})
    if not run_config and ephemeral.partitioned_config and partition_key:
        run_config = ephemeral.partitioned_config.get_run_config_for_partition_key(partition_key)
    try:
        return core_execute_in_process(
            job=InMemoryJob(job_def=ephemeral),
            run_config=run_config,
            instance=instance,
            output_capturing_enabled=False,
            raise_on_error=False,
            run_tags=merge_run_tags(
                job_def=job,
                partition_key=partition_key,
                tags=tags,
                asset_selection=[],
                instance=instance,
                run_config=run_config,
            ),
            run_id=None,
            asset_selection=frozenset(),
        )
    finally:
        let_go()  # the run's database files are closed (checkpointed) when it ends, not when idle
