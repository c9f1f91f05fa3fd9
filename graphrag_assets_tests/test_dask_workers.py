"""The dask engine: Dagster steps run on the worker processes of a real dask.distributed cluster.

The cluster (a scheduler and two single-threaded workers on loopback) is started by the session
fixture and stopped by PID; the steps reach it through dagster-dask's executor, as `workers.engine:
dask` does.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from dagster import DagsterInstance, In, Nothing, execute_job, job, op, reconstructable
from dagster_dask import dask_executor

from graphrag_assets_testkit.dask_cluster import DaskCluster, dask_cluster  # noqa: F401 - the fixture

STEP_SECONDS = 2.0


@op
def first_step() -> tuple[int, float, float]:
    started = time.time()
    time.sleep(STEP_SECONDS)
    return os.getpid(), started, time.time()


@op
def second_step() -> tuple[int, float, float]:
    started = time.time()
    time.sleep(STEP_SECONDS)
    return os.getpid(), started, time.time()


@op(ins={"first": In(), "second": In()})
def both_done(first: tuple[int, float, float], second: tuple[int, float, float]) -> Nothing:
    return None


@job(executor_def=dask_executor)
def two_parallel_steps() -> None:
    both_done(first_step(), second_step())


def test_two_steps_run_at_once_on_the_two_worker_processes(dask_cluster: DaskCluster, tmp_path: Path) -> None:
    config = {"execution": {"config": {"cluster": {"existing": {"address": dask_cluster.address}}}}}
    with DagsterInstance.local_temp(str(tmp_path)) as instance:
        with execute_job(reconstructable(two_parallel_steps), instance, run_config=config) as result:
            assert result.success, dask_cluster.log_text()
            first, second = result.output_for_node("first_step"), result.output_for_node("second_step")
    assert {first[0], second[0]} == dask_cluster.worker_pids()
    assert os.getpid() not in (first[0], second[0])
    assert max(first[1], second[1]) < min(first[2], second[2]), "the two steps did not overlap"
