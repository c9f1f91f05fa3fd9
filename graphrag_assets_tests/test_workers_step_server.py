"""The fork server the workers job's step processes come from (pipeline/runtime/step_server.py):
a step forked after this process's environment changed sees the new environment, not the one the
server started with (settings, API keys and the object store's endpoint are read from it)."""

from __future__ import annotations

import multiprocessing
import os

import pytest

from graphrag_assets.pipeline.runtime.step_server import START_METHOD, start_step_server

PROBE = "GRAPHRAG_ASSETS_STEP_SERVER_PROBE"


def seen_by_a_step() -> str | None:
    with multiprocessing.get_context(START_METHOD).Pool(1) as pool:
        return pool.apply(os.getenv, (PROBE,))


def test_a_step_forked_after_the_environment_changed_sees_the_new_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PROBE, "first")
    start_step_server(["json"])
    assert seen_by_a_step() == "first"
    start_step_server(["json"])  # unchanged: the same server goes on
    assert seen_by_a_step() == "first"
    monkeypatch.setenv(PROBE, "second")
    start_step_server(["json"])
    assert seen_by_a_step() == "second"
