"""A query method added to the registry alone is offered and answered by every edge.

The toy method ``echo`` is one descriptor added to ``query/registry.py``'s list for the test (its
functions and settings model live in this module, as a new method's would live in its own): the
CLI's ``--method`` accepts it, the Dagster query job's config enum holds it, the native API
accepts it and lists it in its schema, and each of them gets its answer.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from pydantic import BaseModel, ConfigDict

from graphrag_assets.core.errors import UserError
from graphrag_assets.core.settings import QuerySettings
from graphrag_assets.query import registry
from graphrag_assets.query.engine import run_query
from graphrag_assets.query.query_data import QueryData
from graphrag_assets.query.registry import QueryMethod, query_method
from graphrag_assets.query.request import QueryOptions, SearchRequest
from graphrag_assets.query.results import ContextRecords, QueryResult, QueryUsage

HERE = "graphrag_assets_tests.test_query_registry"
ECHO = QueryMethod(
    name="echo",
    help="the question back, with the number of entities in the index",
    search=f"{HERE}:echo_search",
    context=f"{HERE}:echo_context",
    needs_embedder=False,
    settings=f"{HERE}:EchoOptions",
)
QUESTION = "Who is Søren Holm?"


class EchoOptions(BaseModel):
    """The toy's options, read from ``query.methods.echo``."""

    model_config = ConfigDict(extra="forbid")
    greeting: str = "echo"


async def echo_search(request: SearchRequest) -> QueryResult:
    options = query_method("echo").options(request.settings)
    answer = f"{options.greeting}: {request.question} ({request.data.entities.height} entities)"
    return QueryResult(answer, "echo", ContextRecords(), request.question, QueryUsage(), llm_used=False)


async def echo_context(request: SearchRequest) -> QueryResult:
    return QueryResult("", "echo", ContextRecords(), request.question, QueryUsage(), llm_used=False)


@pytest.fixture
def echo(monkeypatch: pytest.MonkeyPatch) -> QueryMethod:
    """The registry with the toy method added (and without it again after the test)."""
    monkeypatch.setattr(registry, "METHODS", (*registry.METHODS, ECHO))
    return ECHO


def ask(settings: QuerySettings, **options) -> QueryResult:
    request = SearchRequest(QUESTION, QueryData(), settings, options=QueryOptions(method="echo", **options))
    return asyncio.run(run_query(request))


def test_the_engine_runs_a_registered_method_with_its_own_options(echo: QueryMethod) -> None:
    assert ask(QuerySettings()).answer == f"echo: {QUESTION} (0 entities)"
    assert ask(QuerySettings(methods={"echo": {"greeting": "hello"}})).answer.startswith("hello: ")
    assert ask(QuerySettings(), context_only=True).context_text == QUESTION
    with pytest.raises(UserError, match=r"'query\.methods\.echo\.colour'"):
        ask(QuerySettings(methods={"echo": {"colour": "red"}}))
    with pytest.raises(UserError, match=r"'query\.methods\.ehco' names no query method with options"):
        ask(QuerySettings(methods={"ehco": {}}))
    with pytest.raises(UserError, match="only used by local search"):
        ask(QuerySettings(), conversation_history=[{"role": "user", "content": "hi"}])


def test_without_the_entry_the_method_is_unknown() -> None:
    with pytest.raises(UserError, match="unknown query method 'echo'; choose one of: local, global, drift, basic"):
        ask(QuerySettings())


def test_the_cli_offers_and_answers_a_registered_method(echo: QueryMethod, nlp_index: Path) -> None:
    from graphrag_assets.cli.main import main

    runner = CliRunner()
    done = runner.invoke(main, ["query", QUESTION, "--method", "echo", "--root", str(nlp_index), "--json"])
    assert done.exit_code == 0, done.output
    body = json.loads(done.output)
    assert body["method"] == "echo" and body["answer"].startswith(f"echo: {QUESTION} (")
    refused = runner.invoke(main, ["query", QUESTION, "--method", "sideways", "--root", str(nlp_index)])
    assert refused.exit_code == 2 and "'echo'" in refused.output  # click lists the choices


def test_the_query_job_offers_and_answers_a_registered_method(
    echo: QueryMethod, nlp_index: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dagster import DagsterInvalidConfigError, Definitions, InMemoryIOManager

    from graphrag_assets.pipeline.query_job import build_query_job
    from graphrag_assets.pipeline.resources import GraphRAGProject

    def query_job():
        """The job as the definitions bind it (their other resources are not needed to query)."""
        resources = {"project": GraphRAGProject(root=str(nlp_index)), "query_io_manager": InMemoryIOManager()}
        return Definitions(jobs=[build_query_job()], resources=resources).resolve_job_def("query_job")

    run_config = {"ops": {"answer_query": {"config": {"question": QUESTION, "method": "echo"}}}}
    result = query_job().execute_in_process(run_config=run_config)
    assert result.success and result.output_for_node("answer_query")["answer"].startswith(f"echo: {QUESTION} (")
    monkeypatch.undo()  # the registry without the toy: its job's config refuses the name before a run starts
    with pytest.raises(DagsterInvalidConfigError, match="echo"):
        query_job().execute_in_process(run_config=run_config)


def test_the_native_api_offers_and_answers_a_registered_method(echo: QueryMethod, nlp_index: Path) -> None:
    from starlette.testclient import TestClient

    from graphrag_assets.serve.app import create_app
    from graphrag_assets.serve.config import build_config

    config = build_config([nlp_index], None, "127.0.0.1", 0, None)
    with TestClient(create_app(config), base_url="http://127.0.0.1", raise_server_exceptions=False) as client:
        answered = client.post("/api/query", json={"question": QUESTION, "method": "echo"})
        assert answered.status_code == 200, answered.text
        assert answered.json()["answer"].startswith(f"echo: {QUESTION} (")
        schema = client.get("/openapi.json").json()["components"]["schemas"]["QueryRequest"]
        assert "echo" in schema["properties"]["method"]["enum"]
        refused = client.post("/api/query", json={"question": QUESTION, "method": "sideways"})
        assert refused.status_code == 400 and "'echo'" in refused.json()["error"]["message"]
        models = [m["id"] for m in client.get("/v1/models").json()["data"]]
        assert "graphrag-echo" in models
