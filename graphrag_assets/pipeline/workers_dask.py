"""The dask engine (``workers.engine: dask``): the shards run on a running dask.distributed cluster.

dagster-dask's executor submits every step of ``document_workers_job`` as a task to the scheduler
at ``workers.dask_scheduler``; the dask workers (plain Python processes that import this package)
rebuild the job from its reconstructable pointer and run the step, writing their events to the
project's Dagster instance. Two limits of that executor shape the job here:

- it plans the steps once, before the run: steps mapped over a dynamic output are never run (the
  run would end "successful" without its shards), so the job fans out to ``workers.count`` fixed
  ``shard_<i>`` outputs instead, each always emitted (a shard without documents does nothing);
- it runs every step on a worker, the coordinator's too: those steps let go of the index file when
  they end, since a dask worker lives on and would otherwise keep the file locked.

Its retries are dask's own: a worker that dies mid-task has the task rerun on a live worker, while
Dagster's op retry policy is not applied (tested with ``kill -9``: only the killed shard runs
again). Results the dead worker held for finished steps are recomputed by dask as well: a shard
step rerun that way finds its ``done`` marker and does nothing, and the plan step plans the same
shards again (the index does not change before ``collect_shards``; this case is not tested).
"""

from __future__ import annotations

import socket
from urllib.parse import urlparse

from dagster import ExecutorDefinition

from graphrag_assets.core.errors import ConfigError, UserError
from graphrag_assets.core.settings import Settings

CONNECT_SECONDS = 5.0


def dask_executor_def(settings: Settings) -> ExecutorDefinition:
    """dagster-dask's executor on the scheduler the settings name."""
    try:
        from dagster_dask import dask_executor
    except ImportError as exc:
        raise ConfigError(
            "workers.engine 'dask' needs dagster-dask: install it with pip install 'graphrag-assets[dask]'."
        ) from exc
    address = settings.workers.dask_scheduler
    return dask_executor.configured({"cluster": {"existing": {"address": address}}}, name="workers_dask")


def require_scheduler(address: str) -> None:
    """Raise one sentence when nothing answers at the scheduler's address (the run would hang or fail
    deep inside dask otherwise)."""
    parsed = urlparse(address)
    try:
        with socket.create_connection((parsed.hostname or "", parsed.port or 0), timeout=CONNECT_SECONDS):
            return
    except OSError as exc:
        raise UserError(
            f"no dask scheduler answers at {address} ({exc.strerror or exc}); start one (`dask scheduler`) "
            "or set workers.dask_scheduler to the address of a running one."
        ) from exc
