"""Jobs run without Dagster keeping every step's output in memory until the run ends."""

from __future__ import annotations

import pytest
from dagster import (
    DagsterInstance,
    DagsterInvariantViolationError,
    Definitions,
    asset,
    define_asset_job,
    mem_io_manager,
)

from graphrag_assets.pipeline.runtime.uncaptured import execute_without_capture

seen: list[int] = []


@asset
def big() -> list[int]:
    return list(range(1000))


@asset
def total(big: list[int]) -> int:
    seen.append(sum(big))
    return sum(big)


def test_outputs_reach_the_next_step_but_are_not_captured() -> None:
    defs = Definitions(assets=[big, total], jobs=[define_asset_job("both")], resources={"io_manager": mem_io_manager})
    job = defs.resolve_job_def("both")
    with DagsterInstance.ephemeral() as instance:
        result = execute_without_capture(
            job, run_config={}, instance=instance, partition_key=None, tags={"who": "test"}
        )
        assert result.success
        assert seen == [499500]
        assert instance.get_run_by_id(result.run_id).tags["who"] == "test"
        # the capture this module exists to avoid: execute_in_process would return 499500 here
        with pytest.raises(DagsterInvariantViolationError):
            result.output_for_node("total")
