"""Rerankers behind the /rerank APIs of Cohere, Jina, vLLM, Infinity and text-embeddings-inference,
each emulated by a scripted server process on loopback (stopped by PID)."""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from graphrag_assets.cli.main import main
from graphrag_assets.core.settings import RerankerSettings
from graphrag_assets.llm.reranker import SHAPES, Reranker, RerankError
from graphrag_assets_testkit.projects import query_db
from graphrag_assets_testkit.rerank_server import RerankServer, overlap

QUESTION = "Who is the keeper of the Kestrel Point Lighthouse?"
TEXTS = ["A recipe for bread.", "The keeper of the lighthouse at Kestrel Point.", "Kestrel Point at night."]


@pytest.fixture(scope="module", params=sorted(SHAPES))
def server(request: pytest.FixtureRequest) -> Iterator[RerankServer]:
    started = RerankServer(request.param)
    started.api = request.param  # type: ignore[attr-defined]
    try:
        yield started
    finally:
        started.stop()


def test_each_api_is_asked_and_read_in_its_own_shape(server: RerankServer) -> None:
    settings = RerankerSettings(api=server.api, base_url=server.url, model="bge-reranker", top_n=2, api_key="k")
    ranked = asyncio.run(Reranker(settings).rerank(QUESTION, TEXTS))
    assert [index for index, _ in ranked] == [1, 2]  # most words in common first, at most top_n
    (call,) = server.calls()[-1:]
    body = call["body"]
    assert call["authorization"] == "Bearer k"
    assert body["query"] == QUESTION and body["texts" if server.api == "tei" else "documents"] == TEXTS
    assert ("model" in body) == (server.api != "tei") and ("top_n" in body) == (server.api != "tei")


def test_a_wrong_api_or_a_failing_server_is_a_rerank_error() -> None:
    tei = RerankServer("tei")
    failing = RerankServer("cohere", fail=True)
    try:
        with pytest.raises(RerankError, match="answered HTTP 404"):  # Cohere's path on a TEI server
            asyncio.run(Reranker(RerankerSettings(api="cohere", base_url=tei.url)).rerank(QUESTION, TEXTS))
        with pytest.raises(RerankError, match="answered HTTP 500"):
            asyncio.run(Reranker(RerankerSettings(api="cohere", base_url=failing.url)).rerank(QUESTION, TEXTS))
        with pytest.raises(RerankError, match="not the 'infinity' API's"):
            Reranker(RerankerSettings(api="infinity", base_url=tei.url)).parse([{"index": 0, "score": 1.0}], 1)
    finally:
        tei.stop()
        failing.stop()
    with pytest.raises(RerankError, match="did not answer"):
        asyncio.run(Reranker(RerankerSettings(api="tei", base_url="http://127.0.0.1:9")).rerank(QUESTION, TEXTS))


def with_reranker(source: Path, target: Path, reranker: dict) -> Path:
    """A copy of the project at ``source`` whose settings add ``llm.reranker``."""
    shutil.copytree(source, target)
    path = target / "graphrag.yaml"
    settings = yaml.safe_load(path.read_text()) or {}
    settings.setdefault("llm", {})["reranker"] = reranker
    path.write_text(yaml.safe_dump(settings))
    return target


def basic(root: Path) -> dict:
    result = CliRunner().invoke(main, ["query", QUESTION, "--method", "basic", "--root", str(root), "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output[result.output.index("{") :])


def test_basic_search_answers_from_the_reranked_hits(nlp_index: Path, tmp_path: Path) -> None:
    server = RerankServer("jina")
    try:
        root = with_reranker(nlp_index, tmp_path / "p", {"api": "jina", "base_url": server.url, "top_n": 3})
        result = basic(root)
        sent = server.calls()[-1]["body"]["documents"]
    finally:
        server.stop()
    sources = result["context_records"]["sources"]
    assert result["usage"]["calls_by_purpose"]["rerank"] == 1 and len(sources) == 3
    expected = sorted(range(len(sent)), key=lambda i: -(overlap(QUESTION, sent[i]) + 1.0 / (i + 2)))[:3]
    texts = [query_db(root, f"select text from text_units where id = '{r['id']}'")[0][0] for r in sources]
    assert texts == [sent[i] for i in expected]  # the context follows the reranker's order

    down = with_reranker(nlp_index, tmp_path / "down", {"api": "jina", "base_url": "http://127.0.0.1:9"})
    degraded = basic(down)
    assert [w for w in degraded["warnings"] if "reranker" in w] == [
        "the reranker at http://127.0.0.1:9/v1/rerank did not answer ([Errno 111] Connection refused); the hits were not reranked."
    ]
    assert degraded["answer"] and degraded["context_records"]["sources"]


def test_doctor_probes_the_reranker(nlp_index: Path, tmp_path: Path) -> None:
    server = RerankServer("tei")
    try:
        root = with_reranker(nlp_index, tmp_path / "p", {"api": "tei", "base_url": server.url})
        result = CliRunner().invoke(main, ["doctor", "--root", str(root)])
    finally:
        server.stop()
    assert f"reranker    tei API at {server.url}/rerank" in result.output
    assert "answers            yes, in" in result.output


def test_local_search_answers_from_the_reranked_text_units(nlp_index: Path, tmp_path: Path) -> None:
    server = RerankServer("cohere")
    try:
        root = with_reranker(nlp_index, tmp_path / "p", {"api": "cohere", "base_url": server.url, "top_n": 4})
        result = CliRunner().invoke(main, ["query", QUESTION, "--method", "local", "--root", str(root), "--json"])
        assert result.exit_code == 0, result.output
        sent = server.calls()[-1]["body"]["documents"]
    finally:
        server.stop()
    answer = json.loads(result.output[result.output.index("{") :])
    sources = answer["context_records"]["sources"]
    assert answer["usage"]["calls_by_purpose"]["rerank"] == 1 and 0 < len(sources) <= 4
    expected = sorted(range(len(sent)), key=lambda i: -(overlap(QUESTION, sent[i]) + 1.0 / (i + 2)))[:4]
    texts = [query_db(root, f"select text from text_units where id = '{r['id']}'")[0][0] for r in sources]
    assert texts == [sent[i] for i in expected][: len(texts)]  # the reranker's order, as many as fit
