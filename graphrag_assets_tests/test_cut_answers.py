"""Answers cut short and answers already received survive the next run and a kill.

A server (or a proxy in front of it) can end an extraction answer in the middle of a record and
still report ``finish_reason: stop``; such an answer is used, reported and re-asked by the next
`index`, never cached as complete. And an answer the model already gave is on disk before the
run goes on with it, so a `kill -9` loses only the calls still in flight.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from graphrag_assets.core.settings import load_settings
from graphrag_assets.index.extraction_parser import ends_mid_record
from graphrag_assets.llm.cache import LLMCache
from graphrag_assets.project.status import project_status
from graphrag_assets.storage.table_names import CHAT_CACHE
from graphrag_assets_testkit.builds import env_without_endpoint, run_index
from graphrag_assets_testkit.projects import query_db
from graphrag_assets_tests.conftest import RESPONDER, llm_settings_yaml

FULL = '("entity"<|>A<|>PERSON<|>x)##\n("entity"<|>B<|>PERSON<|>y)\n<|COMPLETE|>'


@pytest.mark.parametrize(
    ("answer", "cut"),
    [
        (FULL, False),
        (FULL[:40], True),  # inside the second record
        ('("entity"<|>A<|>PERSON<|>x)##\n', True),  # a record announced, never written
        ('1. ("entity"<|>A<|>PERSON<|>x)\n2. ("entity"<|>B<|>PER', True),
        ('("entity"<|>A<|>PERSON<|>x)', False),  # a closed record without the marker: cannot tell
        ('("entity"<|>A<|>PERSON<|>x)\nThat is all.', False),
        ("entity<|>A<|>PERSON<|>x\nentity<|>B<|>PERSON<|>y", False),  # a model that never closes records
        ("<|complete|>", False),
        ("", False),
    ],
)
def test_an_answer_is_cut_when_it_stops_inside_a_record(answer: str, cut: bool) -> None:
    assert ends_mid_record(answer) is cut


def test_a_commit_puts_the_answers_queued_so_far_on_disk_at_once(tmp_path: Path) -> None:
    db = tmp_path / "db.duckdb"
    cache = LLMCache(db)

    async def answer_and_commit() -> None:
        for i in range(3):
            cache.put_chat(f"k{i}", model="m", purpose="p", text=f"t{i}", prompt_tokens=1, completion_tokens=1)
        await cache.commit()

    try:
        asyncio.run(answer_and_commit())
        assert cache.stats.rows_written == 3  # written before the delayed write would have started
        with duckdb.connect(str(db)) as conn:  # another connection sees them: they are committed
            assert conn.execute(f"select count(*) from {CHAT_CACHE}").fetchone() == (3,)
    finally:
        cache.close()


def _project(root: Path, base_url: str, documents: dict[str, str], extra: str = "") -> Path:
    (root / "data" / "input").mkdir(parents=True)
    (root / "graphrag.yaml").write_text(llm_settings_yaml(base_url, extra), encoding="utf-8")
    for name, text in documents.items():
        (root / "data" / "input" / name).write_text(text, encoding="utf-8")
    return root


def _text(call: dict) -> str:
    return " ".join(str(m.get("content", "")) for m in call["body"].get("messages", []))


@pytest.mark.slow
def test_an_answer_cut_mid_record_with_finish_reason_stop_is_asked_again_by_the_next_index(
    openai_server_factory, tmp_path: Path
) -> None:
    server = openai_server_factory(responder=RESPONDER)
    root = _project(
        tmp_path / "project",
        server.base_url,
        {
            "quill.txt": "Agatha Quillfeather ran the Brimstone Foundry in Harrowgate. "
            "Agatha Quillfeather hired Tobias Venn.\n",
            "other.txt": "Marta Quell sailed to Port Auberon with Lucien Marchetti.\n",
        },
    )
    server.add_fault("truncate", endpoint="chat", match="Quillfeather", keep_chars=60, finish_reason="stop")

    first = run_index(root)
    assert first.returncode == 0, first.stderr
    assert dict(query_db(root, "select document_key, status from extraction_status")) == {
        "other.txt": "ok",
        "quill.txt": "incomplete",
    }
    assert project_status(load_settings(root))["documents"]["changed"] == ["quill.txt"]

    server.reset()
    second = run_index(root)
    assert second.returncode == 0, second.stderr
    asked = [c for c in server.calls("chat") if "Quillfeather" in _text(c)]
    assert asked, "the cut answer was served from the cache"
    assert dict(query_db(root, "select document_key, status from extraction_status"))["quill.txt"] == "ok"
    assert ("TOBIAS VENN",) in query_db(root, "select upper(title) from entities")


LATENCY_MS = 150
DOCUMENTS = {
    f"town{i}.txt": f"Mayor Elspeth Varn{i} of Gildenmoor met Captain Orrin Hale{i} at the Saltmarsh Docks. "
    f"Orrin Hale{i} brought Mayor Elspeth Varn{i} a letter from Duchess Mirela Stroud{i}.\n"
    for i in range(8)
}


def _gleanings(calls: list[dict]) -> list[str]:
    """The first answers quoted back by the gleaning requests the server has received."""
    return [
        m["content"]
        for c in calls
        for m in c["body"].get("messages", [])
        if c["endpoint"] == "chat" and m.get("role") == "assistant"
    ]


@pytest.mark.slow
def test_answers_received_before_a_kill_are_in_the_cache(openai_server_factory, tmp_path: Path) -> None:
    """`kill -9` right after answers arrived: every answer the run had gone on with is cached.

    A gleaning request quotes the unit's first answer, so once the server sees it the run had
    that answer in hand; the process is killed at once, before a delayed write would have run.
    """
    server = openai_server_factory(responder=RESPONDER, latency_ms=LATENCY_MS)
    root = _project(tmp_path / "project", server.base_url, DOCUMENTS, "  concurrency: 4\n")
    process = subprocess.Popen(
        [sys.executable, "-m", "graphrag_assets.cli.main", "index", "--root", str(root)],
        env=env_without_endpoint(),
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    try:
        while len(_gleanings(server.calls("chat"))) < 3:
            assert process.poll() is None, f"index ended (exit {process.returncode}) before the gleanings"
            assert time.monotonic() < deadline, "no gleaning request within 120 s"
            time.sleep(0.005)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    received = set(_gleanings(server.calls("chat")))
    cached: set[str] = set()
    if (root / "data" / "graphrag.duckdb").exists():
        tables = {row[0] for row in query_db(root, "select table_name from information_schema.tables")}
        if CHAT_CACHE in tables:
            cached = {json.loads(row[0])["text"] for row in query_db(root, f"select response from {CHAT_CACHE}")}
    assert received and received <= cached, f"{len(received - cached)} of {len(received)} answers lost"
