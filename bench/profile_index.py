"""Where a cold index's time and memory go: one ``graphrag-assets index`` of a book against the
stand-in model server of ``msgraphrag_compare.py`` (0 ms latency), step by step.

    python bench/profile_index.py [--corpus PATH] [--py-spy /path/to/py-spy]

Prints and writes bench/results/profile_index.json:

1. wall and CPU time (the CLI and its children, from ``wait4``), peak RSS of the process tree
   (sampled every 50 ms from /proc) and the load average before and after;
2. per Dagster step: start and end (from the run's own event log) and the peak tree RSS while it ran;
3. with ``--py-spy``: the CLI's main thread sampled at 200 Hz (``py-spy record --idle``), each sample
   put in one part (imports, HTTP client, DuckDB, Dagster storage, ...; see ``PARTS``), with
   seconds and share of the main thread's wall time. py-spy is then the tree's root, so that run's
   CPU (py-spy's own, plus the CLI's as py-spy reaps it) and RSS (py-spy included) are not the
   CLI's: take those from a run without ``--py-spy``.

On 2 shared cores the seconds scale with the load average; the shares are the figures to compare.
"""

from __future__ import annotations

import argparse
import collections
import glob
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))
sys.path.insert(0, str(BENCH))

import msgraphrag_compare as mc  # noqa: E402

WORK = mc.RESULTS / "tmp" / "profile_index"
RATE = 200
# (part, regex over one frame): scanning a sample's stack from the leaf, the first frame matching a
# part decides; imports and samples without Python frames are told apart first.
PARTS = [
    ("LanceDB calls", r"lancedb|storage/vectors"),
    ("openai response models", r"openai/_models\.py|openai/_response|_legacy_response"),
    (
        "HTTP client (openai + httpx, per call)",
        r"httpx|httpcore|h11|anyio|openai/_base_client|openai/_client|openai/resources",
    ),
    ("embedding body parsing", r"_post_embeddings|decode_vector|orjson"),  # ours only: json elsewhere is not it
    ("tokenization / chunking", r"tiktoken|core/tokens|index/chunking"),
    ("Leiden / communities", r"igraph|leidenalg|index/(communities|stable_communities)"),
    ("graph merge + summaries (local work)", r"index/(graph_merge|summarize|graph_checks)"),
    ("report contexts (local work)", r"index/(report_context|community_reports|report_reuse)"),
    ("extraction parsing", r"index/(extraction_parser|graph_extraction)"),
    ("LLM response cache", r"llm/cache"),
    (
        "DuckDB (connections, reads, writes)",
        r"duckdb|storage/(database|tables|corpus|documents)|llm/usage|llm/capabilities",
    ),
    ("Dagster SQLite storage", r"sqlalchemy|sqlite3|event_log"),
    ("Dagster step / run machinery", r"dagster"),
    ("polars", r"polars"),
    ("waiting for the model server", r"EpollSelector\.select|selectors\.py"),
]


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def run_index(side: mc.OurSide, py_spy: str | None, out: Path) -> dict:
    command = side.index_command()
    if py_spy:
        command = [
            py_spy,
            "record",
            "--subprocesses",
            "--threads",
            "--idle",
            "-r",
            str(RATE),
            "--format",
            "raw",
            "-o",
            str(out / "py-spy.txt"),
            "--",
            *command,
        ]
    samples: list[tuple[float, int]] = []
    load_start = load_average()
    started = time.time()
    with (out / "index.log").open("w") as log:
        process = subprocess.Popen(command, env=side.env, cwd=side.root, stdout=log, stderr=subprocess.STDOUT)
        done = threading.Event()

        def sample() -> None:
            while not done.is_set():
                samples.append((time.time() - started, sum(mc._rss_bytes(p) for p in mc._tree(process.pid))))
                done.wait(0.05)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.time() - started
        done.set()
        sampler.join()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"the index failed; see {out / 'index.log'}")
    return {
        "wall_s": round(wall, 2),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
        "peak_tree_rss_mb": round(max(rss for _, rss in samples) / 2**20, 1),
        "load_start": load_start,
        "load_end": load_average(),
        "started": started,
        "rss": samples,
    }


def steps(root: Path, started: float, rss: list[tuple[float, int]]) -> list[dict]:
    """Each step's and run's start and end, from the Dagster event log's SQLite shards."""
    events = set()
    for db in glob.glob(str(root / "data" / "dagster" / "**" / "*.db"), recursive=True):
        conn = sqlite3.connect(db)
        try:
            rows = conn.execute(
                "select event from event_logs where dagster_event_type in "
                "('STEP_START', 'STEP_SUCCESS', 'STEP_FAILURE', 'PIPELINE_START', 'PIPELINE_SUCCESS', 'PIPELINE_FAILURE')"
            ).fetchall()
        except sqlite3.OperationalError:
            rows = []
        finally:
            conn.close()
        for (text,) in rows:
            event = json.loads(text)
            dagster_event = event.get("dagster_event") or {}
            events.add(
                (
                    event["timestamp"] - started,
                    dagster_event.get("event_type_value"),
                    dagster_event.get("step_key") or event.get("job_name") or event.get("pipeline_name") or "",
                )
            )
    found, begun = [], {}
    for at, kind, key in sorted(events):
        if kind.endswith("_START"):
            begun[key] = at
            continue
        start = begun.get(key, at)
        peak = max((value for t, value in rss if start <= t <= at), default=0)
        found.append(
            {
                "step": key,
                "kind": "run" if kind.startswith("PIPELINE") else "step",
                "start_s": round(start, 2),
                "end_s": round(at, 2),
                "seconds": round(at - start, 2),
                "peak_tree_rss_mb": round(peak / 2**20, 1),
            }
        )
    return found


def _is_main_thread(frames: list[str], cli_pid: str) -> bool:
    """Whether a sample is the CLI's main thread: its thread id is the CLI's process id.

    py-spy does not always read the process's command line or the thread's name (samples come as
    ``process 123:""`` and ``thread (123)``), so the ids decide."""
    return (
        len(frames) >= 2 and frames[0].startswith(f"process {cli_pid}:") and frames[1].startswith(f"thread ({cli_pid})")
    )


def parts(py_spy_file: Path) -> dict[str, float]:
    """Seconds of the CLI's main thread per part (see ``PARTS``)."""
    counts: collections.Counter[str] = collections.Counter()
    lines = py_spy_file.read_text(encoding="utf-8", errors="replace").splitlines()
    # py-spy's root process is the CLI (the command it started); its first sample names it.
    cli_pid = next((m.group(1) for line in lines if (m := re.match(r"process (\d+):", line))), "")
    for line in lines:
        stack, _, n = line.rpartition(" ")
        frames = stack.split(";")
        if not _is_main_thread(frames, cli_pid):
            continue
        frames = frames[2:]
        counts[_part(frames)] += int(n)
    return {part: round(count / RATE, 2) for part, count in counts.most_common()}


def _part(frames: list[str]) -> str:
    if not frames:
        return "interpreter start / teardown (no Python frames)"
    if any("_find_and_load" in frame for frame in frames):
        text = ";".join(frames)
        return "imports: lancedb" if "lancedb/" in text else "imports: dagster, polars, duckdb, openai, ours"
    for frame in reversed(frames):
        for part, pattern in PARTS:
            if re.search(pattern, frame):
                return part
    return "other Python (CLI, glue)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--corpus", type=Path, default=None, help="the book (default: A Christmas Carol from ../shared)"
    )
    parser.add_argument("--py-spy", default=None, help="path to a py-spy executable: also sample the main thread")
    args = parser.parse_args()
    corpus = args.corpus
    if corpus is None:
        from graphrag_assets_testkit.shared_data import CHRISTMAS_CAROL

        corpus = CHRISTMAS_CAROL
    if not corpus.exists():
        raise SystemExit(f"corpus not found: {corpus} (pass --corpus PATH)")
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    mc.seed_tiktoken_cache(mc.TIKTOKEN_CACHE, [Path(sys.executable)])
    server = mc.StandinServer(WORK)
    try:
        side = mc.OurSide(WORK / "project", server, mc.TIKTOKEN_CACHE)
        side.create(corpus)
        server.reset(0)
        measured = run_index(side, args.py_spy, WORK)
        calls = server.usage()["calls"]
    finally:
        server.stop()
    rss = measured.pop("rss")
    result = {**measured, "model_calls": calls, "steps": steps(side.root, measured.pop("started"), rss)}
    if args.py_spy:
        result["main_thread_parts_s"] = parts(WORK / "py-spy.txt")
    print(
        f"cold index of {corpus.name}: wall {result['wall_s']} s, CPU {result['cpu_s']} s, peak tree RSS "
        f"{result['peak_tree_rss_mb']} MB, {calls} model calls; load {result['load_start']} -> {result['load_end']}"
    )
    for step in result["steps"]:
        print(
            f"  {step['kind']:4s} {step['step']:30s} {step['start_s']:7.2f} -> {step['end_s']:7.2f}  {step['seconds']:6.2f} s  "
            f"peak tree RSS {step['peak_tree_rss_mb']:6.0f} MB"
        )
    if args.py_spy:
        total = sum(result["main_thread_parts_s"].values()) or 1
        print("main thread (py-spy):")
        for part, seconds in result["main_thread_parts_s"].items():
            print(f"  {seconds:6.2f} s {100 * seconds / total:5.1f}%  {part}")
    (mc.RESULTS / "profile_index.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
