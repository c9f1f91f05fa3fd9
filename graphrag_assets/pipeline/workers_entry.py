"""How ``index`` starts ``document_workers_job``: a job its step processes can rebuild.

An executor that runs steps in other processes (multiprocess, dask) needs a reconstructable job:
a module-level factory the step process calls to build the same job. The project root and the
command line's settings overrides travel as the factory's arguments, inside the pointer Dagster
hands to each step process: a dask worker was started on its own, long before this run, and does
not share the environment of ``index``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from dagster import DagsterInstance, JobDefinition, build_reconstructable_job

from graphrag_assets.core.settings import Settings
from graphrag_assets.pipeline.definitions import build_definitions
from graphrag_assets.pipeline.runtime.runner import RunOutcome, run_reconstructable_job
from graphrag_assets.pipeline.runtime.step_server import start_step_server
from graphrag_assets.pipeline.workers import STEP_MODULES, WORKERS_JOB
from graphrag_assets.pipeline.workers_dask import require_scheduler


def workers_job_of(root: str, overrides_json: str) -> JobDefinition:
    """The workers job of the project at ``root`` with these settings overrides (JSON)."""
    return build_definitions(root, overrides=json.loads(overrides_json) or None).resolve_job_def(WORKERS_JOB)


def run_document_workers(
    settings: Settings, instance: DagsterInstance, partition_keys: Sequence[str], overrides: dict[str, Any] | None
) -> RunOutcome:
    """Run ``document_workers_job`` for these partitions through the project's instance and wait for it."""
    if settings.workers.engine == "dask":
        require_scheduler(str(settings.workers.dask_scheduler))
    elif settings.workers.engine == "multiprocess":
        start_step_server(STEP_MODULES)  # imports the pipeline while the run is set up
    job = build_reconstructable_job(
        __name__, workers_job_of.__name__, reconstructable_args=(str(settings.root), json.dumps(overrides or {}))
    )
    return run_reconstructable_job(job, instance, WORKERS_JOB, partition_keys)
