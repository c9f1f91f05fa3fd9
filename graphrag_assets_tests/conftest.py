"""Shared fixtures: temporary projects built from the bundled sample corpus."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytest_plugins = ["graphrag_assets_tests.openai_fixtures"]

REPO = Path(__file__).resolve().parents[1]
SAMPLE_INPUT = REPO / "data" / "input"


def make_project(root: Path, with_sample: bool = True) -> Path:
    """A project folder with the project files and (optionally) a copy of the sample corpus."""
    from graphrag_assets.project_files import write_project_files

    write_project_files(root)
    if with_sample:
        shutil.rmtree(root / "data" / "input")
        shutil.copytree(SAMPLE_INPUT, root / "data" / "input")
    return root


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "project")


@pytest.fixture
def offline_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No model endpoint configured, whatever the developer's shell has."""
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "GRAPHRAG_ROOT"):
        monkeypatch.delenv(name, raising=False)
