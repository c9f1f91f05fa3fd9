"""What Ctrl-C and kill -9 leave on screen, and what the process does after the signal.

Ctrl-C during ``index`` (in a document run or in the corpus run) prints one sentence, exits 130,
starts no other Dagster run, and the next ``index`` finishes; ``status`` then shows one "corpus
graph:" line. A killed ``vacuum`` is named as such by ``status`` and ``index``. ``serve`` stops on
Ctrl-C with exit 0 and no error. Each runs the real CLI in a subprocess; the model is the scripted
server, slowed down so that the signal lands mid-stage.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from graphrag_assets.cli.output import render_status
from graphrag_assets.core.settings import load_settings
from graphrag_assets.pipeline.partitions import DOCUMENTS_JOB
from graphrag_assets.pipeline.runtime.instance import open_instance
from graphrag_assets_tests.conftest import RESPONDER, make_llm_project
from graphrag_assets_tests.serve_process import ServeProcess
from graphrag_assets_tests.test_crash_consistency import CONCURRENCY, LATENCY_MS, _copy_without_corpus_answers, _stage

CLI = [sys.executable, "-m", "graphrag_assets.cli.main"]
STAGE_TIMEOUT = 90
ONE_SENTENCE = "interrupted; nothing was published, the previous build is still served"


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "GRAPHRAG_ROOT")}


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=300, env=_env())


def _ctrl_c_once(root: Path, server, stage: str, *args: str) -> tuple[int, str]:
    """Run ``index``; Ctrl-C (SIGINT to its process group, as a terminal does) once ``stage``
    has answers; (exit code, stdout + stderr)."""
    log = root.parent / f"index-{stage}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [*CLI, "index", "--root", str(root), *args],
            env=_env(),
            start_new_session=True,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + STAGE_TIMEOUT
    try:
        while sum(1 for c in server.calls() if _stage(c) == stage and c["outcome"] == "answered") < 2 * CONCURRENCY:
            assert process.poll() is None, f"index ended before the {stage} stage:\n{log.read_text()}"
            assert time.monotonic() < deadline, f"the {stage} stage did not start within {STAGE_TIMEOUT} s"
            time.sleep(0.02)
        os.killpg(process.pid, signal.SIGINT)
        code = process.wait(timeout=120)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    return code, log.read_text(encoding="utf-8", errors="replace")


def _runs(root: Path) -> list[str]:
    instance = open_instance(load_settings(root, environ={}))
    try:
        return [run.job_name for run in instance.get_runs()]
    finally:
        instance.dispose()


def _assert_one_clean_sentence(code: int, output: str) -> None:
    assert code == 130, output
    for internal in ("Traceback", "dagster._core", "FAILED:", "error:", "graph: "):
        assert internal not in output, output
    assert output.count("interrupted") == 1 and ONE_SENTENCE in output, output


def test_ctrl_c_in_a_document_run_stops_there(openai_server_factory, tmp_path: Path) -> None:
    server = openai_server_factory(responder=RESPONDER, latency_ms=LATENCY_MS)
    root = make_llm_project(tmp_path / "project", server.base_url, extra=f"  concurrency: {CONCURRENCY}\n")
    code, output = _ctrl_c_once(root, server, "other")
    _assert_one_clean_sentence(code, output)
    # No retry run, no corpus run after the signal: the one document run is all there is.
    assert _runs(root) == [DOCUMENTS_JOB], output
    assert "updating the corpus-wide graph" not in output and "retrying" not in output

    finished = _cli("index", "--root", str(root))
    assert finished.returncode == 0, finished.stderr
    assert "updating the corpus-wide graph" in finished.stderr


@pytest.mark.parametrize("corpus_processes", ["never", "always"])
def test_ctrl_c_in_the_corpus_run_stops_there_and_status_says_so_once(
    standard_index: Path, openai_server_factory, tmp_path: Path, corpus_processes: str
) -> None:
    server = openai_server_factory(responder=RESPONDER, latency_ms=LATENCY_MS)
    root = _copy_without_corpus_answers(standard_index, tmp_path / "project", server.base_url)
    with (root / "graphrag.yaml").open("a", encoding="utf-8") as settings:  # the corpus steps in this process or apart
        settings.write(f"index:\n  corpus_processes: {corpus_processes}\n")
    runs_before = len(_runs(root))
    code, output = _ctrl_c_once(root, server, "summaries", "--full")
    _assert_one_clean_sentence(code, output)
    assert len(_runs(root)) == runs_before + 1

    status = _cli("status", "--root", str(root)).stdout
    corpus_lines = [line for line in status.splitlines() if line.startswith("corpus graph:")]
    assert len(corpus_lines) == 1 and "stopped before it was published" in corpus_lines[0], status
    assert "was stopped before it finished" not in status  # Ctrl-C ends `index` in order: not a killed run

    finished = _cli("index", "--root", str(root))
    assert finished.returncode == 0, finished.stderr
    assert "updating the corpus-wide graph" in finished.stderr


STALLED_VACUUM = """
import sys, time
import graphrag_assets.project.vacuum as vacuum

def stalled(path):  # the compaction's last step never ends: the process is killed in it
    print("compacting", flush=True)
    time.sleep(600)

vacuum.rewrite_compact = stalled
from graphrag_assets.cli.main import main
main(["vacuum", "--root", sys.argv[1]])
"""


def test_a_killed_vacuum_is_named_as_a_vacuum(nlp_index: Path, tmp_path: Path) -> None:
    root = tmp_path / "project"
    shutil.copytree(nlp_index, root, ignore=shutil.ignore_patterns("*.lock"))
    process = subprocess.Popen(
        [sys.executable, "-c", STALLED_VACUUM, str(root)], stdout=subprocess.PIPE, text=True, env=_env()
    )
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "compacting"
    finally:
        process.kill()
        process.wait()

    status = _cli("status", "--root", str(root)).stdout
    assert "the 'graphrag-assets vacuum' started at" in status and "'graphrag-assets index' started" not in status
    index = _cli("index", "--root", str(root))
    assert index.returncode == 0, index.stderr
    assert "the 'vacuum' started at" in index.stderr and "run 'graphrag-assets vacuum' again" in index.stderr


def test_ctrl_c_stops_serve_quietly(nlp_index: Path) -> None:
    server = ServeProcess.start("--root", str(nlp_index))
    try:
        server.process.send_signal(signal.SIGINT)
        code = server.process.wait(timeout=60)
    finally:
        server.stop()
    output = server.output()
    assert code == 0, output
    assert "error" not in output and "interrupted" not in output and "Traceback" not in output, output
    assert output.rstrip().endswith("stopped"), output


def _status(corpus: dict) -> dict:
    documents = {"new": [], "changed": [], "deleted": [], "unchanged": 9, "skipped": [], "failed": []}
    return {
        "root": "/p",
        "method": "standard",
        "database": "/p/db",
        "documents": documents,
        "corpus": corpus,
        "tables": {},
    }


def test_an_unfinished_update_is_the_one_corpus_graph_line() -> None:
    since = {"added": [], "changed": [], "removed": []}
    stopped = {
        "built": True,
        "unfinished": True,
        "update_running": False,
        "stale": True,
        "documents_since_build": since,
    }
    first = {**stopped, "built": False}
    for corpus, says in [
        (stopped, "queries use the previous build"),
        (first, "not built yet; the first build stopped"),
    ]:
        lines = [line for line in render_status(_status(corpus)).splitlines() if line.startswith("corpus graph:")]
        assert len(lines) == 1 and says in lines[0], lines


def test_an_interrupt_inside_a_socket_write_prints_no_traceback(caplog: pytest.LogCaptureFixture) -> None:
    """Ctrl-C raised inside asyncio's write to the model server reached the output as a "Fatal write
    error" with a traceback (seen once in CI, in the corpus run above); an error still does."""
    import asyncio

    from dagster._core.errors import DagsterExecutionInterruptedError

    import graphrag_assets.pipeline.assets.model_session  # noqa: F401  (installs the filter)

    loop = asyncio.new_event_loop()
    try:
        for error in (DagsterExecutionInterruptedError(), KeyboardInterrupt(), ConnectionResetError("reset")):
            # what asyncio's transport does with an exception raised in its socket write
            loop.call_exception_handler(
                {"message": f"Fatal write error on socket transport ({error!r})", "exception": error}
            )
    finally:
        loop.close()
    logged = [record.getMessage() for record in caplog.records if record.name == "asyncio"]
    assert len(logged) == 1 and "ConnectionResetError" in logged[0], logged
