"""``graphrag-assets serve``'s routes through an in-process client (Starlette's TestClient).

Two projects are served by one application: ``harbour`` (the sample corpus indexed with the model
method through the scripted model server, so answers stream from a real ``openai`` client) and
``offline`` (the same corpus indexed with the nlp method). Every route is tried without the key,
with a wrong one and with each way of giving it; the limits, the errors, the order of streamed
events and what the explore routes return (against DuckDB) are checked.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from starlette.routing import Mount
from starlette.testclient import TestClient

from graphrag_assets.core.ids import short_id
from graphrag_assets.query.registry import method_names
from graphrag_assets.serve.app import create_app
from graphrag_assets.serve.config import build_config
from graphrag_assets_testkit.projects import make_project, query_db

KEY = "serve-test-key-7f3a"
AUTH = {"Authorization": f"Bearer {KEY}"}
QUESTION = "Who is Søren Holm and what happened during Storm Odile?"


@pytest.fixture(scope="module")
def served(standard_index: Path, nlp_index: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("served")
    (folder / "harbour").symlink_to(standard_index)
    (folder / "offline").symlink_to(nlp_index)
    return {"harbour": folder / "harbour", "offline": folder / "offline"}


@pytest.fixture(scope="module")
def client(served: dict[str, Path]):
    config = build_config([served["harbour"], served["offline"]], None, "127.0.0.1", 0, KEY)
    with TestClient(create_app(config), raise_server_exceptions=False) as test_client:
        yield test_client


def events(text: str) -> list[tuple[str, Any]]:
    """(event, data) of a server-sent event stream (data parsed as JSON unless it is [DONE])."""
    out = []
    for block in text.strip().split("\n\n"):
        name, data = "message", []
        for line in block.splitlines():
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].strip())
        joined = "\n".join(data)
        out.append((name, joined if joined == "[DONE]" else json.loads(joined)))
    return out


def error_of(response) -> str:
    body = response.json()
    assert set(body) == {"error"} and {"message", "type", "code"} <= set(body["error"]), body
    assert "Traceback" not in response.text
    return body["error"]["message"]


# --- the key, on every route ---------------------------------------------------------------------


def flat_routes(routes) -> list:
    """Routes, with those of included routers listed in place (FastAPI keeps them nested)."""
    out = []
    for route in routes:
        nested = getattr(route, "original_router", None)
        out += flat_routes(nested.routes) if nested is not None else [route]
    return out


def every_route(client: TestClient) -> list[tuple[str, str]]:
    """(method, path) of every route the application has, with sample path parameters."""
    found = []
    for route in flat_routes(client.app.routes):
        if isinstance(route, Mount):
            found.append(("GET", f"{route.path}/swagger-ui.css"))
            continue
        path = re.sub(r"\{model_id:path\}", "graphrag-local", route.path)
        path = re.sub(r"\{name\}", "app.js", path)
        path = re.sub(r"\{[^}]+\}", "1", path)
        for method in sorted(getattr(route, "methods", None) or {"GET"}):
            if method != "HEAD":
                found.append((method, path))
    return found


def test_every_route_but_the_login_needs_the_key(client: TestClient) -> None:
    routes = every_route(client)
    paths = {p for _, p in routes}
    assert {
        "/v1/chat/completions",
        "/v1/models",
        "/api/query",
        "/api/entities",
        "/api/entities/1",
        "/api/communities",
        "/api/reports/1",
        "/api/status",
        "/",
        "/docs",
        "/openapi.json",
        "/login",
    } <= paths
    for method, path in routes:
        for prefix in ("", "/p/offline"):
            response = client.request(method, prefix + path, json={} if method == "POST" else None)
            if path == "/login":  # the form (a POST without the key is the form again, with a message)
                assert response.headers["content-type"].startswith("text/html"), (method, path)
                continue
            assert response.status_code == 401, (method, prefix + path, response.status_code)
            assert "needs an API key" in error_of(response)
            assert response.headers["www-authenticate"] == "Bearer"
            wrong = client.request(
                method, prefix + path, headers={"Authorization": "Bearer nope"}, json={} if method == "POST" else None
            )
            assert wrong.status_code == 401 and "the API key is wrong" in error_of(wrong)
            allowed = client.request(method, prefix + path, headers=AUTH, json={} if method == "POST" else None)
            assert allowed.status_code != 401, (method, prefix + path)


def test_the_key_in_a_header_or_the_login_cookie(client: TestClient) -> None:
    assert client.get("/api/status", headers={"X-API-Key": KEY}).status_code == 200
    assert client.get("/api/status", headers={"Authorization": f"bearer {KEY}"}).status_code == 200
    page = client.get("/", headers={"Accept": "text/html"}, follow_redirects=False)
    assert page.status_code == 303 and page.headers["location"] == "/login"
    assert (
        client.get("/p/offline/", headers={"Accept": "text/html"}, follow_redirects=False).headers["location"]
        == "/p/offline/login"
    )
    assert 'name="key"' in client.get("/login").text
    wrong = client.post("/login", content="key=nope", headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert wrong.status_code == 401 and "not the server's key" in wrong.text and "set-cookie" not in wrong.headers
    right = client.post(
        "/login",
        content=f"key={KEY}",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
        follow_redirects=False,
    )
    assert right.status_code == 303
    cookie = right.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and KEY not in cookie
    token = cookie.split(";")[0].split("=", 1)[1]
    assert client.get("/api/status", headers={"Cookie": f"graphrag_session={token}"}).status_code == 200
    assert client.get("/api/status", headers={"Cookie": "graphrag_session=" + "0" * 64}).status_code == 401
    client.cookies.clear()


# --- limits and errors ---------------------------------------------------------------------------


def test_request_size_and_question_length_are_limited(client: TestClient) -> None:
    big = {"question": "x" * 1_100_000}
    response = client.post("/api/query", json=big, headers=AUTH)
    assert response.status_code == 413 and "larger than 1,000,000 bytes" in error_of(response)

    def chunked():
        for _ in range(11):
            yield b"x" * 100_000

    response = client.post("/api/query", content=chunked(), headers={**AUTH, "Content-Type": "application/json"})
    assert "content-length" not in response.request.headers and response.status_code == 413
    long = client.post("/api/query", json={"question": "why " * 2_001, "method": "local"}, headers=AUTH)
    assert long.status_code == 400 and "8,004 characters long and the limit is 8,000" in error_of(long)
    prompt = client.post("/api/query", json={"question": "why?", "system_prompt": "x" * 8_001}, headers=AUTH)
    assert prompt.status_code == 400 and "system prompt is 8,001 characters" in error_of(prompt)
    chat = client.post(
        "/v1/chat/completions",
        json={"model": "graphrag-local", "messages": [{"role": "user", "content": "q" * 9_000}]},
        headers=AUTH,
    )
    assert chat.status_code == 400 and "9,000 characters" in error_of(chat)


def test_errors_are_one_json_sentence(client: TestClient) -> None:
    cases = [
        (client.post("/api/query", json={"method": "local"}, headers=AUTH), 400, "'question' is required."),
        (
            client.post("/api/query", json={"question": "q", "method": "sideways"}, headers=AUTH),
            400,
            "'method': input should be",
        ),
        (client.post("/api/query", json={"question": "q", "colour": 1}, headers=AUTH), 400, "'colour': extra inputs"),
        (
            client.post("/api/query", content=b"{not json", headers={**AUTH, "Content-Type": "application/json"}),
            400,
            "not valid JSON",
        ),
        (client.post("/api/query", json={"question": "   "}, headers=AUTH), 400, "the question is empty"),
        (
            client.post(
                "/api/query",
                json={"question": "q", "method": "global", "conversation_history": [{"role": "user", "content": "a"}]},
                headers=AUTH,
            ),
            400,
            "only used by local search",
        ),
        (client.get("/api/nowhere", headers=AUTH), 404, "there is no route GET /api/nowhere"),
        (client.get("/api/query", headers=AUTH), 405, "GET is not allowed on /api/query"),
        (
            client.get("/p/elsewhere/api/status", headers=AUTH),
            404,
            "there is no project named 'elsewhere'; this server has: harbour, offline.",
        ),
        (
            client.get("/api/status", headers={**AUTH, "X-GraphRAG-Project": "elsewhere"}),
            404,
            "no project named 'elsewhere'",
        ),
        (client.get("/api/entities/999999", headers=AUTH), 404, "there is no entity '999999' in this build"),
        (client.get("/api/claims/1", headers=AUTH), 404, "there is no claim '1'"),
        (client.get("/api/entities?limit=0", headers=AUTH), 400, "'limit': input should be greater than or equal to 1"),
        (
            client.post(
                "/v1/chat/completions",
                json={"model": "gpt-4o", "messages": [{"role": "user", "content": "q"}]},
                headers=AUTH,
            ),
            404,
            "the model 'gpt-4o' does not exist",
        ),
        (
            client.post(
                "/v1/chat/completions",
                json={"model": "graphrag-local", "messages": [{"role": "assistant", "content": "q"}]},
                headers=AUTH,
            ),
            400,
            "the last message must be the user's question",
        ),
        (
            client.post("/v1/chat/completions", json={"model": "graphrag-local", "messages": []}, headers=AUTH),
            400,
            "'messages'",
        ),
    ]
    for response, status, message in cases:
        assert response.status_code == status, (message, response.text)
        assert message in error_of(response), (message, response.text)


def test_a_failing_model_server_is_a_502_and_an_error_event(client: TestClient, graphrag_server) -> None:
    graphrag_server.add_fault("status", status=400, message="model says no", endpoint="chat", times=2)
    try:
        response = client.post("/api/query", json={"question": QUESTION, "method": "basic"}, headers=AUTH)
        assert (
            response.status_code == 502 and "HTTP 400" in error_of(response) and "model says no" in error_of(response)
        )
        streamed = client.post(
            "/api/query", json={"question": QUESTION, "method": "basic", "stream": True}, headers=AUTH
        )
        names = [name for name, _ in events(streamed.text)]
        assert streamed.status_code == 200 and names[0] == "start" and names[-1] == "error"
        assert "model says no" in events(streamed.text)[-1][1]["error"]["message"]
    finally:
        graphrag_server.reset()


# --- the chat API --------------------------------------------------------------------------------


def test_models_list_every_method_and_project(client: TestClient) -> None:
    ids = [m["id"] for m in client.get("/v1/models", headers=AUTH).json()["data"]]
    methods = method_names()  # every registered method, for the default project and each named one
    assert ids[: len(methods)] == [f"graphrag-{m}" for m in methods] and "graphrag-lazy" in ids
    assert "offline/graphrag-drift" in ids and "harbour/graphrag-basic" in ids and len(ids) == 3 * len(methods)
    assert client.get("/v1/models/offline/graphrag-local", headers=AUTH).json()["id"] == "offline/graphrag-local"
    assert client.get("/v1/models/graphrag-nothing", headers=AUTH).status_code == 404


def chat(client: TestClient, model: str, messages: list[dict[str, str]], **extra: Any):
    return client.post("/v1/chat/completions", json={"model": model, "messages": messages, **extra}, headers=AUTH)


def test_chat_answers_with_references_that_resolve(client: TestClient, served: dict[str, Path]) -> None:
    response = chat(client, "offline/graphrag-local", [{"role": "user", "content": QUESTION}])
    body = response.json()
    assert response.status_code == 200 and body["object"] == "chat.completion"
    answer = body["choices"][0]["message"]["content"]
    assert body["choices"][0]["finish_reason"] == "stop" and "[Data: Sources (" in answer
    assert body["graphrag"]["project"] == "offline" and response.headers["x-graphrag-project"] == "offline"
    (run_id,) = query_db(served["offline"], "select run_id from corpus_build")[0]
    assert body["graphrag"]["build"]["run_id"] == run_id == response.headers["x-graphrag-build"]
    refs = body["references"]
    assert set(refs) == {"reports", "entities", "relationships", "claims", "sources"}
    cited = [r for r in refs["sources"] if r["cited"]]
    assert cited and all(f"Sources ({r['citation']})" in answer for r in cited)
    assert any(not r["cited"] for kind in refs for r in refs[kind])  # consulted but not cited is listed too
    source = client.get(cited[0]["href"], headers=AUTH).json()
    assert cited[0]["href"].startswith("/p/offline/api/sources/") and source["id"] == cited[0]["id"]
    (text,) = query_db(served["offline"], f"select text from text_units where id = '{source['id']}'")[0]
    assert source["text"] == text
    entity = refs["entities"][0]
    assert client.get(entity["href"], headers=AUTH).json()["title"] == entity["title"]


def test_chat_streams_text_then_references_then_usage(client: TestClient) -> None:
    response = chat(
        client,
        "harbour/graphrag-local",
        [{"role": "user", "content": QUESTION}],
        stream=True,
        stream_options={"include_usage": True},
    )
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
    chunks = [data for _, data in events(response.text)]
    assert chunks[-1] == "[DONE]"
    first, *middle, final, usage, _ = chunks
    assert first["choices"][0]["delta"]["role"] == "assistant"
    pieces = [c["choices"][0]["delta"]["content"] for c in middle]
    assert len(pieces) > 3 and all(c["choices"][0]["finish_reason"] is None for c in middle)
    assert final["choices"][0]["finish_reason"] == "stop" and final["references"]["entities"]
    assert any(r["cited"] for kind in final["references"] for r in final["references"][kind])
    assert usage["choices"] == [] and usage["usage"]["completion_tokens"] > 0
    text = "".join(pieces)
    assert text.startswith("Answer to: ") and "[Data:" in text


def test_history_goes_to_local_search_and_the_system_prompt_to_the_final_answer(
    client: TestClient, graphrag_server
) -> None:
    graphrag_server.reset()
    messages = [
        {"role": "system", "content": "Answer like a harbour pilot."},
        {"role": "user", "content": "Tell me about the Kestrel Point Lighthouse."},
        {"role": "assistant", "content": "It is a lighthouse."},
        {"role": "user", "content": QUESTION},
    ]
    assert chat(client, "harbour/graphrag-local", messages).status_code == 200
    (final,) = [c for c in graphrag_server.calls("chat")]
    system = final["body"]["messages"][0]["content"]
    assert final["body"]["messages"][0]["role"] == "system" and len(final["body"]["messages"]) == 2
    assert system.endswith("\n\nAnswer like a harbour pilot.")
    assert "Conversation History" in system and "Tell me about the Kestrel Point Lighthouse." in system
    assert final["body"]["messages"][1] == {"role": "user", "content": QUESTION}

    graphrag_server.reset()
    response = chat(client, "harbour/graphrag-global", messages)  # history dropped: global search does not use it
    assert response.status_code == 200
    calls = graphrag_server.calls("chat")
    reduce = [c for c in calls if c["body"]["messages"][0]["content"].startswith("Several analysts")]
    maps = [c for c in calls if c["body"]["messages"][0]["content"].startswith("You are one of several analysts")]
    assert reduce and reduce[-1]["body"]["messages"][0]["content"].endswith("Answer like a harbour pilot.")
    assert all("harbour pilot" not in c["body"]["messages"][0]["content"] for c in maps)


# --- the native API ------------------------------------------------------------------------------


def test_a_streamed_query_sends_start_tokens_then_the_result(client: TestClient) -> None:
    response = client.post(
        "/api/query",
        json={"question": QUESTION, "method": "basic", "stream": True},
        headers={**AUTH, "X-GraphRAG-Project": "harbour"},
    )
    parsed = events(response.text)
    names = [name for name, _ in parsed]
    assert names[0] == "start" and names[-1] == "result" and set(names[1:-1]) == {"token"} and len(names) > 5
    result = parsed[-1][1]
    assert "".join(data["text"] for name, data in parsed if name == "token") == result["answer"]
    assert result["references"]["sources"] and result["llm_used"] is True and result["project"] == "harbour"
    assert parsed[0][1]["build"] == result["build"]


@pytest.mark.parametrize("method", ["local", "global", "drift", "basic"])
def test_context_only_retrieves_without_a_chat_call(client: TestClient, graphrag_server, method: str) -> None:
    graphrag_server.reset()
    response = client.post(
        "/p/harbour/api/query", json={"question": QUESTION, "method": method, "context_only": True}, headers=AUTH
    )
    body = response.json()
    assert (
        response.status_code == 200
        and body["answer"] == ""
        and body["context_only"] is True
        and body["llm_used"] is False
    )
    assert graphrag_server.calls("chat") == []
    assert body["context_text"].startswith("-----") and "|" in body["context_text"]
    kinds = {kind for kind, rows in body["references"].items() if rows}
    assert (
        {"reports"} if method in ("global", "drift") else {"entities", "sources"} if method == "local" else {"sources"}
    ) <= kinds
    assert not any(r["cited"] for rows in body["references"].values() for r in rows)


def test_query_options_reach_the_engine(client: TestClient, served: dict[str, Path], graphrag_server) -> None:
    graphrag_server.reset()
    body = {
        "question": QUESTION,
        "method": "local",
        "response_type": "Single Haiku",
        "system_prompt": "Answer in French.",
    }
    assert client.post("/api/query", json=body, headers=AUTH).status_code == 200
    (final,) = graphrag_server.calls("chat")
    system = final["body"]["messages"][0]["content"]
    assert "Single Haiku" in system and system.endswith("\n\nAnswer in French.")
    body = client.post(
        "/api/query", json={"question": QUESTION, "method": "global", "community_level": 0}, headers=AUTH
    ).json()
    assert body["details"]["community_level"] == 0 and body["method"] == "global"
    numbers = ", ".join(r["citation"] for r in body["references"]["reports"])
    assert numbers and query_db(
        served["harbour"], f"select distinct level from community_reports where community in ({numbers})"
    ) == [(0,)]


def test_explore_entities_and_their_neighbourhood(client: TestClient, served: dict[str, Path]) -> None:
    root = served["offline"]
    found = client.get("/p/offline/api/entities?q=holm", headers=AUTH).json()
    assert [e["title"] for e in found["items"]] == ["HOLM", "SØREN HOLM"] and found[
        "total"
    ] == 2  # names starting with it first
    hrid, title, degree = query_db(
        root, "select human_readable_id, title, degree from entities where title = 'SØREN HOLM'"
    )[0]
    (total,) = query_db(
        root, "select count(*) from relationships where source = 'SØREN HOLM' or target = 'SØREN HOLM'"
    )[0]
    first = client.get(f"/p/offline/api/entities/{hrid}?limit=3", headers=AUTH).json()
    assert first["title"] == title and first["degree"] == degree and first["relationships"]["total"] == total > 3
    assert len(first["relationships"]["items"]) == 3 and first["relationships"]["next_offset"] == 3
    seen = [r["id"] for r in first["relationships"]["items"]]
    offset = 3
    while offset is not None:
        page = client.get(f"/p/offline/api/entities/{hrid}?limit=3&offset={offset}", headers=AUTH).json()[
            "relationships"
        ]
        seen += [r["id"] for r in page["items"]]
        offset = page["next_offset"]
    assert len(seen) == len(set(seen)) == total
    weights = [r["weight"] for r in first["relationships"]["items"]]
    assert weights == sorted(weights, reverse=True)
    assert client.get("/p/offline/api/entities/søren holm", headers=AUTH).json()["id"] == first["id"]
    assert first["communities"] and first["sources"] and all(s["document"]["path"] for s in first["sources"])
    graph = client.get(f"/p/offline/api/entities/{hrid}/graph?limit=5", headers=AUTH).json()
    assert graph["entities"]["title"][graph["center"]] == title and len(graph["entities"]["title"]) == 6
    (community,) = graph["communities"]
    assert community["members"] == list(range(6)) and len(community["layout"]) == 12
    assert graph["relationships"] and all(a < 6 and b < 6 for a, b, _ in graph["relationships"])


def test_explore_relationships_sources_communities_reports(client: TestClient, served: dict[str, Path]) -> None:
    root = served["offline"]
    rid, source, target = query_db(
        root, "select human_readable_id, source, target from relationships order by weight desc limit 1"
    )[0]
    rel = client.get(f"/p/offline/api/relationships/{rid}", headers=AUTH).json()
    assert (rel["source"]["title"], rel["target"]["title"]) == (source, target) and rel["sources"]
    unit_id, text = query_db(root, "select id, text from text_units limit 1")[0]
    assert client.get(f"/p/offline/api/sources/{short_id(unit_id)}", headers=AUTH).json()["text"] == text
    assert client.get(f"/p/offline/api/sources/{unit_id}", headers=AUTH).json()["citation"] == short_id(unit_id)
    level0 = client.get("/p/offline/api/communities?level=0", headers=AUTH).json()
    expected = query_db(root, "select community from communities where level = 0 order by size desc, community")
    assert [c["community"] for c in level0["items"]] == [c for (c,) in expected]
    assert level0["levels"] == [
        lvl for (lvl,) in query_db(root, "select distinct level from communities order by level")
    ]
    number = level0["items"][0]["community"]
    report = client.get(f"/p/offline/api/reports/{number}", headers=AUTH).json()
    (title, content) = query_db(root, f"select title, full_content from community_reports where community = {number}")[
        0
    ]
    assert report["title"] == title == level0["items"][0]["title"] and report["full_content"] == content
    graph = client.get("/p/offline/api/graph", headers=AUTH).json()
    (count,) = query_db(root, "select count(*) from communities")[0]
    assert len(graph["communities"]) == count and graph["title"] == "offline: knowledge graph"


def test_status_names_projects_builds_and_limits(client: TestClient, served: dict[str, Path]) -> None:
    status = client.get("/api/status", headers=AUTH).json()
    assert status["project"] == status["default_project"] == "harbour" and status["auth"] is True
    by_name = {p["name"]: p for p in status["projects"]}
    assert (
        by_name["offline"]["state"] == "ready"
        and by_name["offline"]["llm"] is False
        and by_name["harbour"]["llm"] is True
    )
    (entities,) = query_db(served["offline"], "select count(*) from entities")[0]
    assert by_name["offline"]["counts"]["entities"] == entities
    assert status["limits"]["max_request_bytes"] == 1_000_000
    assert client.get("/p/offline/api/status", headers=AUTH).json()["project"] == "offline"


def test_docs_and_page_fetch_nothing_from_elsewhere(client: TestClient) -> None:
    spec = client.get("/openapi.json", headers=AUTH).json()
    assert {"/v1/chat/completions", "/api/query", "/api/entities/{ref}", "/api/status"} <= set(spec["paths"])
    assert spec["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"
    docs = client.get("/docs", headers=AUTH).text
    assert "/static-offline-docs/swagger-ui-bundle.js" in docs and not re.search(r"(src|href)=['\"]https?:", docs)
    assert client.get("/static-offline-docs/swagger-ui-bundle.js", headers=AUTH).status_code == 200
    page = client.get("/p/offline/", headers=AUTH)
    assert '<base href="/p/offline/">' in page.text and "default-src 'self'" in page.headers["content-security-policy"]
    assert not re.search(r"(src|href)=['\"](https?:)?//", page.text)
    view = client.get("/assets/graph-view/view.js", headers=AUTH).text
    from graphrag_assets.interop.graph_view.page import asset_text

    assert view == asset_text("view.js")  # the export's drawing code, served as it is
    for name in ("app.js", "app.css"):
        asset = client.get(f"/assets/{name}", headers=AUTH).text
        assert asset and not re.search(r"https?://", asset)
    assert client.get("/assets/../config.py", headers=AUTH).status_code == 404


# --- a project whose index appears later ---------------------------------------------------------


def test_a_project_without_an_index_is_served_once_it_has_one(nlp_index: Path, tmp_path: Path) -> None:
    root = make_project(tmp_path / "later", with_sample=False)
    (root / "graphrag.yaml").write_text(
        "method: nlp\nllm:\n  embeddings: local\nserve:\n  reload_interval_seconds: 0.1\n", encoding="utf-8"
    )
    config = build_config([root], None, "127.0.0.1", 0, None)
    with TestClient(create_app(config), base_url="http://127.0.0.1") as test_client:  # no key: Host is checked
        waiting = test_client.post("/api/query", json={"question": QUESTION, "method": "local"})
        assert waiting.status_code == 503 and "project 'later' has no index yet" in error_of(waiting)
        assert test_client.get("/api/status").json()["projects"][0]["state"] == "no_index"
        shutil.copytree(nlp_index / "data", root / "data", dirs_exist_ok=True)
        deadline = time.monotonic() + 20
        while test_client.get("/api/status").json()["projects"][0]["state"] != "ready":
            assert time.monotonic() < deadline, test_client.get("/api/status").json()
            time.sleep(0.1)
        assert test_client.post("/api/query", json={"question": QUESTION, "method": "local"}).json()["references"][
            "entities"
        ]
