"""Latency and load of ``graphrag-assets serve`` on the *A Christmas Carol* index (or any index).

    python bench/bench_serve.py [--workdir /tmp/graphrag-bench] [--rounds 5] [--requests 200] [--concurrency 20]
    python bench/bench_serve.py --index ROOT   # an existing project, e.g. a kept bench_scale index

With ``--index`` the questions ask about the index's 20 most connected entities (``show entities
--json``) instead of the book's, and the server's peak resident memory is printed too.

The book (``../shared/data/nano-graphrag/tests/mock_data.txt``; skipped with a message when
absent) is indexed offline with the nlp method into ``WORKDIR/serve-carol`` (kept and reused when
it is already there), then ``graphrag-assets serve`` runs as a child process on a free loopback
port with no model endpoint, so every request measures the server and the retrieval, not a model.

1. **Sequential latency**: ``POST /api/query`` with ``context_only: true`` for 20 questions ×
   ``--rounds``, local and basic alternating, on one kept-alive connection. Anchors measured in the
   same run: ``GET /api/status`` (the HTTP + ASGI round trip alone) and the same retrievals called
   in this process without HTTP (``run_query`` on the loaded index), so the ratios say what the
   server adds.
2. **Load**: ``--requests`` of those queries (local and basic alternating) from ``--concurrency``
   threads, each on its own connection; errors (any status but 200, or a failed connection) are
   counted.

Printed with the load average (``os.getloadavg``) at start and end; written to
``bench/results/serve.json``. Target: median ≤ 50 ms for local and basic ``context_only``; 0 errors.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_nlp import offline_env, percentile, prepare_project  # noqa: E402
from common import (  # noqa: E402
    cli_command,
    git_state,
    header_block,
    invocation,
    load_average,
    machine_info,
    markdown_table,
    write_results,
)

from graphrag_assets_testkit.shared_data import CHRISTMAS_CAROL  # noqa: E402

DEFAULT_WORKDIR = Path(tempfile.gettempdir()) / "graphrag-bench"
TARGET_MEDIAN_MS = 50.0
START_TIMEOUT_SECONDS = 120.0
QUESTIONS = [
    "Who is Ebenezer Scrooge and how does he change?",
    "What does Jacob Marley's ghost warn Scrooge about?",
    "Who is Tiny Tim?",
    "What does the Ghost of Christmas Past show Scrooge?",
    "How does Bob Cratchit's family celebrate Christmas?",
    "What is Fezziwig's party like?",
    "Who is Belle and why did she leave Scrooge?",
    "What does the Ghost of Christmas Yet to Come reveal?",
    "How does Scrooge treat his nephew Fred?",
    "What happens on Christmas morning?",
    "What are Ignorance and Want?",
    "Who are the charitable gentlemen collecting for the poor?",
    "What chains does Marley wear?",
    "Where does Scrooge's counting-house stand?",
    "What does Scrooge see at his own grave?",
    "How does the Ghost of Christmas Present appear?",
    "What games are played at Fred's party?",
    "What happens to Scrooge's possessions after his death?",
    "Why does Scrooge send a turkey to the Cratchits?",
    "What does Scrooge promise at the end?",
]
METHODS = ("local", "basic")


def build_index(root: Path) -> None:
    """Index the book offline unless ``root`` already holds a published build."""
    if (root / "data" / "graphrag.duckdb").exists():
        return
    prepare_project(root, CHRISTMAS_CAROL.parent, [CHRISTMAS_CAROL])
    subprocess.run(cli_command("index", "--root", str(root)), env=offline_env(), check=True, capture_output=True)


def start_server(root: Path) -> tuple[subprocess.Popen, int, Path]:
    log = root.parent / "serve-bench.log"
    out = open(log, "wb")
    process = subprocess.Popen(
        cli_command("serve", "--root", str(root), "--port", "0"),
        env=offline_env(),
        stdout=out,
        stderr=subprocess.STDOUT,
    )
    out.close()
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while True:
        text = log.read_text(errors="replace")
        if "serving " in text:
            port = int(text.split("http://127.0.0.1:", 1)[1].split("/", 1)[0])
            return process, port, log
        if process.poll() is not None or time.monotonic() > deadline:
            stop(process)
            raise RuntimeError(f"the server did not start:\n{text}")
        time.sleep(0.05)


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def query_body(question: str, method: str) -> bytes:
    return json.dumps({"question": question, "method": method, "context_only": True}).encode("utf-8")


def timed(conn: http.client.HTTPConnection, method: str, path: str, body: bytes | None = None) -> tuple[float, int]:
    """Milliseconds for one request (the whole body read) and its status."""
    started = time.perf_counter()
    conn.request(method, path, body=body, headers={"Content-Type": "application/json"} if body else {})
    response = conn.getresponse()
    response.read()
    return (time.perf_counter() - started) * 1000, response.status


def summary(values: list[float]) -> dict[str, float]:
    return {
        "n": len(values),
        "median_ms": round(statistics.median(values), 2),
        "p95_ms": round(percentile(values, 95), 2),
        "mean_ms": round(statistics.fmean(values), 2),
        "min_ms": round(min(values), 2),
    }


def index_questions(root: Path) -> list[str]:
    """Questions about the 20 most connected entities of the project at ``root``."""
    shown = subprocess.run(
        cli_command("show", "entities", "--root", str(root), "--limit", str(len(QUESTIONS)), "--json"),
        env=offline_env(),
        check=True,
        capture_output=True,
        text=True,
    )
    return [f"What connects {row['title'].title()} to the others?" for row in json.loads(shown.stdout)]


def rss_mb(pid: int, field: str = "VmHWM") -> float:
    """The process's peak (VmHWM) or current (VmRSS) resident memory, in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return round(int(line.split()[1]) / 1024, 1)
    return float("nan")


def snapshot_load_seconds(port: int) -> float | None:
    """How long the server took to load the project's build (``/api/status``)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request("GET", "/api/status")
        status = json.loads(conn.getresponse().read())
    finally:
        conn.close()
    projects = status.get("projects") or [status]
    return projects[0].get("load_seconds")


def sequential(port: int, rounds: int) -> dict[str, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    for question in QUESTIONS[:3]:  # warm up: first LanceDB searches, first tokenizer use
        for method in METHODS:
            timed(conn, "POST", "/api/query", query_body(question, method))
    times: dict[str, list[float]] = {m: [] for m in (*METHODS, "status")}
    failures = 0
    for _ in range(rounds):
        for question in QUESTIONS:
            for method in METHODS:
                ms, status = timed(conn, "POST", "/api/query", query_body(question, method))
                times[method].append(ms)
                failures += status != 200
            ms, status = timed(conn, "GET", "/api/status")
            times["status"].append(ms)
    conn.close()
    return {"by_route": {k: summary(v) for k, v in times.items()}, "failures": failures}


def in_process(root: Path, rounds: int) -> dict[str, dict[str, float]]:
    """The same retrievals without HTTP: the engine's share of the server's latency."""
    from graphrag_assets.core.settings import load_settings
    from graphrag_assets.core.tokens import token_counter
    from graphrag_assets.llm.factory import ModelSet
    from graphrag_assets.llm.usage import UsageMeter
    from graphrag_assets.project.query_data import load_query_data
    from graphrag_assets.query.engine import run_query
    from graphrag_assets.query.request import QueryOptions, SearchRequest

    settings = load_settings(root, environ=offline_env())
    data = load_query_data(settings)
    count = token_counter(settings.chunking.encoding)
    times: dict[str, list[float]] = {m: [] for m in METHODS}

    async def run() -> None:
        with ModelSet(settings, UsageMeter()) as models:
            for warm in range(2):
                for _ in range(1 if warm == 0 else rounds):
                    for question in QUESTIONS:
                        for method in METHODS:
                            request = SearchRequest(
                                question,
                                data,
                                settings.query,
                                embedder=models.embedder,
                                options=QueryOptions(method=method, context_only=True),
                                count=count,
                            )
                            started = time.perf_counter()
                            await run_query(request)
                            if warm:
                                times[method].append((time.perf_counter() - started) * 1000)

    asyncio.run(run())
    return {m: summary(v) for m, v in times.items()}


def load(port: int, requests: int, concurrency: int) -> dict[str, Any]:
    def one(i: int) -> tuple[float, bool, str]:
        method = METHODS[i % len(METHODS)]
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        try:
            ms, status = timed(conn, "POST", "/api/query", query_body(QUESTIONS[i % len(QUESTIONS)], method))
            return ms, status == 200, method
        except OSError:
            return 0.0, False, method
        finally:
            conn.close()

    started = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        results = list(pool.map(one, range(requests)))
    wall = time.perf_counter() - started
    ok = [ms for ms, good, _ in results if good]
    return {
        "requests": requests,
        "concurrency": concurrency,
        "errors": sum(1 for _, good, _ in results if not good),
        "wall_s": round(wall, 2),
        "requests_per_s": round(requests / wall, 1),
        **summary(ok),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", type=Path, default=DEFAULT_WORKDIR)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--index", type=Path, default=None, help="an existing project to serve instead of the book's")
    parser.add_argument(
        "--no-in-process", action="store_true", help="skip the in-process anchor (minutes on a 100,000-document index)"
    )
    args = parser.parse_args()
    if args.index is not None:
        root = args.index.resolve()
        QUESTIONS[:] = index_questions(root)
        title = f"graphrag-assets serve on {root}"
    elif not CHRISTMAS_CAROL.exists():
        print(f"skipped: {CHRISTMAS_CAROL} is absent (../shared is not here).")
        return
    else:
        root = args.workdir / "serve-carol"
        build_index(root)
        title = "graphrag-assets serve on A Christmas Carol (nlp index)"
    machine, load_start = machine_info(), load_average()
    process, port, _ = start_server(root)
    try:
        started_rss_mb, started_peak_mb = rss_mb(process.pid, "VmRSS"), rss_mb(process.pid)
        load_seconds = snapshot_load_seconds(port)
        seq = sequential(port, args.rounds)
        under_load = load(port, args.requests, args.concurrency)
        serve_peak_mb = rss_mb(process.pid)
    finally:
        stop(process)
    nan = {"n": 0, "median_ms": float("nan"), "p95_ms": float("nan"), "mean_ms": float("nan")}
    engine = {m: nan for m in METHODS} if args.no_in_process else in_process(root, args.rounds)
    load_end = load_average()

    routes = seq["by_route"]
    rows = [
        [
            f"context_only {m} (HTTP)",
            *(routes[m][k] for k in ("n", "median_ms", "p95_ms", "mean_ms")),
            round(routes[m]["median_ms"] / engine[m]["median_ms"], 2),
        ]
        for m in METHODS
    ]
    rows += [
        [
            f"context_only {m} (in process, no HTTP)",
            *(engine[m][k] for k in ("n", "median_ms", "p95_ms", "mean_ms")),
            1.0,
        ]
        for m in METHODS
    ]
    rows.append(
        [
            "GET /api/status (HTTP round trip alone)",
            *(routes["status"][k] for k in ("n", "median_ms", "p95_ms", "mean_ms")),
            "",
        ]
    )
    met = {m: routes[m]["median_ms"] <= TARGET_MEDIAN_MS for m in METHODS}
    print(header_block(title, invocation(), load_start, load_end, machine))
    print(
        f"serve's resident memory after start: {started_rss_mb} MB (peak {started_peak_mb} MB); "
        f"peak after the requests: {serve_peak_mb} MB; the build loaded in {load_seconds} s"
    )
    print()
    print(markdown_table(["what is timed", "n", "median ms", "p95 ms", "mean ms", "× in-process"], rows))
    print()
    print(
        markdown_table(
            ["load", "requests", "concurrency", "errors", "wall s", "req/s", "median ms", "p95 ms"],
            [
                [
                    "context_only local + basic",
                    under_load["requests"],
                    under_load["concurrency"],
                    under_load["errors"],
                    under_load["wall_s"],
                    under_load["requests_per_s"],
                    under_load["median_ms"],
                    under_load["p95_ms"],
                ]
            ],
        )
    )
    print()
    for m in METHODS:
        print(
            f"target median ≤ {TARGET_MEDIAN_MS:.0f} ms, {m}: {'met' if met[m] else 'MISSED'} ({routes[m]['median_ms']:.1f} ms)"
        )
    print(
        f"target 0 errors under load: {'met' if under_load['errors'] == 0 and seq['failures'] == 0 else 'MISSED'} "
        f"({under_load['errors']} of {under_load['requests']}; sequential failures {seq['failures']})"
    )
    path = write_results(
        "serve.json" if args.index is None else "serve_index.json",
        {
            "machine": machine,
            "git": git_state(),
            "command": invocation(),
            "load_average_start": load_start,
            "load_average_end": load_end,
            "project": str(root),
            "sequential": seq,
            "in_process": engine,
            "load": under_load,
            "serve_rss_after_start_mb": started_rss_mb,
            "serve_peak_rss_after_start_mb": started_peak_mb,
            "serve_peak_rss_mb": serve_peak_mb,
            "snapshot_load_seconds": load_seconds,
            "target_median_ms": TARGET_MEDIAN_MS,
            "targets_met": {**met, "zero_errors": under_load["errors"] == 0 and seq["failures"] == 0},
        },
    )
    print(f"\nwritten to {path}")


if __name__ == "__main__":
    main()
