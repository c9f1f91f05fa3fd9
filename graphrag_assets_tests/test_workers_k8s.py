"""``workers.engine: k8s``: the workers job of such a project, as ``index`` and its step pods build it
(no cluster needed): the same job as the multiprocess engine's, on dagster-k8s's k8s_job_executor
with the settings' config as dagster-k8s's own schema resolves it; a mistake in that config, or the
extra missing, is one sentence."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

from graphrag_assets.core.errors import ConfigError
from graphrag_assets.pipeline.workers_entry import workers_job_of
from graphrag_assets_testkit.projects import make_project

K8S = {
    "job_image": "registry.example/graphrag-assets:1",
    "job_namespace": "graphrag",
    "env_secrets": ["OPENAI_API_KEY", "AWS_ACCESS_KEY_ID"],
    "step_k8s_config": {"container_config": {"resources": {"limits": {"cpu": "2"}}}},
}


def k8s_project(tmp_path: Path, k8s: dict) -> str:
    root = make_project(tmp_path / "project", with_sample=False)
    settings = {"method": "nlp", "workers": {"count": 3, "engine": "k8s", "k8s": k8s}}
    (root / "graphrag.yaml").write_text(yaml.safe_dump(settings), encoding="utf-8")
    return str(root)


def test_the_k8s_engine_runs_the_multiprocess_job_on_the_k8s_job_executor(tmp_path: Path) -> None:
    job = workers_job_of(k8s_project(tmp_path, K8S), json.dumps({}))
    multiprocess = workers_job_of(k8s_project(tmp_path / "mp", {}), json.dumps({"workers": {"engine": "multiprocess"}}))
    assert {node.name for node in job.nodes} == {node.name for node in multiprocess.nodes}
    assert {node.name for node in job.nodes} == {"plan_shards_op", "index_shard", "collect_shards_op"}
    assert job.executor_def.name == "workers_k8s"
    assert job.executor_def.executor_creation_fn.__module__.startswith("dagster_k8s")
    resolved = job.executor_def.config_schema.resolve_config({})
    assert resolved.success
    config = resolved.value["config"]
    assert config["job_image"] == K8S["job_image"] and config["job_namespace"] == "graphrag"
    assert config["env_secrets"] == K8S["env_secrets"]
    assert config["step_k8s_config"]["container_config"] == K8S["step_k8s_config"]["container_config"]
    assert config["max_concurrent"] == 3  # workers.count
    assert "retries" in config  # dagster-k8s's defaults filled in: its schema read the settings


def test_a_wrong_k8s_config_is_one_sentence(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r'^workers\.k8s is not a k8s_job_executor config: .*"job_imag"') as raised:
        workers_job_of(k8s_project(tmp_path, {"job_imag": "x"}), json.dumps({}))
    assert "\n" not in str(raised.value)


def test_the_k8s_engine_without_dagster_k8s_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "dagster_k8s", None)  # what an install without the extra imports
    with pytest.raises(ConfigError, match=r"pip install 'graphrag-assets\[k8s\]'"):
        workers_job_of(k8s_project(tmp_path, K8S), json.dumps({}))
