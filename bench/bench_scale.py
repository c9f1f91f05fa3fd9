"""Scale benchmark (issue 18): index generated corpora of 1k, 10k (and 100k) small documents.

For each size, a fresh project indexes the corpus of ``bench/scale_corpus.py`` (1–3 KB documents
about a seeded world of towns, one file each) with one ``graphrag-assets index`` and reports wall
time, CPU, peak RSS, the size of the DuckDB file and the LanceDB folder, and where the wall time
went, from the Dagster instance's run and step times:

- ``steps``: inside Dagster steps (our ingestion, extraction, graph, communities, embeddings, and
  the events a step writes itself);
- ``orchestration``: inside runs but outside steps (run start, planning, step launch, run end)
  plus the time between and after runs (launching the next run, the usage report);
- ``startup``: before the first run (interpreter, imports, change detection, definitions).

The growth exponent between two sizes is log(wall₂/wall₁) / log(n₂/n₁) (1.0 = linear). The offline
method (noun phrases, local embeddings) needs no model; ``--standin-sizes`` also index with the
standard method against the stand-in model server (``common.StandInServer``) at 0 ms, so the
figures are those of our code and Dagster, not of a model. ``--jsonl`` indexes one JSONL file with
one document per row (one partition for the whole corpus). ``--postgres-sizes`` index the offline
corpus again with Dagster's state in a real PostgreSQL server (started here as in the tests,
``graphrag_assets_testkit/postgres_server.py``), to compare the event log's cost with SQLite's.
``--leiden NODES EDGES`` times the corpus step's clustering alone on a planted-partition graph of
that size (``bench_clustering.planted_partition``), with this process's peak RSS.

Projects of 10,000 documents and more use bucketed partitions (``partitions.bucket_threshold``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (  # noqa: E402  (bench/ is not a package)
    StandInServer,
    cli_command,
    dagster_timeline,
    git_state,
    header_block,
    invocation,
    load_average,
    machine_info,
    markdown_table,
    measure,
    product_env,
    results_name,
    shown_command,
    step_seconds,
    wall_breakdown,
    write_results,
)
from scale_corpus import write_jsonl_corpus, write_text_corpus  # noqa: E402

from graphrag_assets.storage.corpus import graph_sizes  # noqa: E402

MODEL_VARIABLES = ("GRAPHRAG_ROOT", "OPENAI_BASE_URL", "OPENAI_API_KEY", "GRAPHRAG_API_KEY")


def offline_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in MODEL_VARIABLES}
    env["PYTHONUNBUFFERED"] = "1"
    return env


class TreeRss:
    """Memory of this process's descendants (the measured CLI and its step processes), sampled every 100 ms.

    ``ru_maxrss`` gives one peak for the whole command, and misses step processes nobody waited
    for; sampled with a timestamp, each sample can be put in the Dagster step running when it was
    taken, so a peak is given to its step. Each sample holds the tree's summed RSS, its summed PSS
    (pages shared by forked processes counted once: a step forked from the step server shares its
    imports) and the largest high-water mark (VmHWM) of a process in it: a step process's own peak
    even between samples (the CLI's own is its peak since it started).

    PSS is read every ``pss_every``-th sample only (None in the others): the kernel walks every page
    of a process to sum it, and at every sample that took this thread 74 s of CPU during a 283 s
    one-document update of the 100,000-document index (4 GB processes; a py-spy profile), a core
    taken from the measured steps on a 2-core machine.
    """

    def __init__(self, interval_s: float = 0.1, pss_every: int = 10) -> None:
        self.interval_s = interval_s
        self.pss_every = pss_every
        self.samples: list[tuple[float, int, int | None, int]] = []  # (unix time, KiB RSS, KiB PSS, KiB largest VmHWM)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> TreeRss:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        count = 0
        while not self._stop.wait(self.interval_s):
            pids = _descendants(os.getpid())
            status = [_status_kib(pid) for pid in pids]
            pss = sum(_pss_kib(pid) for pid in pids) if count % self.pss_every == 0 else None
            count += 1
            self.samples.append(
                (
                    time.time(),
                    sum(s.get("VmRSS:", 0) for s in status),
                    pss,
                    max((s.get("VmHWM:", 0) for s in status), default=0),
                )
            )

    def peak_mb(self, column: int) -> float:
        """The peak over the whole command (1: tree RSS, 2: tree PSS, 3: largest VmHWM)."""
        return round(max((s[column] for s in self.samples if s[column] is not None), default=0) / 1024, 1)

    def when_peak(self, windows: list[dict[str, Any]]) -> str:
        """Where the whole command's tree RSS peaked: in a step, or after one (a step process's
        exit, e.g. DuckDB's checkpoint as it lets the file go, falls outside its step's window)."""
        if not self.samples:
            return ""
        at = max(self.samples, key=lambda sample: sample[1])[0]
        inside = [w["step"] for w in windows if w["start"] <= at <= w["end"]]
        if inside:
            return f"in {inside[0]}"
        before = [w for w in windows if w["end"] < at]
        return f"after {max(before, key=lambda w: w['end'])['step']} ended" if before else "before the first step"

    def peaks_by_step(self, windows: list[dict[str, Any]], column: int = 1) -> dict[str, float]:
        """Peak (MB) per step, over the samples taken while the step ran (column as in :meth:`peak_mb`)."""
        peaks: dict[str, float] = {}
        for window in windows:
            inside = [
                sample[column]
                for sample in self.samples
                if window["start"] <= sample[0] <= window["end"] and sample[column] is not None
            ]
            if inside:
                peaks[window["step"]] = max(peaks.get(window["step"], 0.0), round(max(inside) / 1024, 1))
        return peaks


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], list(children.get(pid, []))
    while todo:
        child = todo.pop()
        found.append(child)
        todo.extend(children.get(child, []))
    return found


def _status_kib(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM of a process (empty once it has ended)."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return {}
    return {line.split()[0]: int(line.split()[1]) for line in lines if line.startswith(("VmRSS:", "VmHWM:"))}


def _pss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def size_on_disk(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def index_corpus(
    root: Path,
    documents: int,
    env: dict[str, str],
    jsonl: bool = False,
    init_args: tuple[str, ...] = (),
    corpus_processes: str | None = None,
) -> dict[str, Any]:
    """Create the project (``graphrag-assets init INIT_ARGS``), write the corpus, index it once and measure everything."""
    subprocess.run(
        cli_command("init", "--root", str(root), *init_args), env=env, check=True, capture_output=True, text=True
    )
    set_corpus_processes(root, corpus_processes)
    inputs = root / "data" / "input"
    corpus_bytes = write_jsonl_corpus(inputs, documents) if jsonl else write_text_corpus(inputs, documents)
    return {
        "documents": documents,
        "input": "one JSONL file" if jsonl else "one file per document",
        "corpus_mb": round(corpus_bytes / 1e6, 1),
        **measured_index(root, env, documents),
    }


CORPUS_PROCESSES_MARK = "# bench_scale: corpus_processes\n"


def set_corpus_processes(root: Path, mode: str | None) -> None:
    """Set ``index.corpus_processes`` in the project's graphrag.yaml (None: leave the project's own)."""
    if mode is None:
        return
    settings = root / "graphrag.yaml"
    text = settings.read_text(encoding="utf-8") if settings.exists() else ""
    text = text.split(CORPUS_PROCESSES_MARK)[0]
    settings.write_text(f"{text}{CORPUS_PROCESSES_MARK}index:\n  corpus_processes: {mode}\n", encoding="utf-8")


def add_one_document(root: Path, env: dict[str, str], corpus_processes: str | None = None) -> dict[str, Any]:
    """Add one document to a kept offline project and index again: the corpus steps re-run on the
    whole graph (exact mode), so their time and memory can be measured without a new build."""
    set_corpus_processes(root, corpus_processes)
    inputs = root / "data" / "input"
    documents = sum(1 for path in inputs.rglob("*") if path.is_file())
    added = inputs / f"added-{time.time_ns()}.txt"
    added.write_text(f"An added note ({added.name}) about the harbour of Ostvik and its old lighthouse.\n")
    return {
        "documents": documents + 1,
        "input": f"one document added to {root}",
        **measured_index(root, env, documents + 1),
    }


def measured_index(root: Path, env: dict[str, str], documents: int) -> dict[str, Any]:
    """One ``graphrag-assets index`` of the project at ``root``, with its wall, memory and steps."""
    command = cli_command("index", "--root", str(root), "--json")
    load_start = load_average()
    with TreeRss() as rss:
        measured = measure(command, env=env)
    report = json.loads(measured.stdout)
    run_ids = [run["run_id"] for run in report["runs"]]
    timeline = dagster_timeline(root, run_ids)
    breakdown = wall_breakdown(measured.started_at, measured.wall_s, timeline)
    orchestration = breakdown["run_bookkeeping_s"] + breakdown["between_and_after_runs_s"]
    return {
        "command": shown_command(command),
        **measured.figures(),
        "load_average_start": load_start,
        "load_average_end": load_average(),
        "runs": [(run["job"], run["success"], len(run["partitions"])) for run in report["runs"]],
        "graph": graph_sizes(root / "data" / "graphrag.duckdb"),
        "duckdb_mb": round(size_on_disk(root / "data" / "graphrag.duckdb") / 1e6, 1),
        "lancedb_mb": round(size_on_disk(root / "data" / "lancedb") / 1e6, 1),
        "dagster_mb": round(size_on_disk(root / "data" / "dagster") / 1e6, 1),
        "wall_breakdown": breakdown,
        "step_seconds": step_seconds(timeline["steps"]),
        "step_peak_rss_mb": rss.peaks_by_step(timeline["steps"]),
        "step_peak_pss_mb": rss.peaks_by_step(timeline["steps"], column=2),
        "step_largest_hwm_mb": rss.peaks_by_step(timeline["steps"], column=3),
        "peak_tree_rss_mb": rss.peak_mb(1),
        "peak_tree_pss_mb": rss.peak_mb(2),
        "peak_tree_rss_when": rss.when_peak(timeline["steps"]),
        "orchestration_s": round(orchestration, 2),
        "orchestration_share": round(orchestration / measured.wall_s, 3),
        "ms_per_document": {
            "wall": round(1000 * measured.wall_s / documents, 2),
            "steps": round(1000 * breakdown["steps_s"] / documents, 2),
            "orchestration": round(1000 * orchestration / documents, 2),
        },
    }


def leiden_limit(nodes: int, edges: int) -> dict[str, Any]:
    """Hierarchical Leiden (igraph backend, the default) on a graph of ``nodes`` and ``edges``."""
    import resource
    import time

    from bench_clustering import planted_partition

    from graphrag_assets.index.communities import LeidenOptions, hierarchical_leiden

    started = time.perf_counter()
    frame, _ = planted_partition(nodes, edges)
    generated = time.perf_counter()
    assignments = hierarchical_leiden(frame, LeidenOptions(backend="igraph"))
    done = time.perf_counter()
    return {
        "nodes": nodes,
        "edges": frame.height,
        "generate_s": round(generated - started, 1),
        "leiden_s": round(done - generated, 1),
        "levels": int(assignments["level"].max()) + 1,
        "communities": int(assignments["community"].n_unique()),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "load_average": load_average(),
    }


def growth_exponents(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Wall-time growth between consecutive sizes of the same kind of run."""
    growth = []
    for kind in sorted({r["kind"] for r in results}):
        runs = sorted((r for r in results if r["kind"] == kind), key=lambda r: r["documents"])
        for small, large in zip(runs, runs[1:]):
            exponent = math.log(large["wall_s"] / small["wall_s"]) / math.log(large["documents"] / small["documents"])
            growth.append(
                {"kind": kind, "from": small["documents"], "to": large["documents"], "exponent": round(exponent, 2)}
            )
    return growth


def _step_cell(run: dict[str, Any], step: str) -> str:
    figures = [
        run.get(key, {}).get(step, "–")  # –: no sample in the step (PSS is read once a second)
        for key in ("step_peak_rss_mb", "step_peak_pss_mb", "step_largest_hwm_mb")
    ]
    return f"{run['step_seconds'].get(step, '')} s / " + " / ".join(str(figure) for figure in figures)


def render(results: dict[str, Any]) -> str:
    out = [
        header_block(
            "bench_scale: generated corpora",
            results["command"],
            results["load_start"],
            results["load_end"],
            results["machine"],
        )
    ]
    rows = [
        [
            r["kind"],
            r["documents"],
            r["input"],
            r["wall_s"],
            r["cpu_s"],
            r["peak_rss_mb"],
            r.get("peak_tree_rss_mb", ""),
            r.get("peak_tree_pss_mb", ""),
            r.get("peak_tree_rss_when", ""),
            r["duckdb_mb"],
            r["lancedb_mb"],
            r["wall_breakdown"]["steps_s"],
            r["orchestration_s"],
            r["wall_breakdown"]["dagster_events"],
            f"{100 * r['orchestration_share']:.1f}%",
            r["ms_per_document"]["steps"],
            r["ms_per_document"]["orchestration"],
            " / ".join(f"{x:.2f}" for x in r["load_average_start"]),
            r.get("graph", {}).get("entities", ""),
            r.get("graph", {}).get("relationships", ""),
            round(r["graph"]["relationships"] / r["documents"], 1) if r.get("graph") else "",
        ]
        for r in results["runs"]
    ]
    out += [
        "",
        markdown_table(
            [
                "method",
                "documents",
                "input",
                "wall s",
                "CPU s",
                "peak RSS MB",
                "peak tree RSS MB",
                "peak tree PSS MB",
                "tree RSS peaked",
                "DuckDB MB",
                "LanceDB MB",
                "steps s",
                "orchestration s",
                "Dagster events",
                "orchestration share",
                "steps ms/doc",
                "orchestration ms/doc",
                "load avg at start",
                "entities",
                "relationships",
                "relationships/doc",
            ],
            rows,
        ),
    ]
    steps = sorted({step for r in results["runs"] for step in r.get("step_peak_rss_mb", {})})
    if steps:
        out += [
            "",
            markdown_table(
                [
                    "step: seconds / peak tree RSS / tree PSS / largest VmHWM (MB)",
                    *(f"{r['kind']} {r['documents']}" for r in results["runs"]),
                ],
                [[step, *(_step_cell(r, step) for r in results["runs"])] for step in steps],
            ),
        ]
    if results["growth"]:
        out += [
            "",
            markdown_table(
                ["method", "from", "to", "growth exponent"],
                [[g["kind"], g["from"], g["to"], g["exponent"]] for g in results["growth"]],
            ),
        ]
    if "leiden" in results:
        leiden = results["leiden"]
        out += [
            "",
            markdown_table(
                ["Leiden alone: nodes", "edges", "seconds", "levels", "communities", "peak RSS MB", "load avg"],
                [
                    [
                        leiden["nodes"],
                        leiden["edges"],
                        leiden["leiden_s"],
                        leiden["levels"],
                        leiden["communities"],
                        leiden["peak_rss_mb"],
                        " / ".join(f"{x:.2f}" for x in leiden["load_average"]),
                    ]
                ],
            ),
        ]
    return "\n".join(out)


def _mode_label(mode: str | None) -> str:
    return f", corpus steps: processes {mode}" if mode else ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes", type=int, nargs="*", default=[1_000, 10_000], help="offline corpora, one file per document"
    )
    parser.add_argument(
        "--standin-sizes",
        type=int,
        nargs="*",
        default=[1_000],
        help="standard method against the stand-in server at 0 ms",
    )
    parser.add_argument(
        "--jsonl", type=int, nargs="*", default=[], help="offline corpora as one JSONL file (one document per row)"
    )
    parser.add_argument(
        "--postgres-sizes",
        type=int,
        nargs="*",
        default=[1_000],
        help="offline corpora with Dagster's state in PostgreSQL",
    )
    parser.add_argument(
        "--leiden",
        type=int,
        nargs=2,
        metavar=("NODES", "EDGES"),
        default=None,
        help="also time Leiden alone on a graph this large",
    )
    parser.add_argument(
        "--workdir", type=Path, default=None, help="where the projects go (default: a new temporary folder)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the projects after the run")
    parser.add_argument(
        "--add-document",
        type=Path,
        nargs="*",
        default=[],
        metavar="ROOT",
        help="kept offline projects: add one document to each and index again (the corpus steps re-run)",
    )
    parser.add_argument(
        "--corpus-processes",
        nargs="*",
        choices=["auto", "always", "never"],
        default=[],
        help="index.corpus_processes of the offline sizes and --add-document runs, each in turn (A/B in one run)",
    )
    parser.add_argument(
        "--results", type=results_name, default="scale.json", help="file name under bench/results/ ('-': print only)"
    )
    args = parser.parse_args()

    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="bench_scale_"))
    workdir.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {
        "command": invocation(),
        "machine": machine_info(),
        "git": git_state(),
        "load_start": load_average(),
        "runs": [],
    }
    try:
        modes = args.corpus_processes or [None]
        for documents in args.sizes:
            for mode in modes:
                name = f"offline_{documents}" + (f"_{mode}" if mode else "")
                run = index_corpus(workdir / name, documents, offline_env(), corpus_processes=mode)
                results["runs"].append({"kind": "offline" + _mode_label(mode), **run})
                print(
                    f"  offline {documents}{_mode_label(mode)}: {run['wall_s']:.1f} s wall, "
                    f"{100 * run['orchestration_share']:.1f}% orchestration",
                    flush=True,
                )
        for root in args.add_document:
            for mode in modes:
                run = add_one_document(root, offline_env(), mode)
                results["runs"].append({"kind": "offline, one document added" + _mode_label(mode), **run})
                print(f"  one document added to {root}{_mode_label(mode)}: {run['wall_s']:.1f} s wall", flush=True)
        for documents in args.jsonl:
            run = index_corpus(workdir / f"jsonl_{documents}", documents, offline_env(), jsonl=True)
            results["runs"].append({"kind": "offline jsonl", **run})
            print(f"  offline jsonl {documents}: {run['wall_s']:.1f} s wall", flush=True)
        if args.postgres_sizes:
            from graphrag_assets_testkit.postgres_server import start_postgres

            postgres = start_postgres()
            try:
                for documents in args.postgres_sizes:
                    url = postgres.create_database(f"scale_{documents}")
                    run = index_corpus(
                        workdir / f"postgres_{documents}",
                        documents,
                        offline_env(),
                        init_args=("--instance", "postgres", "--postgres-url", url),
                    )
                    results["runs"].append({"kind": "offline, Dagster in PostgreSQL", **run})
                    print(f"  offline {documents} (PostgreSQL): {run['wall_s']:.1f} s wall", flush=True)
            finally:
                postgres.stop()
        if args.standin_sizes:
            with StandInServer(workdir, latency_ms=0.0) as server:
                for documents in args.standin_sizes:
                    run = index_corpus(workdir / f"standin_{documents}", documents, product_env(server))
                    results["runs"].append(
                        {"kind": "stand-in 0 ms", **run, "server_cpu_s": round(server.cpu_seconds(), 1)}
                    )
                    print(f"  stand-in {documents}: {run['wall_s']:.1f} s wall", flush=True)
    finally:
        if not args.keep and args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    if args.leiden:
        results["leiden"] = leiden_limit(*args.leiden)
    results["load_end"] = load_average()
    results["growth"] = growth_exponents(results["runs"])
    print(render(results))
    if args.results != "-":
        path = write_results(args.results, results)
        print(f"\nwritten: {path.relative_to(Path(__file__).resolve().parents[1])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
