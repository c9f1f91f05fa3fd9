"""The Kubernetes engine (``workers.engine: k8s``): each step of the workers job in a pod of its own.

dagster-k8s's ``k8s_job_executor`` launches every step of ``document_workers_job`` as a Kubernetes
Job from the project's image, so the job is the one the multiprocess engine runs (plan, shards
mapped over the plan's dynamic output, collect): that executor plans dynamic steps as they appear.
``workers.k8s`` is the executor's own config (image, namespace, secrets, per-step resources),
passed through as dagster-k8s documents it, with ``max_concurrent`` set to ``workers.count``.
The pods need what workers on other machines need: the instance in PostgreSQL, the exchange on
``storage.shared_url`` and the project folder (input documents, the run's step references under
the instance's storage folder) on a volume every pod mounts at the same path (docs/SCALING.md).
"""

from __future__ import annotations

from dagster import ExecutorDefinition

from graphrag_assets.core.errors import ConfigError
from graphrag_assets.core.settings import Settings


def k8s_executor_def(settings: Settings) -> ExecutorDefinition:
    """dagster-k8s's executor with the settings' config; one sentence when the extra or the config is wrong."""
    try:
        from dagster_k8s import k8s_job_executor  # only with engine k8s: the extra is optional
    except ImportError as exc:
        raise ConfigError(
            "workers.engine 'k8s' needs dagster-k8s: install it with pip install 'graphrag-assets[k8s]'."
        ) from exc
    executor = k8s_job_executor.configured(
        {**settings.workers.k8s, "max_concurrent": settings.workers.count}, name="workers_k8s"
    )
    # Checked now, against dagster-k8s's own schema: a mistake is one sentence when the definitions
    # load, not an error deep in the run's launch.
    checked = executor.config_schema.resolve_config({})
    if not checked.success:
        problem = checked.errors[0].message.split(". Expected")[0].rstrip(".")
        raise ConfigError(f"workers.k8s is not a k8s_job_executor config: {problem}; see dagster-k8s's documentation.")
    return executor
