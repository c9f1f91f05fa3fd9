"""The workers job of a project on the dask engine, as its step processes rebuild it (no cluster needed).

dagster-dask's executor runs neither steps mapped over a dynamic output nor fan-in inputs, so on
that engine the job has one fixed shard step per worker, for any `workers.count` (1 included: the
definitions of such a project load even when `index` runs the document steps in-process).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from graphrag_assets.pipeline.workers_entry import workers_job_of
from graphrag_assets_testkit.projects import make_project

SCHEDULER = "tcp://127.0.0.1:8786"


@pytest.mark.parametrize("count", [1, 3])
def test_the_dask_job_has_one_fixed_shard_step_per_worker(tmp_path: Path, count: int) -> None:
    root = make_project(tmp_path / "project", with_sample=False)
    (root / "graphrag.yaml").write_text(
        f"method: nlp\nworkers:\n  engine: dask\n  dask_scheduler: {SCHEDULER}\n", encoding="utf-8"
    )
    job = workers_job_of(str(root), json.dumps({"workers": {"count": count}}))
    shards = {f"index_shard_{i}" for i in range(count)}
    assert {node.name for node in job.nodes} == {"plan_shards_op", "collect_shards_op", *shards}
    assert job.executor_def.name == "workers_dask"
    upstream = job.graph.dependency_structure.input_to_upstream_outputs_for_node("collect_shards_op")
    assert {output.node_name for outputs in upstream.values() for output in outputs} == shards
