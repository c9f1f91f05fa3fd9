"""``graphrag-assets index`` ends its process without the interpreter's teardown (cli/process_exit.py):
the console script's output, exit code and atexit handlers are as a normal exit's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from graphrag_assets.cli.process_exit import exit_now
from graphrag_assets_testkit.projects import make_project
from graphrag_assets_tests.conftest import make_llm_project

CONSOLE_SCRIPT = Path(sys.executable).parent / "graphrag-assets"
MARKER_HOOK = """\
import atexit, os
atexit.register(lambda: open(os.environ["ATEXIT_MARKER"], "w").write("ran"))
"""


def run_index(root: Path, tmp_path: Path, env: dict[str, str]) -> tuple[subprocess.CompletedProcess[str], Path]:
    hook = tmp_path / "hook"
    hook.mkdir(exist_ok=True)
    (hook / "sitecustomize.py").write_text(MARKER_HOOK, encoding="utf-8")
    marker = tmp_path / "atexit.ran"
    marker.unlink(missing_ok=True)
    env = {**env, "PYTHONPATH": str(hook), "ATEXIT_MARKER": str(marker)}
    result = subprocess.run(
        [str(CONSOLE_SCRIPT), "index", "--root", str(root), "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    return result, marker


@pytest.mark.slow
def test_a_successful_index_prints_everything_runs_atexit_and_exits_0(tmp_path: Path) -> None:
    root = make_project(tmp_path / "project")
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "GRAPHRAG_ROOT")}
    result, marker = run_index(root, tmp_path, env)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout[result.stdout.find("{") :])
    assert report["success"] is True and report["new"]
    assert marker.read_text() == "ran"


@pytest.mark.slow
def test_a_failed_index_exits_1_after_printing_its_report(tmp_path: Path, openai_server) -> None:
    openai_server.add_fault("status", status=400, message="refused for the test", times=1000)
    root = make_llm_project(tmp_path / "project", openai_server.base_url)
    result, marker = run_index(root, tmp_path, dict(os.environ))
    assert result.returncode == 1
    report = json.loads(result.stdout[result.stdout.find("{") :])
    assert report["success"] is False and report["failed_documents"]
    assert marker.read_text() == "ran"


def test_in_process_callers_get_a_normal_return_or_system_exit() -> None:
    assert exit_now(0) is None
    with pytest.raises(SystemExit) as exit_:
        exit_now(1)
    assert exit_.value.code == 1
