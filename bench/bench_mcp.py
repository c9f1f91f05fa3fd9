"""Latency of an MCP tool call over HTTP: ``search_context`` (local) at ``/mcp`` of a warm ``serve``.

    python bench/bench_mcp.py [--workdir /tmp/graphrag-bench] [--rounds 5]

The *A Christmas Carol* index of ``bench_serve.py`` (the nlp method, offline; built there when
absent, skipped with a message when ../shared is not here) is served by ``graphrag-assets serve``
as a child process. One MCP client (the official SDK's, streamable HTTP, one connection) calls
``search_context`` with method ``local`` for 20 questions × ``--rounds``, after three warm-up calls.
Anchor in the same run, taking turns with it: the same retrieval through the native API
(``POST /api/query`` with ``context_only: true``) on a kept-alive connection, so the ratio says what
the MCP layer (JSON-RPC, the SDK's client and server, the structured result) adds.

Printed with the load average (``os.getloadavg``) at start and end; written to
``bench/results/mcp.json``. Target (issue 38): median ≤ 60 ms for the MCP call.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_serve import (  # noqa: E402
    DEFAULT_WORKDIR,
    QUESTIONS,
    build_index,
    query_body,
    start_server,
    stop,
    summary,
    timed,
)
from common import git_state, header_block, invocation, load_average, machine_info, markdown_table, write_results  # noqa: E402
from mcp import Client  # noqa: E402

from graphrag_assets_testkit.shared_data import CHRISTMAS_CAROL  # noqa: E402

TARGET_MEDIAN_MS = 60.0
WARM_UP = 3


async def measure(port: int, rounds: int) -> dict[str, list[float]]:
    """Milliseconds per call, MCP and native API taking turns on each question."""
    times: dict[str, list[float]] = {"mcp": [], "api": []}
    api = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    async with Client(f"http://127.0.0.1:{port}/mcp") as client:
        for question in QUESTIONS[:WARM_UP]:
            await client.call_tool("search_context", {"question": question, "method": "local"})
            timed(api, "POST", "/api/query", query_body(question, "local"))
        for _ in range(rounds):
            for question in QUESTIONS:
                started = time.perf_counter()
                result = await client.call_tool("search_context", {"question": question, "method": "local"})
                times["mcp"].append((time.perf_counter() - started) * 1000)
                if result.is_error:
                    raise RuntimeError(f"search_context failed: {result.content[0].text}")
                ms, status = timed(api, "POST", "/api/query", query_body(question, "local"))
                if status != 200:
                    raise RuntimeError(f"POST /api/query answered {status}")
                times["api"].append(ms)
    api.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", type=Path, default=DEFAULT_WORKDIR)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    if not CHRISTMAS_CAROL.exists():
        print(f"skipped: {CHRISTMAS_CAROL} is absent (../shared is not here).")
        return
    root = args.workdir / "serve-carol"
    build_index(root)
    machine, load_start = machine_info(), load_average()
    process, port, _ = start_server(root)
    try:
        times = asyncio.run(measure(port, args.rounds))
    finally:
        stop(process)
    load_end = load_average()
    figures: dict[str, Any] = {name: summary(values) for name, values in times.items()}
    ratio = round(figures["mcp"]["median_ms"] / figures["api"]["median_ms"], 2)
    rows = [
        ["MCP tools/call search_context (local)", *(figures["mcp"][k] for k in ("n", "median_ms", "p95_ms")), ratio],
        ["POST /api/query context_only (local)", *(figures["api"][k] for k in ("n", "median_ms", "p95_ms")), 1.0],
    ]
    print(header_block("MCP over HTTP on A Christmas Carol (nlp index)", invocation(), load_start, load_end, machine))
    print()
    print(markdown_table(["what is timed", "n", "median ms", "p95 ms", "× native API"], rows))
    met = figures["mcp"]["median_ms"] <= TARGET_MEDIAN_MS
    print(f"\ntarget: MCP median ≤ {TARGET_MEDIAN_MS:g} ms: {'met' if met else 'NOT met'}")
    path = write_results(
        "mcp.json",
        {
            "invocation": invocation(),
            "git": git_state(),
            "machine": machine,
            "load_average": {"start": load_start, "end": load_end},
            "figures": figures,
            "mcp_over_api": ratio,
            "target_median_ms": TARGET_MEDIAN_MS,
            "target_met": met,
        },
    )
    print(f"written: {path}")


if __name__ == "__main__":
    main()
