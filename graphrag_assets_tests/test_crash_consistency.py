"""An interrupted corpus run never leaves a wrong index, and the next `index` finishes it.

A real `graphrag-assets index` process runs the corpus step against a slow scripted model
server and is interrupted — SIGINT (Ctrl-C) or SIGKILL (an OOM kill, a power cut) — once the
server has seen the first call of a chosen stage (description summaries, reports, the corpus
embeddings). Then `status` must say the update did not finish, queries must still see the
previous build whole, and the next `index` must finish the work with tables equal to a clean
run, asking the model only for what the interrupted run had not got answered.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from graphrag_assets.core.settings import load_settings
from graphrag_assets.llm.cache import EMBEDDING_TABLE
from graphrag_assets.project.status import project_status
from graphrag_assets_testkit.builds import env_without_endpoint, run_index
from graphrag_assets_testkit.projects import query_db
from graphrag_assets_testkit.scripted_openai import ScriptedOpenAIServer
from graphrag_assets_tests.conftest import RESPONDER, llm_settings_yaml
from graphrag_assets_tests.test_rebuild_equivalence import tables
from graphrag_assets_tests.test_staged_writes import STAGED_TABLES_LEFT

LATENCY_MS = 120
CONCURRENCY = 4
LOST_IN_ONE_WRITE = 3 * CONCURRENCY
SUMMARY_MARKER = "Several descriptions of the same thing were written separately"
REPORT_MARKER = "You are writing a briefing about one community of a knowledge graph"
STAGE_SEEN_TIMEOUT = 60


def _text(call: dict) -> str:
    body = call["body"]
    if call["endpoint"] == "chat":
        return " ".join(str(m.get("content", "")) for m in body.get("messages", []))
    return str(body.get("input", ""))


def _stage(call: dict) -> str:
    if call["endpoint"] == "embeddings":
        return "embeddings"
    text = _text(call)
    return "summaries" if SUMMARY_MARKER in text else "reports" if REPORT_MARKER in text else "other"


def _copy_without_corpus_answers(standard_index: Path, root: Path, base_url: str) -> Path:
    """A copy of the standard index whose corpus-step answers are no longer cached.

    Only the corpus step has work to do (`index --full`): summaries, reports and the corpus
    embeddings are asked again; the documents are untouched.
    """
    shutil.copytree(standard_index, root)
    (root / "graphrag.yaml").write_text(
        llm_settings_yaml(base_url, f"  concurrency: {CONCURRENCY}\n"), encoding="utf-8"
    )
    with duckdb.connect(str(root / "data" / "graphrag.duckdb")) as conn:
        conn.execute("delete from llm_cache where purpose in ('summarize_descriptions', 'community_report')")
        conn.execute(f"delete from {EMBEDDING_TABLE}")
    return root


@pytest.fixture(scope="module")
def uninterrupted_calls(standard_index: Path, tmp_path_factory: pytest.TempPathFactory) -> int:
    """Calls an uninterrupted `index --full` makes from the same starting point."""
    server = ScriptedOpenAIServer.start(responder=RESPONDER, latency_ms=LATENCY_MS)
    try:
        root = _copy_without_corpus_answers(
            standard_index, tmp_path_factory.mktemp("clean") / "project", server.base_url
        )
        done = run_index(root, "--full")
        assert done.returncode == 0, done.stderr
        return len(server.calls())
    finally:
        server.stop()


@pytest.fixture(params=["never", "always"], ids=["in-process", "step-processes"])
def slow_project(standard_index: Path, openai_server_factory, tmp_path: Path, request: pytest.FixtureRequest):
    """The project, its corpus steps in the ``index`` process or each in its own (``index.corpus_processes``)."""
    server = openai_server_factory(responder=RESPONDER, latency_ms=LATENCY_MS)
    root = _copy_without_corpus_answers(standard_index, tmp_path / "project", server.base_url)
    with (root / "graphrag.yaml").open("a", encoding="utf-8") as settings:
        settings.write(f"index:\n  corpus_processes: {request.param}\n")
    return root, server


def _interrupt_at(root: Path, server, stage: str, sig: signal.Signals) -> None:
    """Run `index --full`; send ``sig`` once the server answered the first calls of ``stage``.

    Waiting for answers (not just the first request) makes sure the interrupted run had paid for
    something that the next run must not pay for again.
    """
    wanted = 1 if stage == "embeddings" else 2 * CONCURRENCY
    process = subprocess.Popen(
        [sys.executable, "-m", "graphrag_assets.cli.main", "index", "--root", str(root), "--full"],
        env=env_without_endpoint(),
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + STAGE_SEEN_TIMEOUT
    try:
        while sum(1 for c in server.calls() if _stage(c) == stage and c["outcome"] == "answered") < wanted:
            assert process.poll() is None, f"index ended (exit {process.returncode}) before the {stage} stage"
            assert time.monotonic() < deadline, f"the {stage} stage did not start within {STAGE_SEEN_TIMEOUT} s"
            time.sleep(0.02)
        tree = _descendants(process.pid)  # the corpus steps' own processes among them, when they run apart
        os.killpg(process.pid, sig)
        process.wait(timeout=60)
        _wait_until_ended(tree)  # a step process in its own group ends once it sees index gone
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(stat.parent.name))
    found, todo = [], list(children.get(pid, []))
    while todo:
        found.append(todo.pop())
        todo.extend(children.get(found[-1], []))
    return found


def _wait_until_ended(pids: list[int], timeout: float = 10.0) -> None:
    def alive(pid: int) -> bool:  # a zombie leader's other threads may still be closing its files
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            return False
        return "State:\tZ" not in status or "Threads:\t1\n" not in status

    deadline = time.monotonic() + timeout
    while any(alive(pid) for pid in pids):
        assert time.monotonic() < deadline, (
            f"processes of the interrupted index still run: {[p for p in pids if alive(p)]}"
        )
        time.sleep(0.02)


def _published(root: Path) -> dict[str, pl.DataFrame]:
    return tables(root)


@pytest.mark.parametrize(
    ("stage", "sig"),
    [("summaries", signal.SIGINT), ("reports", signal.SIGKILL), ("embeddings", signal.SIGKILL)],
    ids=["sigint-during-summaries", "sigkill-during-reports", "sigkill-during-corpus-embeddings"],
)
def test_an_interrupted_corpus_run_is_reported_and_finished_by_the_next_index(
    slow_project, standard_index: Path, uninterrupted_calls: int, stage: str, sig: signal.Signals
) -> None:
    root, server = slow_project
    before = _published(root)
    _interrupt_at(root, server, stage, sig)
    answered_before_kill = sum(1 for c in server.calls() if c["outcome"] == "answered")

    # The previous build is still published whole, and status says the update did not finish.
    after_kill = _published(root)
    for table, frame in before.items():
        assert_frame_equal(after_kill[table], frame, check_row_order=False), table
    status = project_status(load_settings(root))
    assert status["corpus"]["unfinished"] and status["corpus"]["stale"] and not status["corpus"]["update_running"]
    killed = sig == signal.SIGKILL  # Ctrl-C stops the Dagster run, and `index` itself ends normally
    assert (status["interrupted_update"] is not None) == killed
    shown = subprocess.run(
        [sys.executable, "-m", "graphrag_assets.cli.main", "status", "--root", str(root)],
        capture_output=True,
        text=True,
        env=env_without_endpoint(),
    ).stdout
    assert "the last update stopped before it was published" in shown
    assert ("was stopped before it finished" in shown) == killed

    # The next plain `index` finishes the work: only what was not answered is asked again.
    server.reset()
    finish = run_index(root)
    assert finish.returncode == 0, finish.stderr
    assert "updating the corpus-wide graph" in finish.stderr
    # A killed process leaves its Dagster run STARTED; it is marked failed instead of blocking.
    assert ("was stopped before it finished; finishing it" in finish.stderr) == killed
    assert ("whose process is gone" in finish.stderr) == killed
    calls_after = len(server.calls())

    server.reset()
    full = run_index(root, "--full")
    assert full.returncode == 0
    assert len(server.calls()) == 0  # everything the finished index needs is cached now

    expected = _published(standard_index)
    finished = _published(root)
    for table, frame in expected.items():
        assert_frame_equal(finished[table], frame, check_row_order=False), table
    status = project_status(load_settings(root))
    assert not status["corpus"]["unfinished"] and not status["corpus"]["stale"] and status["interrupted_update"] is None
    assert query_db(root, STAGED_TABLES_LEFT) == [(0,)]

    # Every answer the interrupted run received was kept, except those that arrived while the
    # cache writer was writing (SIGKILL loses them): with 4 calls in flight at 120 ms that is about
    # 33 answers a second, so a write of up to ~0.35 s on a loaded machine loses up to 12.
    assert answered_before_kill > 0
    assert calls_after + answered_before_kill <= uninterrupted_calls + LOST_IN_ONE_WRITE, (
        answered_before_kill,
        calls_after,
    )


def test_an_extraction_answer_cut_off_at_the_token_limit_is_retried_by_the_next_index(
    openai_server_factory, tmp_path: Path
) -> None:
    """A cut-off answer (finish_reason length) is not cached; its document is extracted again next time."""
    server = openai_server_factory(responder=RESPONDER)
    root = tmp_path / "project"
    (root / "data").mkdir(parents=True)
    (root / "data" / "input").mkdir(parents=True)
    (root / "graphrag.yaml").write_text(llm_settings_yaml(server.base_url), encoding="utf-8")
    (root / "data" / "input" / "quill.txt").write_text(
        "Agatha Quillfeather ran the Brimstone Foundry in Harrowgate. Agatha Quillfeather hired Tobias Venn.\n",
        encoding="utf-8",
    )
    (root / "data" / "input" / "other.txt").write_text(
        "Marta Quell sailed to Port Auberon with Lucien Marchetti.\n", encoding="utf-8"
    )
    server.add_fault("truncate", endpoint="chat", match="Quillfeather", keep_chars=60)

    first = run_index(root)
    assert first.returncode == 0, first.stderr
    assert "were cut short (token limit" in first.stdout
    assert dict(query_db(root, "select document_key, status from extraction_status")) == {
        "other.txt": "ok",
        "quill.txt": "incomplete",
    }
    report = project_status(load_settings(root))
    assert report["documents"]["changed"] == ["quill.txt"]

    server.reset()
    second = run_index(root)
    assert second.returncode == 0, second.stderr
    extraction_calls = [c for c in server.calls("chat") if "Marta Quell" in _text(c) or "Quillfeather" in _text(c)]
    assert extraction_calls and all("Marta Quell" not in _text(c) for c in extraction_calls)
    assert dict(query_db(root, "select document_key, status from extraction_status")) == {
        "other.txt": "ok",
        "quill.txt": "ok",
    }
    assert ("TOBIAS VENN",) in query_db(root, "select upper(title) from entities")
