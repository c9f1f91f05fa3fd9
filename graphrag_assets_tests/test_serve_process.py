"""``graphrag-assets serve`` as a real process (uvicorn on a free loopback port), used through the
real ``openai`` package and plain HTTP: the chat-compatible routes, the key from the flag or the
environment, the refusals before listening, and a newer index swapped in without a restart while a
request is still being answered from the previous one.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import openai
import pytest

from graphrag_assets.core.errors import UserError
from graphrag_assets.serve.config import build_config
from graphrag_assets_testkit.projects import make_project, query_db
from graphrag_assets_tests.graph_fixtures import stop_process
from graphrag_assets_tests.serve_process import ServeProcess, serving_two_projects

KEY = "process-test-key-41c9"
QUESTION = "Who is Søren Holm and what happened during Storm Odile?"


@pytest.fixture(scope="module")
def server(standard_index: Path, nlp_index: Path, tmp_path_factory: pytest.TempPathFactory):
    with serving_two_projects(standard_index, nlp_index, tmp_path_factory.mktemp("served-process"), KEY) as process:
        yield process


def test_the_start_line_says_where_and_how(server: ServeProcess) -> None:
    assert (
        f"serving 2 project(s) (harbour, offline) at http://127.0.0.1:{server.port}/ (API key required; API docs at /docs)"
        in server.output()
    )


def test_the_openai_client_lists_models_and_gets_answers_with_references(server: ServeProcess) -> None:
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key=KEY, max_retries=0)
    ids = [m.id for m in client.models.list()]
    assert (
        ids[:4] == ["graphrag-local", "graphrag-global", "graphrag-drift", "graphrag-basic"]
        and "offline/graphrag-local" in ids
    )

    completion = client.chat.completions.create(
        model="graphrag-local", messages=[{"role": "user", "content": QUESTION}]
    )
    answer = completion.choices[0].message.content
    assert answer.startswith("Answer to: ") and "[Data:" in answer
    references = completion.model_extra["references"]
    assert any(r["cited"] for rows in references.values() for r in rows)
    assert completion.model_extra["graphrag"]["project"] == "harbour" and completion.usage.total_tokens > 0

    pieces, final = [], None
    for chunk in client.chat.completions.create(
        model="graphrag-basic", messages=[{"role": "user", "content": QUESTION}], stream=True
    ):
        if chunk.choices and chunk.choices[0].delta.content:
            pieces.append(chunk.choices[0].delta.content)
        if chunk.choices and chunk.choices[0].finish_reason == "stop":
            final = chunk
    assert len(pieces) > 3 and final is not None
    cited = [r for r in final.model_extra["references"]["sources"] if r["cited"]]
    assert cited and all(f"Sources ({r['citation']})" in "".join(pieces) for r in cited)


def test_a_project_by_base_url_or_model_name(server: ServeProcess) -> None:
    by_url = openai.OpenAI(base_url=f"{server.url}/p/offline/v1", api_key=KEY, max_retries=0)
    completion = by_url.chat.completions.create(
        model="graphrag-basic", messages=[{"role": "user", "content": QUESTION}]
    )
    assert (
        completion.model_extra["graphrag"]["project"] == "offline"
        and completion.model_extra["graphrag"]["llm_used"] is False
    )
    by_model = openai.OpenAI(base_url=f"{server.url}/v1", api_key=KEY, max_retries=0)
    completion = by_model.chat.completions.create(
        model="offline/graphrag-local", messages=[{"role": "user", "content": QUESTION}]
    )
    assert completion.model_extra["graphrag"]["project"] == "offline"
    assert completion.choices[0].message.content.startswith("(Extractive answer: no language model was used")


def test_the_openai_client_sees_our_errors(server: ServeProcess, graphrag_server) -> None:
    wrong = openai.OpenAI(base_url=f"{server.url}/v1", api_key="not-the-key", max_retries=0)
    with pytest.raises(openai.AuthenticationError, match="the API key is wrong"):
        wrong.models.list()
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key=KEY, max_retries=0)
    with pytest.raises(openai.NotFoundError, match="the model 'gpt-4o' does not exist"):
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": QUESTION}])
    graphrag_server.add_fault("status", status=400, message="model says no", endpoint="chat", times=1)
    try:
        stream = client.chat.completions.create(
            model="graphrag-basic", messages=[{"role": "user", "content": QUESTION}], stream=True
        )
        with pytest.raises(openai.APIError, match="model says no"):
            for _ in stream:
                pass
    finally:
        graphrag_server.reset()


def test_the_key_from_the_environment(nlp_index: Path) -> None:
    process = ServeProcess.start("--root", str(nlp_index), env={"GRAPHRAG_SERVE_API_KEY": "from-the-env"})
    try:
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"{process.url}/api/status", timeout=10)
        assert refused.value.code == 401
        request = urllib.request.Request(f"{process.url}/api/status", headers={"Authorization": "Bearer from-the-env"})
        with urllib.request.urlopen(request, timeout=10) as response:
            assert json.load(response)["auth"] is True
    finally:
        process.stop()


REFUSAL_TIMEOUT_SECONDS = 60  # a refusal takes a few seconds (the interpreter starting), more under load


def serve_refusals(*calls: tuple[str, ...]) -> list[tuple[int, str]]:
    """(exit code, output) of ``serve`` calls expected to refuse before listening.

    They run at once, each in a subprocess, within one deadline: a regression that lets one listen
    fails the test (and that server is stopped by its PID) instead of hanging the suite.
    """
    command = [sys.executable, "-m", "graphrag_assets.cli.main", "serve"]
    processes = [
        subprocess.Popen([*command, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT) for args in calls
    ]
    deadline = time.monotonic() + REFUSAL_TIMEOUT_SECONDS
    results = []
    try:
        for process, args in zip(processes, calls):
            try:
                out, _ = process.communicate(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                raise AssertionError(f"serve {' '.join(args)} did not refuse: it kept running") from None
            results.append((process.returncode, out.decode("utf-8", "replace")))
    finally:
        for process in processes:
            stop_process(process)
    return results


def test_refusals_before_listening(nlp_index: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GRAPHRAG_SERVE_API_KEY", raising=False)
    empty = tmp_path / "empty"
    empty.mkdir()
    a, b = make_project(tmp_path / "a", with_sample=False), make_project(tmp_path / "b", with_sample=False)
    (a / "graphrag.yaml").write_text("serve:\n  api_key: secret-of-a\n", encoding="utf-8")
    (b / "graphrag.yaml").write_text("serve:\n  api_key: secret-of-b\n", encoding="utf-8")
    twin = tmp_path / "twins" / "a"
    shutil.copytree(a, twin)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        any_v4, any_v6, in_use, no_project, two_keys, twins = serve_refusals(
            ("--root", str(nlp_index), "--host", "0.0.0.0"),
            ("--root", str(nlp_index), "--host", "::"),
            ("--root", str(nlp_index), "--port", str(port)),
            ("--projects", str(empty)),
            ("--projects", str(tmp_path), "--host", "0.0.0.0"),
            ("--root", str(a), "--root", str(twin)),
        )
    code, out = any_v4
    assert code == 1 and "refusing to listen on 0.0.0.0 without an API key" in out and "Traceback" not in out
    code, out = any_v6
    assert code == 1 and "refusing to listen on ::" in out
    code, out = in_use
    assert code == 1 and f"port {port} on 127.0.0.1 is in use by another program; pass another --port." in out
    code, out = no_project
    assert code == 1 and "holds no project" in out
    code, out = two_keys
    assert code == 1 and "the projects a, b set different serve.api_key values" in out and "secret-of" not in out
    code, out = twins
    assert code == 1 and "two projects are named 'a'" in out


def test_serve_api_key_in_the_settings_allows_any_address(tmp_path: Path) -> None:
    root = make_project(tmp_path / "keyed", with_sample=False)
    (root / "graphrag.yaml").write_text("serve:\n  api_key: ${MY_KEY}\n  max_question_chars: 100\n", encoding="utf-8")
    with pytest.raises(UserError):
        build_config([root], None, "0.0.0.0", 8000, None)  # ${MY_KEY} is not set
    (root / "graphrag.yaml").write_text(
        "serve:\n  api_key: from-the-file\n  max_question_chars: 100\n", encoding="utf-8"
    )
    config = build_config([root], None, "0.0.0.0", 8000, None)
    assert config.api_key == "from-the-file" and config.limits.max_question_chars == 100
    assert build_config([root], None, "0.0.0.0", 8000, "from-the-flag").api_key == "from-the-flag"
    folder = build_config([], tmp_path, "127.0.0.1", 8000, None)
    assert folder.names == ("keyed",) and folder.default_project == "keyed"


# --- a newer index, swapped in without a restart -------------------------------------------------


PUBLISH_BUILD_2 = """
import sys
import polars as pl
from graphrag_assets.storage.corpus import publish_corpus, vector_versions, write_staged
from graphrag_assets.storage.database import connect

db = sys.argv[1]
with connect(db, read_only=True) as conn:
    entities = conn.sql("select * from entities").pl()
    manifest = conn.sql("select * from corpus_manifest").pl()
write_staged(db, "entities", entities.with_columns(pl.col("title") + " (BUILD 2)"))
publish_corpus(db, manifest, {"run_id": "switch-2", "vector_versions": vector_versions(db)})
"""


def get_json(url: str) -> tuple[dict[str, Any], dict[str, str]]:
    with urllib.request.urlopen(url, timeout=20) as response:
        return json.load(response), {k.lower(): v for k, v in response.headers.items()}


def read_events(response) -> Any:
    """(event, data) pairs of a server-sent event stream, as they arrive."""
    name, data = "message", []
    for raw in response:
        line = raw.decode("utf-8").rstrip("\n")
        if line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())
        elif not line and data:
            yield name, json.loads("\n".join(data))
            name, data = "message", []


@pytest.mark.parametrize("relationships", ["in memory", "on disk"])
def test_a_newer_build_is_swapped_in_while_a_request_finishes_on_the_old_one(
    standard_index: Path, graphrag_server, tmp_path: Path, relationships: str
) -> None:
    root = tmp_path / "switch"
    shutil.copytree(standard_index, root, ignore=shutil.ignore_patterns("*.lock"))
    limit = 0 if relationships == "on disk" else 100_000  # on disk: as a build of more relationships is served
    with open(root / "graphrag.yaml", "a", encoding="utf-8") as settings:
        settings.write(f"serve:\n  reload_interval_seconds: 0.2\n  in_memory_relationships_max: {limit}\n")
    left_over = root / "data" / ".serve-snapshots" / "999999999-killed"  # a killed server's files
    left_over.mkdir(parents=True)
    (hrid, old_run) = query_db(
        root, "select e.human_readable_id, b.run_id from entities e, corpus_build b where e.title = 'SØREN HOLM'"
    )[0]
    process = ServeProcess.start("--root", str(root))
    url = process.url
    assert not left_over.exists()
    on_disk = list((root / "data" / ".serve-snapshots").glob("*"))
    assert len(on_disk) == (relationships == "on disk")
    graphrag_server.reset()
    graphrag_server.add_fault("delay", seconds=8, endpoint="chat", times=1)  # the in-flight answer
    seen: list[tuple[str, str]] = []
    stop = threading.Event()

    def hammer() -> None:  # every response must come whole from one build
        while not stop.is_set():
            try:
                body, headers = get_json(f"{url}/api/entities/{hrid}")
                seen.append((headers["x-graphrag-build"], body["title"]))
            except Exception as exc:  # noqa: BLE001 - any failure is a finding
                seen.append(("failed", repr(exc)))

    try:
        request = urllib.request.Request(
            f"{url}/api/query",
            data=json.dumps({"question": QUESTION, "method": "local", "stream": True}).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            stream = read_events(response)
            name, start = next(stream)
            assert name == "start" and start["build"]["run_id"] == old_run
            watcher = threading.Thread(target=hammer)
            watcher.start()
            subprocess.run(
                [sys.executable, "-c", PUBLISH_BUILD_2, str(root / "data" / "graphrag.duckdb")], check=True, timeout=60
            )
            deadline = time.monotonic() + 30
            while get_json(f"{url}/api/status")[0]["projects"][0]["build"]["run_id"] != "switch-2":
                assert time.monotonic() < deadline, "the new build was not picked up"
                time.sleep(0.1)
            time.sleep(0.3)
            stop.set()
            watcher.join()
            assert get_json(f"{url}/api/entities/{hrid}")[0]["title"] == "SØREN HOLM (BUILD 2)"
            rest = list(stream)  # the answer that was in flight all along
        name, result = rest[-1]
        assert name == "result" and result["build"]["run_id"] == old_run
        titles = [r["title"] for r in result["references"]["entities"]]
        assert titles and not any(t.endswith("(BUILD 2)") for t in titles)
        fresh = urllib.request.Request(
            f"{url}/api/query",
            data=json.dumps({"question": QUESTION, "method": "local", "context_only": True}).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(fresh, timeout=60) as response:
            after = json.load(response)
        assert after["build"]["run_id"] == "switch-2"
        titles = [r["title"] for r in after["references"]["entities"]]
        assert titles and all(t.endswith(" (BUILD 2)") for t in titles)
    finally:
        stop.set()
        process.stop()
        graphrag_server.reset()
    assert not (root / "data" / ".serve-snapshots").exists()  # no file, nor the folder, left behind
    assert {build for build, _ in seen} == {old_run, "switch-2"}
    assert all((build == "switch-2") == (title == "SØREN HOLM (BUILD 2)") for build, title in seen), set(seen)
    assert all(title in ("SØREN HOLM", "SØREN HOLM (BUILD 2)") for _, title in seen)
