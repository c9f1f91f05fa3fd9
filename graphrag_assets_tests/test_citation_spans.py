"""Citations down to the character: every cited passage is re-read from the original file.

A small corpus in every input format (txt with a byte-order mark and CRLF line ends, md with
headings and a decomposed accent, csv with a multi-line quoted value, a json array, jsonl with a
blank line) is indexed offline with small chunks, so most passages start deep inside their file.
Questions are answered extractively (basic and local search) and by a model (lazy search through
the scripted OpenAI-compatible server); for every citation the span ``start:end`` of the document
re-read from disk — through the format's own parser for structured files — must equal the cited
text.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any
from unicodedata import normalize

import pytest

from graphrag_assets.core.settings import load_settings
from graphrag_assets.pipeline.indexing import index_project
from graphrag_assets.project.querying import answer_question
from graphrag_assets.query.request import QueryOptions
from graphrag_assets.query.results import Citation
from graphrag_assets_testkit.projects import make_project

TXT = (
    "\ufeffThe keeper of the Greyness lighthouse is Marta Quell. Café owners on the quay say she never sleeps.\r\n"
    "\r\n"
    "In March the lamp of the lighthouse failed during a gale. Marta Quell repaired the lamp with a spare lens "
    "from the schooner Tern — within one night.\r\n"
    "\r\n"
    "The harbour master, Ivo Brandt, praised the repair in a letter to the council. 日本 sailors also noticed.\r\n"
)
MD = (
    "# Harbour guide\n\n"
    "## Boats\n\n"
    "The schooner Tern carries timber from Vellmouth to the islands. Its captain is Rosa Kell.\n\n"
    "## Food\n\n"
    "The cafe\u0301 on the quay serves smoked herring. Rosa Kell eats there after every crossing.\n\n"
    "- The ferry leaves at seven.\n"
    "- The ferry returns at noon.\n"
)
CSV_ROWS = [
    (
        "t1",
        "Spring tides",
        "  The spring tide flooded the lower quay in April.\nSandbags were laid by the fishermen.  ",
    ),
    ("t2", "Neap tides", "Neap tides left the schooner Tern aground for two days. Rosa Kell waited for the flood."),
]
JSON_RECORDS = [
    {"title": "Council minutes", "text": "The council thanked Marta Quell for repairing the lighthouse lamp."},
    {"title": "Budget", "text": "The council set aside money for a new lighthouse lens. Ivo Brandt will order it."},
]
JSONL_RECORDS = [
    {"title": "Interview one", "text": "Ivo Brandt said the harbour had never been so busy. Ships waited at anchor."},
    {"title": "Interview two", "text": "Rosa Kell said the Tern would sail to the islands again in May."},
]
QUESTIONS = (
    "Who repaired the lamp of the lighthouse?",
    "Who is the captain of the schooner Tern?",
    "What did the spring tide flood?",
    "What will Ivo Brandt order?",
)
ASKED = "Who repaired the lamp of the lighthouse?"
# The scripted model finds a passage relevant when it shares two words of five letters with the question.
MODEL_QUESTIONS = (
    "What did the council say about Marta Quell?",
    "Where does the schooner carry timber?",
    "What did the spring tide flood?",
)


def write_corpus(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "keeper.txt").write_bytes(TXT.encode("utf-8"))
    (folder / "guide.md").write_text(MD, encoding="utf-8")
    with (folder / "tides.csv").open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["id", "title", "text"])
        writer.writerows(CSV_ROWS)
    (folder / "council.json").write_text(json.dumps(JSON_RECORDS, ensure_ascii=False, indent=1), encoding="utf-8")
    lines = [json.dumps(record, ensure_ascii=False) for record in JSONL_RECORDS]
    (folder / "interviews.jsonl").write_text(lines[0] + "\n\n" + lines[1] + "\n", encoding="utf-8")


@pytest.fixture(scope="module")
def corpus_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = make_project(tmp_path_factory.mktemp("citations") / "project", with_sample=False)
    write_corpus(root / "data" / "input")
    (root / "graphrag.yaml").write_text(
        "method: nlp\nllm:\n  embeddings: local\nchunking:\n  size: 24\n  overlap: 6\n", encoding="utf-8"
    )
    report = index_project(load_settings(root, environ={}))
    assert report.success, report.as_dict()
    return root


def original_text(input_dir: Path, citation: Citation) -> str:
    """The document's text as the citation's offsets count it, re-read from the file."""
    path = input_dir / (citation.path or "")
    suffix = path.suffix
    if suffix in (".txt", ".md"):
        assert citation.record is None
        return path.read_text(encoding="utf-8-sig")  # text mode: CRLF reads as one "\n"
    if suffix == ".csv":
        with path.open(encoding="utf-8", newline="") as handle:
            records: list[dict[str, Any]] = list(csv.DictReader(handle))
    elif suffix == ".json":
        records = json.loads(path.read_text(encoding="utf-8"))
    else:
        records = [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n") if line.strip()]
    assert citation.record is not None
    record = records[citation.record]
    assert (record.get("title") or "") == citation.title
    return record["text"].strip()


def checked_citations(root: Path, results: list[Any]) -> list[Citation]:
    """Every citation of the results, each asserted to equal its span of the original file."""
    checked = []
    for result in results:
        for citation in result.citations:
            assert citation.start is not None and citation.end is not None, citation
            text = original_text(root / "data" / "input", citation)
            assert text[citation.start : citation.end] == citation.text, citation
            checked.append(citation)
    return checked


def test_every_extractive_citation_is_its_sentence_in_the_original_file(corpus_index: Path) -> None:
    settings = load_settings(corpus_index, environ={})
    results = [
        answer_question(settings, question, QueryOptions(method))
        for question in QUESTIONS
        for method in ("basic", "local")
    ]
    assert not any(r.llm_used for r in results)
    checked = checked_citations(corpus_index, results)
    # every format is cited, each answer line by the sentence it shows, and passages start deep in files
    assert {Path(c.path or "").suffix for c in checked} == {".txt", ".md", ".csv", ".json", ".jsonl"}
    assert all(c.scope == "sentence" and c.claim in " ".join(normalize("NFC", c.text).split()) for c in checked)
    assert any(c.start > 100 for c in checked if c.path == "keeper.txt")
    for result in results:
        lines = [line for line in result.answer.split("\n\n")[1:] if "[Data: Sources" in line]
        assert len({c.claim for c in result.citations}) == len(lines)


def test_a_model_answer_cites_its_passages_in_the_original_file(corpus_index: Path, graphrag_server) -> None:
    environ = {"OPENAI_API_KEY": "sk-test-not-secret", "OPENAI_BASE_URL": graphrag_server.base_url}
    settings = load_settings(corpus_index, environ=environ)
    results = [answer_question(settings, question, QueryOptions("lazy")) for question in MODEL_QUESTIONS]
    assert all(r.llm_used for r in results)
    checked = checked_citations(corpus_index, results)
    assert checked and all(c.scope in ("sentence", "text_unit") for c in checked)


def test_query_json_prints_the_citations(corpus_index: Path, offline_env) -> None:
    from click.testing import CliRunner

    from graphrag_assets.cli.main import main

    printed = CliRunner().invoke(main, ["query", ASKED, "--method", "basic", "--root", str(corpus_index), "--json"])
    assert printed.exit_code == 0, printed.output
    citations = json.loads(printed.output)["citations"]
    assert citations and {"document_id", "title", "start", "end", "text"} <= set(citations[0])
    for c in citations:
        assert original_text(corpus_index / "data" / "input", Citation(**c))[c["start"] : c["end"]] == c["text"]
    shown = CliRunner().invoke(main, ["query", ASKED, "--method", "basic", "--root", str(corpus_index)]).output
    assert "cited passages (character offsets in the original document):" in shown
    assert all(f"{c['path']}, chars {c['start']}-{c['end']}: " in shown for c in citations if c["record"] is None)


# --- the server: native API, OpenAI-compatible API (whole and streamed), the page ----------------

KEY = "citation-test-key-5e1"
AUTH = {"Authorization": f"Bearer {KEY}"}


@pytest.fixture(scope="module")
def client(corpus_index: Path):
    from starlette.testclient import TestClient

    from graphrag_assets.serve.app import create_app
    from graphrag_assets.serve.config import build_config

    config = build_config([corpus_index], None, "127.0.0.1", 0, KEY)
    with TestClient(create_app(config), raise_server_exceptions=False) as test_client:
        yield test_client


def stream_events(text: str) -> list[Any]:
    blocks = [b for b in text.strip().split("\n\n") if b.strip()]
    datas = ["\n".join(line[5:].strip() for line in b.splitlines() if line.startswith("data:")) for b in blocks]
    return [json.loads(d) for d in datas if d and d != "[DONE]"]


def test_the_apis_give_each_citation_with_its_offsets_and_the_passage_it_lies_in(client, corpus_index: Path) -> None:
    body = client.post("/api/query", json={"question": ASKED, "method": "basic"}, headers=AUTH).json()
    citations = body["citations"]
    assert citations and all(c["scope"] == "sentence" for c in citations)
    for c in citations:
        cited = Citation(**{k: v for k, v in c.items() if k != "href"})
        assert original_text(corpus_index / "data" / "input", cited)[c["start"] : c["end"]] == c["text"]
        source = client.get(c["href"], headers=AUTH).json()  # the passage, and where it starts in the document
        assert source["text"][c["start"] - source["start_char"] : c["end"] - source["start_char"]] == c["text"]
    chat = {"model": "project/graphrag-basic", "messages": [{"role": "user", "content": ASKED}]}
    whole = client.post("/v1/chat/completions", json=chat, headers=AUTH).json()
    assert whole["citations"] == citations
    streamed = client.post("/v1/chat/completions", json={**chat, "stream": True}, headers=AUTH)
    final = [e for e in stream_events(streamed.text) if e["choices"] and e["choices"][0]["finish_reason"] == "stop"]
    assert final[0]["citations"] == citations


def test_the_page_lists_the_cited_passages_and_marks_the_cited_characters(corpus_index: Path, chromium) -> None:
    from graphrag_assets_tests.serve_process import ServeProcess

    server = ServeProcess.start("--root", str(corpus_index), "--api-key", KEY)
    try:
        with chromium.connect() as browser:
            page = browser.contexts[0].new_page()
            errors: list[str] = []
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.goto(server.url + "/")
            page.fill("#key", KEY)
            page.click("button[type=submit]")
            page.wait_for_selector("#ask-form")
            page.fill("#question", ASKED)
            page.select_option("#method", "basic")
            page.click("#ask")
            page.wait_for_selector("#answer[data-done]", timeout=60_000)
            passages = page.locator("#references .passages button")
            assert passages.count() >= 2
            for index in range(passages.count()):
                passage = passages.nth(index)
                quote = passage.locator(".quote").text_content()
                passage.click()
                page.wait_for_function(
                    "q => (document.querySelector('#detail-text mark.cited-span') || {}).textContent === q", arg=quote
                )
                shown = page.text_content("#detail-text")  # the whole passage, the cited characters marked in it
                start = int(passage.get_attribute("data-start"))
                offset = int(
                    page.evaluate(
                        "() => Number(/chars (\\d+)/.exec(document.getElementById('detail-meta').textContent)[1])"
                    )
                )
                assert shown[start - offset : start - offset + len(quote)] == quote
            assert not errors
            page.close()
    finally:
        server.stop()


def test_the_mcp_search_tool_gives_the_citations_with_their_offsets(corpus_index: Path) -> None:
    import anyio
    from mcp.client.session import ClientSession
    from mcp.shared.memory import create_client_server_memory_streams

    from graphrag_assets.serve.config import build_config
    from graphrag_assets.serve.mcp_server import mcp_server, served_projects

    async def search() -> dict[str, Any]:
        config = build_config([corpus_index], None, "127.0.0.1", 0, None)
        projects = served_projects(config)
        server = mcp_server(projects, config.limits)
        await projects.start()
        try:
            async with create_client_server_memory_streams() as (client_streams, server_streams):
                async with anyio.create_task_group() as tasks:
                    tasks.start_soon(server.run, *server_streams, server.create_initialization_options())
                    async with ClientSession(*client_streams) as session:
                        await session.initialize()
                        result = await session.call_tool("search", {"question": ASKED, "method": "basic"})
                    tasks.cancel_scope.cancel()
        finally:
            await projects.stop()
        return result.structured_content or {}

    citations = anyio.run(search)["citations"]
    assert citations
    for c in citations:
        assert original_text(corpus_index / "data" / "input", Citation(**c))[c["start"] : c["end"]] == c["text"]
