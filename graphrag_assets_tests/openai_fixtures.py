"""pytest fixtures around the scripted OpenAI-compatible server
(:mod:`graphrag_assets_testkit.scripted_openai`).

Register with ``pytest_plugins = ["graphrag_assets_tests.openai_fixtures"]`` in a conftest, or pass
``-p graphrag_assets_tests.openai_fixtures`` to pytest.

- ``openai_server_session`` (session): one server process shared by the whole run.
- ``openai_server`` (function): the same server, reset (rules, faults, counters, latency 0) before
  the test.
- ``profile_servers`` (session): one server per emulated kind of server (``profile_servers.PROFILES``:
  OpenAI, reasoning models, Azure, Ollama, vLLM, no ``dimensions``, base64), answering like a model.
- ``openai_server_factory`` (function): ``start(responder=None, latency_ms=0, embedding_dim=64,
  profile=None)`` starts an extra server (custom responder / latency / a :class:`ProfileSpec` to
  behave like Azure, Ollama, vLLM...); all of them are stopped after the test.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from graphrag_assets_testkit.scripted_openai import ScriptedOpenAIServer
from graphrag_assets_testkit.server_profiles import ProfileSpec


@pytest.fixture(scope="session")
def openai_server_session() -> Iterator[ScriptedOpenAIServer]:
    server = ScriptedOpenAIServer.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def openai_server(openai_server_session: ScriptedOpenAIServer) -> ScriptedOpenAIServer:
    openai_server_session.reset()
    return openai_server_session


@pytest.fixture
def openai_server_factory() -> Iterator[Callable[..., ScriptedOpenAIServer]]:
    started: list[ScriptedOpenAIServer] = []

    def start(
        responder: str | None = None,
        latency_ms: float = 0.0,
        embedding_dim: int = 64,
        profile: ProfileSpec | None = None,
    ) -> ScriptedOpenAIServer:
        server = ScriptedOpenAIServer.start(
            responder=responder, latency_ms=latency_ms, embedding_dim=embedding_dim, profile=profile
        )
        started.append(server)
        return server

    try:
        yield start
    finally:
        for server in started:
            server.stop()


@pytest.fixture(scope="session")
def profile_servers() -> Iterator[dict[str, ScriptedOpenAIServer]]:
    from graphrag_assets_tests.profile_servers import PROFILES, RESPONDER  # it imports this module

    started: dict[str, ScriptedOpenAIServer] = {}
    try:
        for name, (_, spec) in PROFILES.items():
            started[name] = ScriptedOpenAIServer.start(responder=RESPONDER, profile=spec)
        yield started
    finally:
        for server in started.values():
            server.stop()
