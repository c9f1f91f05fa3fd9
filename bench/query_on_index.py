"""Cold CLI commands and ``serve`` on an existing (big) index: wall, peak RSS, per code tree.

``bench_query.py --index ROOT`` calls :func:`index_costs`. Each command runs in a fresh process
(cold: interpreter, imports, loading the index, answering), under ``common.measure``; with
``--baseline SRC`` (a folder holding another ``graphrag_assets`` package, e.g. ``git archive`` of
main) every command runs with that tree and with this one (``--candidate SRC``, default: the
installed package) in turn, in the same run, so the ratio
says what a change did whatever the machine's load. The project is queried as it is configured: an
offline (nlp) index answers every method without a model.

``serve``: the server is started on the index, one context-only local query is sent, then 20 at
once (one connection each); its resident memory (``/proc/PID/status`` VmRSS and VmHWM) is read
after each, to see whether concurrent requests copy the index.
"""

from __future__ import annotations

import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from common import load_average, markdown_table, measure

QUESTION = "What connects {entity} to the other towns?"
METHODS = ("local", "basic", "global", "drift")
CONCURRENT_REQUESTS = 20
START_TIMEOUT_SECONDS = 300.0


def tree_env(source: Path | None) -> dict[str, str]:
    """The environment running ``graphrag_assets`` from ``source`` (None: the installed package), offline."""
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "GRAPHRAG_API_KEY")}
    env["PYTHONUNBUFFERED"] = "1"
    if source is not None:
        env["PYTHONPATH"] = str(source)
    else:
        env.pop("PYTHONPATH", None)
    return env


NEUTRAL_CWD = Path(tempfile.gettempdir())  # ``python -m`` puts the working folder first on sys.path: not a source tree


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "graphrag_assets.cli.main", *args]


def busiest_entity(root: Path) -> str:
    shown = subprocess.run(
        cli("show", "entities", "--root", str(root), "--limit", "1", "--json"),
        env=tree_env(None),
        cwd=NEUTRAL_CWD,
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(shown.stdout)[0]["title"]


def commands(root: Path, entity: str) -> dict[str, list[str]]:
    question = QUESTION.format(entity=entity.title())
    where = ("--root", str(root))
    return {
        **{f"query -m {m}": cli("query", "-m", m, question, *where) for m in METHODS},
        "show entity": cli("show", "entity", entity, *where),
        "status": cli("status", *where),
    }


def _rss_mb(pid: int) -> dict[str, float]:
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return {key: round(int(fields[key].split()[0]) / 1024, 1) for key in ("VmRSS", "VmHWM")}


def _post(port: int, body: bytes) -> tuple[int, float]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    started = time.perf_counter()
    conn.request("POST", "/api/query", body, {"Content-Type": "application/json"})
    response = conn.getresponse()
    response.read()
    conn.close()
    return response.status, time.perf_counter() - started


def serve_memory(root: Path, entity: str, source: Path | None) -> dict[str, Any]:
    """RSS of ``serve`` after start, after one query and after 20 concurrent ones."""
    log = root.parent / f"serve-{os.getpid()}.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            cli("serve", "--root", str(root), "--port", "0"),
            env=tree_env(source),
            cwd=NEUTRAL_CWD,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while "serving " not in (text := log.read_text(errors="replace")):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the server did not start:\n{text}")
            time.sleep(0.1)
        port = int(text.split("http://127.0.0.1:", 1)[1].split("/", 1)[0])
        body = json.dumps(
            {"question": QUESTION.format(entity=entity.title()), "method": "local", "context_only": True}
        ).encode()
        figures: dict[str, Any] = {"started": _rss_mb(process.pid), "load": load_average()}
        status, first = _post(port, body)
        figures["after_1"] = {**_rss_mb(process.pid), "status": status, "seconds": round(first, 2)}
        with ThreadPoolExecutor(CONCURRENT_REQUESTS) as pool:
            done = list(pool.map(lambda _: _post(port, body), range(CONCURRENT_REQUESTS)))
        figures[f"after_{CONCURRENT_REQUESTS}_concurrent"] = {
            **_rss_mb(process.pid),
            "errors": sum(1 for s, _ in done if s != 200),
            "median_s": round(statistics.median(t for _, t in done), 2),
        }
        return figures
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.unlink(missing_ok=True)


def index_costs(
    root: Path,
    trees: dict[str, Path | None],
    repeats: int,
    serve: str = "all",
    only: list[str] | None = None,
) -> dict[str, Any]:
    """Every command of :func:`commands` (those named in ``only``, when given) and ``serve`` under
    each tree (name -> source folder, None: the installed package), taking turns, best of
    ``repeats``; ``serve`` under every tree, the last one only (``"last"``) or none (``"none"``:
    ``serve`` holds a 100k index's 12 GB of relationships)."""
    entity = busiest_entity(root)
    results: dict[str, Any] = {"root": str(root), "entity": entity, "load_average_start": load_average(), "rows": {}}
    chosen = commands(root, entity)
    unknown = sorted(set(only or ()) - set(chosen))
    if unknown:
        raise SystemExit(f"unknown command(s) {unknown}; choose among {sorted(chosen)}.")
    for name, command in chosen.items():
        if only and name not in only:
            continue
        row: dict[str, Any] = {}
        for _ in range(repeats):
            for tree, source in trees.items():
                measured = measure(command, env=tree_env(source), cwd=NEUTRAL_CWD)
                best = row.get(tree)
                if best is None or measured.wall_s < best["wall_s"]:
                    row[tree] = {"wall_s": measured.wall_s, "peak_rss_mb": measured.peak_rss_mb, "load": load_average()}
        results["rows"][name] = row
        print(f"  {name}: {row}", file=sys.stderr, flush=True)
    served = {"all": list(trees.items()), "last": list(trees.items())[-1:], "none": []}[serve]
    results["serve"] = {tree: serve_memory(root, entity, source) for tree, source in served}
    results["load_average_end"] = load_average()
    return results


def render_index_costs(results: dict[str, Any]) -> str:
    trees = list(next(iter(results["rows"].values())).keys())
    headers = ["command"] + [f"{t} {k}" for t in trees for k in ("wall s", "peak MB")]
    if len(trees) == 2:
        headers += ["wall ratio", "peak ratio"]
    rows = []
    for name, row in results["rows"].items():
        cells: list[Any] = [name] + [row[t][k] for t in trees for k in ("wall_s", "peak_rss_mb")]
        if len(trees) == 2:
            before, after = (row[t] for t in trees)
            cells += [
                round(after["wall_s"] / before["wall_s"], 2),
                round(after["peak_rss_mb"] / before["peak_rss_mb"], 2),
            ]
        rows.append(cells)
    lines = [
        f"index: {results['root']} (entity asked about: {results['entity']})",
        f"load average: start {results['load_average_start']}, end {results['load_average_end']}",
        "",
        markdown_table(headers, rows),
    ]
    if results["serve"]:
        lines += ["", "serve (MB; VmRSS / VmHWM):"]
    for tree, figures in results["serve"].items():
        lines.append(f"- {tree}: {json.dumps(figures)}")
    return "\n".join(lines)
