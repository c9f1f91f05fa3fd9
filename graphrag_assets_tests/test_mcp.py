"""The MCP server through the official SDK's own client, on both transports, against real indexes.

- **stdio**: ``graphrag-assets mcp --root harbour --root offline`` as a subprocess (what an
  assistant launches);
- **HTTP**: a real ``graphrag-assets serve`` process with an API key, at ``/mcp``.

"harbour" is the sample indexed with the scripted model server (answers and their citations come
from it), "offline" the sample indexed without a model. Each transport lists the tools and calls
every one of them; the HTTP one is also refused with a wrong key, a body over
``serve.max_request_bytes``, and both refuse a question over ``serve.max_question_chars`` with the
same sentence the HTTP API sends. A method added to the query registry is offered by the tools
without a change to them (in-process client, the SDK's own in-memory transport).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from graphrag_assets.core.settings import load_settings
from graphrag_assets.query import registry
from graphrag_assets.serve.mcp_server import mcp_server
from graphrag_assets.serve.projects import Project, Projects
from graphrag_assets_testkit.projects import make_project
from graphrag_assets_tests.serve_process import ServeProcess, serving_two_projects
from graphrag_assets_tests.test_query_registry import ECHO, echo  # noqa: F401  (a fixture)

KEY = "mcp-test-key-7d21"
QUESTION = "Who is Søren Holm and what happened during Storm Odile?"
TOOLS = {
    "search",
    "search_context",
    "find_entities",
    "show_entity",
    "show_community",
    "show_source",
    "show_relationship",
    "show_claim",
    "sql",
    "list_projects",
}
TOO_LONG = "the question is 8,001 characters long and the limit is 8,000 (serve.max_question_chars); shorten it."


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A tool's structured result (its text content is the same JSON); fails on an error result."""
    result = await client.call_tool(tool, arguments)
    text = result.content[0].text
    assert not result.is_error, f"{tool}: {text}"
    assert json.loads(text) == result.structured_content
    return result.structured_content


async def refusal(client: Client, tool: str, arguments: dict[str, Any]) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error and result.structured_content is None
    return result.content[0].text


def chat_calls(graphrag_server) -> int:
    return graphrag_server.stats()["counts"].get("chat", 0)


async def exercise_every_tool(client: Client, graphrag_server, harbour: Path) -> None:
    """List the tools and call each one, on harbour (the default project) and offline."""
    listed = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(listed) == TOOLS
    assert all(tool.annotations.read_only_hint and len(tool.description) > 80 for tool in listed.values())
    for name in ("search", "search_context"):
        method = listed[name].input_schema["properties"]["method"]
        assert method["enum"] == list(registry.method_names()) and method["default"] == "local"
        assert all(f"- {m.name}: {m.help}" in listed[name].description for m in registry.METHODS)

    projects = await call(client, "list_projects", {})
    assert projects["default_project"] == "harbour"
    assert [(p["name"], p["state"], p["llm"]) for p in projects["projects"]] == [
        ("harbour", "ready", True),
        ("offline", "ready", False),
    ]
    assert [m["name"] for m in projects["methods"]] == list(registry.method_names())

    asked = chat_calls(graphrag_server)
    for method in registry.method_names():
        found = await call(client, "search", {"question": QUESTION, "method": method})
        assert found["project"] == "harbour" and found["method"] == method and found["llm_used"]
        assert found["answer"].startswith("Answer to: ") and "[Data:" in found["answer"]
        cited = [r for r in found["references"] if r["cited"]]
        assert cited and all(f"{r['citation']}" in found["answer"] for r in cited)

    before = chat_calls(graphrag_server)
    assert before > asked, "the searches did not call the chat model"
    context = await call(client, "search_context", {"question": QUESTION, "method": "local"})
    assert chat_calls(graphrag_server) == before, "the context-only search called the chat model"
    assert context["method"] == "local" and "Søren Holm".upper() in context["context_text"].upper()
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for record in context["records"]:
        by_kind.setdefault(record["kind"], []).append(record)
    assert {"reports", "entities", "relationships", "sources"} <= set(by_kind)
    assert all([r["rank"] for r in rows] == list(range(1, len(rows) + 1)) for rows in by_kind.values())

    # every kind of cited record opens with the tool and ref its reference names
    for kind in ("reports", "entities", "relationships", "sources"):
        record = by_kind[kind][0]
        shown = await call(client, record["show"]["tool"], {"ref": record["show"]["ref"]})
        assert shown["id"] == record["id"], kind
    source = await call(client, "show_source", {"ref": by_kind["sources"][0]["citation"]})
    assert source["text"] and source["document"]["title"]
    community = await call(client, "show_community", {"ref": by_kind["reports"][0]["citation"]})
    assert community["title"] == by_kind["reports"][0]["title"] and community["full_content"]

    holm = await call(client, "find_entities", {"name": "holm", "project": "offline"})
    assert holm["project"] == "offline" and "HOLM" in holm["items"][0]["title"]
    entity = await call(client, "show_entity", {"ref": holm["items"][0]["title"], "project": "offline"})
    assert entity["human_readable_id"] == holm["items"][0]["human_readable_id"] and entity["relationships"]["items"]
    assert "there is no claim '999999'" in await refusal(client, "show_claim", {"ref": "999999"})

    counts = {p["name"]: p["counts"] for p in projects["projects"]}
    rows = await call(client, "sql", {"query": "SELECT count(*) AS n FROM entities", "project": "offline"})
    assert rows["rows"] == [{"n": counts["offline"]["entities"]}] and not rows["truncated"]
    page = await call(client, "sql", {"query": "SELECT title FROM entities ORDER BY title", "max_rows": 3})
    assert len(page["rows"]) == 3 and page["row_count"] == counts["harbour"]["entities"] and page["truncated"]
    refused = await refusal(client, "sql", {"query": "DELETE FROM entities"})
    # the database as clients are told the project's folder, not by the machine's path
    assert refused.startswith("'sql' only reads") and "/data/graphrag.duckdb with the DuckDB CLI" in refused
    assert str(harbour) not in refused and str(harbour.resolve()) not in refused
    files = await refusal(client, "sql", {"query": "SELECT * FROM read_text('/etc/hostname')"})
    assert "reads files or the network" in files

    assert await refusal(client, "search", {"question": "x" * 8_001}) == TOO_LONG
    assert await refusal(client, "search", {"method": "local"}) == "search: 'question' is required."
    missing = await refusal(client, "show_entity", {"ref": "1", "project": "elsewhere"})
    assert missing == "there is no project named 'elsewhere'; this server has: harbour, offline."


def run(scenario: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(scenario())


# --- stdio ---------------------------------------------------------------------------------------


def test_stdio_lists_and_calls_every_tool(
    standard_index: Path, nlp_index: Path, graphrag_server, tmp_path: Path
) -> None:
    (tmp_path / "harbour").symlink_to(standard_index)
    (tmp_path / "offline").symlink_to(nlp_index)
    command = ["-m", "graphrag_assets.cli.main", "mcp", "--root", "harbour", "--root", "offline"]
    params = StdioServerParameters(command=sys.executable, args=command, cwd=tmp_path)

    async def scenario() -> None:
        async with Client(params, read_timeout_seconds=120) as client:
            await exercise_every_tool(client, graphrag_server, standard_index)

    run(scenario)


# --- HTTP ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server(standard_index: Path, nlp_index: Path, tmp_path_factory: pytest.TempPathFactory):
    with serving_two_projects(standard_index, nlp_index, tmp_path_factory.mktemp("served-mcp"), KEY) as process:
        yield process


@contextlib.asynccontextmanager
async def http_client(url: str, key: str) -> AsyncIterator[Client]:
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=120) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            yield client


def errors_of(exc: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups: the client raises from its task group."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in errors_of(inner)]
    return [exc]


def test_http_lists_and_calls_every_tool(server: ServeProcess, graphrag_server, standard_index: Path) -> None:
    async def scenario() -> None:
        async with http_client(f"{server.url}/mcp", KEY) as client:
            await exercise_every_tool(client, graphrag_server, standard_index)
        async with http_client(f"{server.url}/p/offline/mcp", KEY) as client:
            context = await call(client, "search_context", {"question": QUESTION, "method": "basic"})
            assert context["project"] == "offline" and context["records"]

    run(scenario)


def test_http_refuses_a_wrong_key_with_its_reason(server: ServeProcess) -> None:
    async def scenario() -> None:
        async with http_client(f"{server.url}/mcp", "not-the-key") as client:
            await client.list_tools()

    with pytest.raises(BaseException) as caught:
        run(scenario)
    refused = [e for e in errors_of(caught.value) if isinstance(e, MCPError)]
    assert refused and refused[0].error.message == "the API key is wrong; send the key the server was started with."
    assert refused[0].error.data == {"http_status": 401, "code": "invalid_api_key"}


def test_http_refuses_a_request_over_the_size_limit(server: ServeProcess) -> None:
    async def scenario() -> None:
        async with http_client(f"{server.url}/mcp", KEY) as client:
            result = await client.call_tool("search_context", {"question": "x" * 1_000_001})
            raise AssertionError(f"not refused: {result}")

    with pytest.raises(BaseException) as caught:
        run(scenario)
    refused = [e for e in errors_of(caught.value) if isinstance(e, MCPError)]
    assert refused and refused[0].error.message.startswith("the request body is larger than 1,000,000 bytes")
    assert refused[0].error.data["http_status"] == 413


# --- the registry --------------------------------------------------------------------------------


def test_a_method_added_to_the_registry_is_offered_and_answers(echo, nlp_index: Path) -> None:  # noqa: F811
    settings = load_settings(nlp_index, environ={})
    projects = Projects([Project("offline", settings)], settings.serve.reload_interval_seconds)

    async def scenario() -> None:
        await projects.start()
        try:
            async with Client(mcp_server(projects, settings.serve)) as client:
                tools = {tool.name: tool for tool in (await client.list_tools()).tools}
                assert "echo" in tools["search"].input_schema["properties"]["method"]["enum"]
                assert f"- echo: {ECHO.help}" in tools["search_context"].description
                found = await call(client, "search", {"question": QUESTION, "method": "echo"})
                assert found["answer"].startswith(f"echo: {QUESTION} (") and found["method"] == "echo"
        finally:
            await projects.stop()

    run(scenario)


def test_a_project_without_an_index_is_listed_and_says_how_to_build_it(tmp_path: Path) -> None:
    root = make_project(tmp_path / "fresh")
    settings = load_settings(root, environ={})
    projects = Projects([Project("fresh", settings)], settings.serve.reload_interval_seconds)

    async def scenario() -> None:
        await projects.start()
        try:
            async with Client(mcp_server(projects, settings.serve)) as client:
                listed = await call(client, "list_projects", {})
                assert [(p["name"], p["state"]) for p in listed["projects"]] == [("fresh", "no_index")]
                refused = await refusal(client, "search_context", {"question": QUESTION})
                assert refused.startswith("project 'fresh' has no index yet; run 'graphrag-assets index --root ")
        finally:
            await projects.stop()

    run(scenario)
