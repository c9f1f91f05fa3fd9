"""The whole standard pipeline on A Christmas Carol against the local stand-in model server.

    python bench/bench_extraction.py [--latency-ms 500] [--concurrency 25] [--repeat 3] [--workdir DIR] [--keep]

Uses ../shared/data/nano-graphrag/tests/mock_data.txt (189 KB, about 42 text units of 1200 tokens) and
skips with a message when ../shared is absent. Every measured command is ``graphrag-assets index
--root P --json`` run as its own process tree (wall time, user+system CPU, peak RSS of the CLI
process); the stand-in (graphrag_assets_testkit.openai_server with the realistic responder) runs
as a separate child process and is not part of those figures (its own CPU is shown apart).

Runs:
  A  fresh project, stand-in answering instantly (0 ms): the cost of our own process.
  B  fresh project, stand-in answering after --latency-ms with llm.concurrency --concurrency:
     wall time against the ideal calls x latency / concurrency, and against the ideal that respects
     the pipeline's stages (extraction before summaries, report levels one after another).
  C  warm cache: a new project holding only A's llm_cache and embedding_cache tables (every other
     table dropped, no LanceDB, no Dagster state): the full pipeline must run without one model call
     and produce the same tables as A.
  D  A again with nothing changed (the no-op check) and E  A again with --full (corpus job forced).

Prints markdown tables and writes bench/results/extraction.json.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (  # noqa: E402
    StandInServer,
    database_path,
    git_state,
    header_block,
    ideal_seconds,
    index_run,
    init_project,
    invocation,
    load_average,
    machine_info,
    markdown_table,
    median_run,
    product_env,
    report_levels,
    spread,
    table_fingerprints,
    usage_totals,
    write_results,
)

CACHE_TABLES = ("llm_cache", "embedding_cache")
MS_GRAPHRAG = {"cpu_s": 65.0, "peak_rss_mb": 600.0}  # the figures for MS GraphRAG 3.x, instant server
STEP_ORDER = [
    "ingest",
    "extract",
    "text_unit_embeddings",
    "graph",
    "communities",
    "community_reports",
    "entity_embeddings",
    "community_report_embeddings",
]


def christmas_carol() -> Path | None:
    try:
        from graphrag_assets_testkit.shared_data import CHRISTMAS_CAROL
    except ImportError:
        return None
    return CHRISTMAS_CAROL if CHRISTMAS_CAROL.exists() else None


def new_project(root: Path, book: Path, env: dict[str, str], concurrency: int) -> None:
    init_project(root, env)
    settings = root / "graphrag.yaml"
    text, count = re.subn(r"(?m)^(\s+concurrency:)\s*\d+", rf"\g<1> {concurrency}", settings.read_text())
    if count != 1:
        raise RuntimeError(f"could not set llm.concurrency in {settings}")
    settings.write_text(text)
    shutil.copy(book, root / "data" / "input" / book.name)


def keep_only_caches(database: Path) -> list[str]:
    """Drop every table but the response caches; returns what was dropped."""
    import duckdb

    with duckdb.connect(str(database)) as conn:
        tables = [
            row[0]
            for row in conn.sql(
                "select table_name from information_schema.tables where table_type = 'BASE TABLE'"
            ).fetchall()
        ]
        dropped = sorted(t for t in tables if t not in CACHE_TABLES)
        for table in dropped:
            conn.execute(f'drop table "{table}"')
        conn.execute("checkpoint")
    return dropped


def ideal_by_stage(
    run: dict[str, Any], levels: dict[int, int], concurrency: int, latency_s: float
) -> dict[str, dict[str, Any]]:
    """Per step: calls and the ideal time of those calls; community reports level by level."""
    calls = {row["step"]: row["calls"] for row in run["usage_by_step"]}
    stages: dict[str, dict[str, Any]] = {}
    for step in STEP_ORDER:
        n = calls.get(step, 0)
        if step == "community_reports":
            ideal = sum(
                ideal_seconds(count, concurrency, latency_s) for _, count in sorted(levels.items(), reverse=True)
            )
            note = " + ".join(f"L{lvl}:{count}" for lvl, count in sorted(levels.items(), reverse=True))
            if sum(levels.values()) != n:
                note += f" (communities {sum(levels.values())} != report calls {n})"
        else:
            ideal = ideal_seconds(n, concurrency, latency_s)
            note = ""
        stages[step] = {"calls": n, "ideal_s": ideal, "levels": note}
    return stages


def usage_rows(usage: dict[str, dict[str, int]]) -> list[list[Any]]:
    rows = [
        [purpose, u["calls"], u["cached"], u["prompt_tokens"], u["completion_tokens"]]
        for purpose, u in sorted(usage.items())
    ]
    t = usage_totals(usage)
    rows.append(["**total**", t["calls"], t["cached"], t["prompt_tokens"], t["completion_tokens"]])
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency-ms", type=float, default=500.0)
    parser.add_argument("--concurrency", type=int, default=25)
    parser.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="fresh-project runs A and B are measured this many times (medians reported)",
    )
    parser.add_argument(
        "--workdir", type=Path, default=None, help="where the projects go (default: a new temporary folder)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the projects after the run")
    args = parser.parse_args()

    book = christmas_carol()
    if book is None:
        print(
            "SKIPPED: A Christmas Carol (../shared/data/nano-graphrag/tests/mock_data.txt) is not available; "
            "set GRAPHRAG_SHARED_DATA to the shared data folder to run this benchmark."
        )
        return 0

    machine = machine_info()
    load_start = load_average()
    started = time.monotonic()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="bench_extraction_"))
    workdir.mkdir(parents=True, exist_ok=True)
    latency_s = args.latency_ms / 1000
    results: dict[str, Any] = {
        "benchmark": "extraction",
        "command": invocation(),
        "machine": machine,
        "code": git_state(),
        "book": str(book),
        "book_bytes": book.stat().st_size,
        "concurrency": args.concurrency,
        "latency_ms": args.latency_ms,
    }
    server = StandInServer(workdir, latency_ms=0)
    try:
        env = product_env(server)
        # A: instant stand-in, fresh project (repeated; the first project serves C, D and E).
        a_runs = []
        for r in range(args.repeat):
            root = workdir / f"a_instant_{r + 1}"
            new_project(root, book, env, args.concurrency)
            a_runs.append(index_run(server, root, env))
        a_root = workdir / "a_instant_1"
        a = median_run(a_runs)
        a["tables"] = table_fingerprints(a_root)
        results["a_instant"] = a

        # C: warm cache only (a new project with A's caches and nothing else).
        c_root = workdir / "c_warm_cache"
        new_project(c_root, book, env, args.concurrency)
        database_path(c_root).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(database_path(a_root), database_path(c_root))
        dropped = keep_only_caches(database_path(c_root))
        c = index_run(server, c_root, env, with_calls=False)
        c["dropped_tables"] = dropped
        c["tables"] = table_fingerprints(c_root)
        c["tables_equal_a"] = c["tables"] == a["tables"]
        results["c_warm_cache"] = c

        # D / E: the same project again, unchanged; then with --full.
        results["d_noop"] = index_run(server, a_root, env, with_calls=False)
        results["e_full_same_project"] = index_run(server, a_root, env, "--full", with_calls=False)

        # B: slow stand-in, fresh project (repeated).
        server.set_latency(args.latency_ms)
        b_runs = []
        for r in range(args.repeat):
            root = workdir / f"b_latency_{r + 1}"
            new_project(root, book, env, args.concurrency)
            b_runs.append(index_run(server, root, env))
        b_root = workdir / "b_latency_1"
        b = median_run(b_runs)
        b["tables"] = table_fingerprints(b_root)
        b["tables_equal_a"] = b["tables"] == a["tables"]
        b["calls_identical_across_repeats"] = len(set(b["repeats"]["calls"] + a["repeats"]["calls"])) == 1
        levels = report_levels(b_root)
        b["report_levels"] = levels
        b["stages"] = ideal_by_stage(b, levels, args.concurrency, latency_s)
        all_calls = b["server"]["chat"] + b["server"]["embeddings"]
        b["ideal_flat_s"] = round(all_calls * latency_s / args.concurrency, 3)
        b["ideal_staged_s"] = round(sum(s["ideal_s"] for s in b["stages"].values()), 3)
        b["ratio_flat"] = round(b["wall_s"] / b["ideal_flat_s"], 2)
        b["ratio_staged"] = round(b["wall_s"] / b["ideal_staged_s"], 2)
        b["ratio_added_wall_vs_staged"] = round((b["wall_s"] - a["wall_s"]) / b["ideal_staged_s"], 2)
        results["b_latency"] = b
    finally:
        server.stop()
        if not args.keep and args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)

    results["total_seconds"] = round(time.monotonic() - started, 1)
    load_end = load_average()
    results["load_average"] = {"start": load_start, "end": load_end}
    results["vs_ms_graphrag"] = {
        "cpu_fraction": round(a["cpu_s"] / MS_GRAPHRAG["cpu_s"], 3),
        "rss_fraction": round(a["peak_rss_mb"] / MS_GRAPHRAG["peak_rss_mb"], 3),
        "ms_figures": MS_GRAPHRAG,
    }
    path = write_results("extraction.json", results)
    print(render(results, load_start, load_end))
    print(f"\nwritten: {path.relative_to(Path(__file__).resolve().parents[1])}")
    return 0


def render(r: dict[str, Any], load_start: list[float], load_end: list[float]) -> str:
    a, b, c, d, e = r["a_instant"], r["b_latency"], r["c_warm_cache"], r["d_noop"], r["e_full_same_project"]
    lat = r["latency_ms"]
    out = [
        header_block(
            "bench_extraction: A Christmas Carol, whole standard pipeline",
            r["command"],
            load_start,
            load_end,
            r["machine"],
        )
    ]
    code = r["code"]
    out.append(
        f"code: commit {code['commit'][:12]}"
        + (
            f" with uncommitted changes to {', '.join(code['modified_tracked_files'])}"
            if code["modified_tracked_files"]
            else ""
        )
    )
    out.append(
        f"\nbook: {Path(r['book']).name} ({r['book_bytes'] / 1000:.0f} KB), {a['tables']['text_units']['rows']} text units; "
        f"llm.concurrency {r['concurrency']}; measured command per run: `{a['command']}` (run as its own process tree)\n"
    )
    rows = []
    for label, run, latency in (
        ("A fresh project", a, 0),
        ("B fresh project", b, lat),
        ("C warm cache only (new project)", c, 0),
        ("D same project, nothing changed", d, 0),
        ("E same project, --full", e, 0),
    ):
        t = usage_totals(run["usage"])
        rows.append(
            [
                label,
                f"{latency:.0f}",
                len(run.get("repeats", {}).get("wall_s", [1])),
                spread(run, "wall_s"),
                spread(run, "cpu_s"),
                spread(run, "peak_rss_mb"),
                run["server"]["chat"],
                run["server"]["embeddings"],
                t["cached"],
                t["prompt_tokens"],
                t["completion_tokens"],
                run["server"]["cpu_s"],
            ]
        )
    out.append(
        markdown_table(
            [
                "run",
                "stand-in latency ms",
                "times run",
                "wall s, median (range)",
                "CPU s (user+sys)",
                "peak RSS MB",
                "chat calls",
                "embedding calls",
                "answered from cache",
                "prompt+embedding tokens",
                "completion tokens",
                "stand-in CPU s",
            ],
            rows,
        )
    )
    v = r["vs_ms_graphrag"]
    out.append(
        f"\nA vs MS GraphRAG 3.x (issue figures, {v['ms_figures']['cpu_s']:.0f} s CPU, {v['ms_figures']['peak_rss_mb']:.0f} MB): "
        f"CPU {v['cpu_fraction']:.0%}, peak RSS {v['rss_fraction']:.0%}."
    )
    out.append(
        f"C: dropped {len(c['dropped_tables'])} tables, kept {', '.join(CACHE_TABLES)}; stand-in saw {c['server']['chat']} chat and "
        f"{c['server']['embeddings']} embedding calls; output tables identical to A: {c['tables_equal_a']}. "
        f"B output tables identical to A: {b['tables_equal_a']}; same number of calls in every A and B run: "
        f"{b['calls_identical_across_repeats']}."
    )

    out.append("\n### Calls and tokens by purpose (A, fresh project)\n")
    out.append(
        markdown_table(
            ["purpose", "calls", "cached", "prompt+embedding tokens", "completion tokens"], usage_rows(a["usage"])
        )
    )

    out.append(
        f"\n### Dagster steps: wall seconds, calls, and the ideal at {lat:.0f} ms x concurrency {r['concurrency']}\n"
    )
    rows = []
    for step in STEP_ORDER:
        stage = b["stages"][step]
        span_b = b.get("calls_by_step", {}).get(step, {}).get("model_span_s", "")
        rows.append(
            [
                step,
                a["step_seconds"].get(step, ""),
                b["step_seconds"].get(step, ""),
                stage["calls"],
                stage["ideal_s"],
                span_b,
                stage["levels"],
            ]
        )
    rows.append(
        [
            "**sum of steps**",
            round(sum(a["step_seconds"].values()), 2),
            round(sum(b["step_seconds"].values()), 2),
            sum(s["calls"] for s in b["stages"].values()),
            b["ideal_staged_s"],
            "",
            "",
        ]
    )
    rows.append(["**whole command**", a["wall_s"], b["wall_s"], "", "", "", ""])
    out.append(
        markdown_table(
            [
                "step",
                "A wall s (0 ms)",
                f"B wall s ({lat:.0f} ms)",
                "calls",
                "ideal s",
                "B first call to last answer s",
                "report calls per level",
            ],
            rows,
        )
    )

    out.append("\n### Where the wall time went (the median run of A and of B; C, D for comparison)\n")
    parts = [
        ("before the first Dagster run (start, imports, change detection)", "before_first_run_s"),
        ("inside runs, outside steps (Dagster run bookkeeping)", "run_bookkeeping_s"),
        ("inside steps", "steps_s"),
        ("between and after runs (usage report, exit)", "between_and_after_runs_s"),
        ("events written to the Dagster event log (count)", "dagster_events"),
    ]
    out.append(
        markdown_table(
            ["part", "A s", "B s", "C s", "D s"],
            [
                [label, a["wall_breakdown"][k], b["wall_breakdown"][k], c["wall_breakdown"][k], d["wall_breakdown"][k]]
                for label, k in parts
            ],
        )
    )

    out.append(f"\n### Latency {lat:.0f} ms, concurrency {r['concurrency']}: wall time vs ideal\n")
    out.append(
        markdown_table(
            ["figure", "seconds", "wall / figure"],
            [
                [
                    f"calls x {lat / 1000:g} s / {r['concurrency']} ({b['server']['chat'] + b['server']['embeddings']} calls, chat + embeddings)",
                    b["ideal_flat_s"],
                    b["ratio_flat"],
                ],
                [
                    "ideal respecting stages (sum over steps of ceil(calls/c) x latency, reports per level)",
                    b["ideal_staged_s"],
                    b["ratio_staged"],
                ],
                ["B wall", b["wall_s"], 1.0],
                [
                    "B wall - A wall (time added by the latency)",
                    round(b["wall_s"] - a["wall_s"], 2),
                    f"{b['ratio_added_wall_vs_staged']} of staged ideal",
                ],
            ],
        )
    )
    out.append(
        f"\nmax requests in flight at the stand-in: {b['server']['max_in_flight']} (concurrency {r['concurrency']}). "
        f"Total benchmark time {r['total_seconds']} s."
    )
    return "\n".join(out)


if __name__ == "__main__":
    sys.exit(main())
