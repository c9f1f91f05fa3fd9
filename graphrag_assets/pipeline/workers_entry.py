"""How ``index`` starts ``document_workers_job``: a job its step processes can rebuild.

An executor that runs steps in other processes (multiprocess, dask) needs a reconstructable job:
a module-level factory the step process calls to build the same job. The factory takes the
project root and the command line's settings overrides from the environment, which the step
processes inherit from ``index``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

from dagster import DagsterInstance, JobDefinition, reconstructable

from graphrag_assets.core.settings import Settings
from graphrag_assets.pipeline.definitions import build_definitions
from graphrag_assets.pipeline.runtime.runner import RunOutcome, run_reconstructable_job
from graphrag_assets.pipeline.workers import WORKERS_JOB

# The project a step process rebuilds the job for: {"root": ..., "overrides": {...}}.
PROJECT_ENV = "GRAPHRAG_WORKERS_PROJECT"


def workers_environment(root: str, overrides: dict[str, Any] | None) -> dict[str, str]:
    """What a step process needs in its environment to rebuild the job of this project."""
    return {PROJECT_ENV: json.dumps({"root": root, "overrides": overrides or {}})}


def workers_job_from_environment() -> JobDefinition:
    """The workers job of the project named in the environment (for ``dagster.reconstructable``)."""
    project = json.loads(os.environ.get(PROJECT_ENV) or "{}")
    root = project.get("root") or os.environ.get("GRAPHRAG_ROOT") or os.getcwd()
    return build_definitions(root, overrides=project.get("overrides") or None).resolve_job_def(WORKERS_JOB)


def run_document_workers(
    settings: Settings, instance: DagsterInstance, partition_keys: Sequence[str], overrides: dict[str, Any] | None
) -> RunOutcome:
    """Run ``document_workers_job`` for these partitions through the project's instance and wait for it."""
    os.environ.update(workers_environment(str(settings.root), overrides))  # inherited by the step processes
    return run_reconstructable_job(reconstructable(workers_job_from_environment), instance, WORKERS_JOB, partition_keys)
