"""What per-document partitions cost (issue 34): the same corpus indexed as many small files and as
one JSONL file, offline, cold, each in its own project folder.

    python bench/bench_partition_cost.py [--documents 2000] [--vs CHECKOUT] [--rounds 1]

Files give one Dagster partition per document; one JSONL file with one document per row is one
partition for the whole corpus, so the ratio of the two walls (whole ``graphrag-assets index``
command) is what the partitioning costs on top of the same text. Target: files ≤ 1.5× JSONL.

``--vs CHECKOUT`` runs the same pair again with another checkout's code (its folder put first on
PYTHONPATH, same venv), interleaved with this checkout's runs, so a before/after comparison shares
one machine state. Prints wall, CPU, the ratio and the load average; writes
bench/results/bench_partition_cost.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (  # noqa: E402  (bench/ is not a package)
    REPO_ROOT,
    cli_command,
    dagster_timeline,
    load_average,
    machine_info,
    measure,
    wall_breakdown,
    write_results,
)
from scale_corpus import write_jsonl_corpus, write_text_corpus  # noqa: E402

MODEL_VARIABLES = ("GRAPHRAG_ROOT", "OPENAI_BASE_URL", "OPENAI_API_KEY", "GRAPHRAG_API_KEY")
LAYOUTS = ("files", "jsonl")


def code_env(checkout: Path | None) -> dict[str, str]:
    """The environment of an offline run; ``checkout`` (another source tree) first on PYTHONPATH."""
    env = {k: v for k, v in os.environ.items() if k not in MODEL_VARIABLES}
    env["PYTHONUNBUFFERED"] = "1"
    if checkout is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(checkout), env.get("PYTHONPATH", "")]))
    return env


def make_corpora(folder: Path, documents: int) -> dict[str, Path]:
    """Write each layout's input once; every project copies it, so all runs index the same bytes."""
    corpora = {"files": folder / "files", "jsonl": folder / "jsonl"}
    write_text_corpus(corpora["files"], documents)
    write_jsonl_corpus(corpora["jsonl"], documents)
    return corpora


def index_cold(root: Path, corpus: Path, env: dict[str, str]) -> dict[str, Any]:
    """A fresh project with ``corpus`` as its input, indexed once; wall, CPU and where the wall went."""
    subprocess.run(cli_command("init", "--root", str(root)), env=env, check=True, capture_output=True, text=True)
    inputs = root / "data" / "input"
    shutil.rmtree(inputs, ignore_errors=True)
    shutil.copytree(corpus, inputs)
    load_start = load_average()
    measured = measure(cli_command("index", "--root", str(root), "--json"), env=env)
    runs = json.loads(measured.stdout)["runs"]
    timeline = dagster_timeline(root, [run["run_id"] for run in runs])
    return {
        "wall_s": round(measured.wall_s, 2),
        "cpu_s": round(measured.cpu_s, 2),
        "peak_rss_mb": measured.peak_rss_mb,
        "load_average_start": load_start,
        "partitions": sum(len(run["partitions"]) for run in runs),
        "wall_breakdown": wall_breakdown(measured.started_at, measured.wall_s, timeline),
    }


def show(code: str, layout: str, run: dict[str, Any]) -> None:
    parts = run["wall_breakdown"]
    print(
        f"  {code:>6} {layout:>5}: {run['wall_s']:6.1f} s wall, {run['cpu_s']:6.1f} s CPU, "
        f"steps {parts['steps_s']:.1f} s, run bookkeeping {parts['run_bookkeeping_s']:.1f} s, "
        f"before runs {parts['before_first_run_s']:.1f} s, after {parts['between_and_after_runs_s']:.1f} s, "
        f"{parts['dagster_events']} events, load {' / '.join(f'{x:.2f}' for x in run['load_average_start'])}",
        flush=True,
    )


def summary(runs: list[dict[str, Any]], code: str) -> dict[str, Any]:
    walls = {layout: [r["wall_s"] for r in runs if r["code"] == code and r["layout"] == layout] for layout in LAYOUTS}
    cpus = {layout: [r["cpu_s"] for r in runs if r["code"] == code and r["layout"] == layout] for layout in LAYOUTS}
    best = {layout: min(walls[layout]) for layout in LAYOUTS}
    return {
        "code": code,
        "files_wall_s": best["files"],
        "jsonl_wall_s": best["jsonl"],
        "files_cpu_s": min(cpus["files"]),
        "jsonl_cpu_s": min(cpus["jsonl"]),
        "wall_ratio": round(best["files"] / best["jsonl"], 2),
        "cpu_ratio": round(min(cpus["files"]) / min(cpus["jsonl"]), 2),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--documents", type=int, default=2_000)
    parser.add_argument("--vs", type=Path, help="another checkout to compare with in the same run")
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="pairs per code (the order alternates); the best wall of each layout counts",
    )
    args = parser.parse_args()
    codes: dict[str, Path | None] = {"this": None}
    if args.vs is not None:
        codes = {"vs": args.vs.resolve(), "this": None}
    print(f"bench_partition_cost: {args.documents} documents, this checkout {REPO_ROOT}", flush=True)
    if args.vs is not None:
        print(f"  vs = {args.vs.resolve()}", flush=True)
    load_start = load_average()
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="partition_cost_") as tmp:
        workdir = Path(tmp)
        corpora = make_corpora(workdir / "corpora", args.documents)
        for round_number in range(args.rounds):
            # Alternate which code goes first, so a load that rises or falls during the run favours neither.
            for code, checkout in list(codes.items())[:: -1 if round_number % 2 else 1]:
                for layout in LAYOUTS:
                    root = workdir / f"{code}_{layout}_{round_number}"
                    run = {"code": code, "layout": layout, **index_cold(root, corpora[layout], code_env(checkout))}
                    runs.append(run)
                    show(code, layout, run)
                    shutil.rmtree(root, ignore_errors=True)
    summaries = [summary(runs, code) for code in codes]
    load_end = load_average()
    for s in summaries:
        print(
            f"{s['code']:>6}: files {s['files_wall_s']:.1f} s / JSONL {s['jsonl_wall_s']:.1f} s = "
            f"{s['wall_ratio']:.2f}x wall (CPU {s['files_cpu_s']:.1f} / {s['jsonl_cpu_s']:.1f} s = {s['cpu_ratio']:.2f}x)"
        )
    print(f"load average {' / '.join(map(str, load_start))} -> {' / '.join(map(str, load_end))}")
    write_results(
        "bench_partition_cost.json",
        {
            "documents": args.documents,
            "vs": str(args.vs) if args.vs else None,
            "machine": machine_info(),
            "load_start": load_start,
            "load_end": load_end,
            "runs": runs,
            "summary": summaries,
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
