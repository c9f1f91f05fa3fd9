"""``graphrag-assets doctor`` against every emulated kind of server, a closed port, an unknown host,
a refused key and an unknown model: the capability table, ``--json``, the exit status and the
one sentence when something cannot work."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from graphrag_assets.cli.main import main
from graphrag_assets.llm.capabilities import stored_capabilities
from graphrag_assets_testkit.projects import make_project
from graphrag_assets_testkit.server_profiles import ProfileSpec
from graphrag_assets_tests.profile_servers import RESPONDER, VLLM_WINDOW, environment, write_settings

FAST_FAILURE_SECONDS = 10.0

# profile -> what doctor must find (chat capabilities, embedding capabilities)
FINDINGS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "openai": (
        {
            "token_limit_parameter": "max_tokens",
            "temperature": True,
            "json_object": "honoured",
            "json_schema": "honoured",
            "stream_usage": "honoured",
            "think_blocks": False,
        },
        {"base64_embeddings": True, "encoding_format": "honoured"},
    ),
    "reasoning": (
        {"token_limit_parameter": "max_completion_tokens", "temperature": False, "json_schema": "honoured"},
        {},
    ),
    "azure": ({"json_schema": "honoured", "stream_usage": "honoured"}, {}),
    "ollama": (
        {"think_blocks": True, "json_object": "honoured", "json_schema": "ignored", "stream_usage": "ignored"},
        {},
    ),
    "vllm": ({"json_schema": "honoured", "context_window": VLLM_WINDOW}, {}),
    "no-dimensions": ({}, {"dimensions": "ignored"}),
    "base64": ({}, {"base64_embeddings": True, "encoding_format": "honoured"}),
}


CLEAN_ENV = {"OPENAI_API_KEY": None, "OPENAI_BASE_URL": None, "GRAPHRAG_ROOT": None}  # whatever the shell has


def doctor(root: Path, env: dict[str, str], *args: str) -> tuple[int, str, str, float]:
    started = time.monotonic()
    result = CliRunner().invoke(
        main, ["doctor", "--root", str(root), *args], env={**CLEAN_ENV, **env}, catch_exceptions=False
    )
    return result.exit_code, result.stdout, result.stderr, time.monotonic() - started


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = make_project(tmp_path / "project", with_sample=False)
    (root / "data" / "input" / "note.txt").write_text(
        "Marta Quell chairs the Vellmouth Fishing Cooperative.", encoding="utf-8"
    )
    return root


@pytest.mark.parametrize("profile", sorted(FINDINGS))
def test_doctor_reports_what_each_kind_of_server_accepts(profile, profile_servers, project):
    server = profile_servers[profile]
    write_settings(project, profile, server)
    code, out, err, _ = doctor(project, environment(server), "--json")
    report = json.loads(out)
    assert code == 0 and report["ok"] and report["problem"] is None, err
    chat_expected, embedding_expected = FINDINGS[profile]
    chat, embeddings = report["chat"]["capabilities"], report["embeddings"]["capabilities"]
    assert {k: chat[k] for k in chat_expected} == chat_expected
    assert {k: embeddings[k] for k in embedding_expected} == embedding_expected
    assert report["chat"]["first_seconds"] > 0 and report["embeddings"]["vector_size"] == 64
    assert report["dry_run"]["text_units"] == 1 and report["dry_run"]["calls"] >= 2
    # what was found is kept in the project for every later run
    stored = stored_capabilities(project / "data" / "graphrag.duckdb")
    assert stored[(report["chat"]["url"], report["chat"]["model"], "chat")].as_dict() == chat
    assert stored[(report["embeddings"]["url"], report["embeddings"]["model"], "embedding")].as_dict() == embeddings


def test_doctor_prints_a_table_with_latency_prices_and_the_cost_of_the_next_index(profile_servers, project):
    server = profile_servers["ollama"]
    write_settings(
        project,
        "ollama",
        server,
        {"llm": {"prices": {"qwen3:8b": {"input_per_million": 1.0, "output_per_million": 2.0}}}},
    )
    code, out, err, _ = doctor(project, environment(server))
    assert code == 0, err
    assert f"chat        qwen3:8b at {server.base_url}" in out
    assert "  answers            yes: first in " in out  # then the next answer's time
    assert "<think> blocks     yes (removed before parsing)" in out
    assert "JSON schema        accepted but not followed" in out
    assert "usage in streams   missing" in out
    assert "$1 input / $2 output per million tokens" in out
    assert "embeddings  nomic-embed-text" in out and "vectors            64 dimensions" in out
    assert "next index  1 document file(s), 1 text unit(s)" in out and "~$" in out


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _one_sentence(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0].removeprefix("error: ")


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "no-such-host.invalid"])
def test_an_unreachable_endpoint_fails_fast_with_one_sentence(host, project):
    url = "http://" + host.format(port=_closed_port()) + "/v1"
    (project / "graphrag.yaml").write_text(f"llm:\n  base_url: {url}\n  embeddings: local\n", encoding="utf-8")
    code, out, err, seconds = doctor(project, {})  # default retries: a down server must not take minutes
    sentence = _one_sentence(err)
    assert code == 1 and seconds < FAST_FAILURE_SECONDS
    assert sentence.startswith(f"could not connect to {url} for chat model 'gpt-4o-mini'")
    assert ("connection refused" in sentence and "is the server" in sentence) or "host name is unknown" in sentence


@pytest.mark.parametrize("profile", ["openai", "azure"])
def test_a_refused_key_is_one_sentence_naming_the_setting(profile, profile_servers, project):
    server = profile_servers[profile]
    write_settings(project, profile, server)
    env = {**environment(server), "OPENAI_API_KEY": "sk-wrong-key-000000", "AZURE_OPENAI_API_KEY": "wrong-azure-key"}
    code, out, err, _ = doctor(project, env, "--json")
    sentence = _one_sentence(err)
    assert code == 1 and json.loads(out)["problem"] == sentence
    url = server.root_url if profile == "azure" else server.base_url
    assert (
        sentence
        == f"the chat endpoint {url} refused the API key (HTTP 401); set OPENAI_API_KEY or llm.api_key to a valid key."
    )
    assert "wrong" not in err


@pytest.mark.parametrize("profile", ["ollama", "vllm", "azure", "reasoning"])
def test_an_unknown_model_is_one_sentence_naming_the_model(profile, profile_servers, project):
    server = profile_servers[profile]
    write_settings(project, profile, server, {"llm": {"chat_model": "no-such-model"}})
    code, _, err, _ = doctor(project, environment(server))
    url = server.root_url if profile == "azure" else server.base_url
    assert code == 1
    assert _one_sentence(err) == (
        f"the chat endpoint {url} has no model 'no-such-model' (HTTP 404); check llm.chat_model "
        "(on Azure, the deployment name) and llm.base_url."
    )


def test_without_an_endpoint_there_is_nothing_to_probe(project):
    code, out, err, _ = doctor(project, {})
    assert code == 0, err
    assert "chat        none configured" in out and "embeddings  local embedder" in out


def test_a_model_that_loads_on_first_use_is_pointed_out(openai_server_factory, project):
    server = openai_server_factory(responder=RESPONDER, profile=ProfileSpec("ollama", load_seconds=2.2))
    write_settings(project, "ollama", server)
    code, out, err, _ = doctor(project, environment(server))
    assert code == 0, err
    assert "the server loads the model on first use; llm.request_timeout (600 s) must stay above that." in out
