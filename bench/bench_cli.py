"""Cold CLI commands: wall time and peak RSS of each command in a new process, median of N.

    python bench/bench_cli.py [--repeats 5] [--workdir /tmp/graphrag-bench] [--corpus sample carol] [--baseline DIR]

What a user waits for when typing a command: a new ``graphrag-assets`` process (console script
of the venv), imports, opening the index, the work, exit. Two offline projects (no ``OPENAI_*``
variable, so the method is ``nlp`` and queries answer extractively without a model):

- ``sample``: the bundled ``data/input`` (7 files), indexed into ``WORKDIR/cli-sample``;
- ``carol``: *A Christmas Carol* from ``../shared`` (skipped when absent), ``WORKDIR/cli-carol``.

Each project is indexed fresh first (not timed here; ``bench_nlp.py`` times indexing). Then every
command runs ``--repeats`` times, the commands taking turns so that load from other processes
spreads evenly over them; each run is one process tree under the measuring wrapper of
``bench/common.py`` (wall time, and peak RSS of the largest process). The table gives the median
and the fastest run; the issue's targets (sample index: basic ≤ 0.8 s, local ≤ 1.0 s, sql and
status ≤ 0.6 s, no-change index ≤ 1.5 s) are printed beside the median. Results: markdown on
stdout and ``bench/results/cli.json``.

``--baseline DIR`` also runs every command with another version of the package (``DIR`` holds its
``graphrag_assets`` folder, e.g. ``git archive main graphrag_assets | tar -x -C DIR``) first on
``PYTHONPATH``, taking turns with this one on the same index: on a shared machine the ratio of the
two medians is the figure that survives the load.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_nlp import offline_env, prepare_project  # noqa: E402
from common import (  # noqa: E402
    REPO_ROOT,
    cli_command,
    git_state,
    header_block,
    invocation,
    load_average,
    machine_info,
    markdown_table,
    measure,
    write_results,
)

from graphrag_assets_testkit.shared_data import CHRISTMAS_CAROL  # noqa: E402

QUESTIONS = {
    "sample": "Who is Søren Holm, and what did he do during Storm Odile?",
    "carol": "What does Scrooge learn from the Ghost of Christmas Yet to Come?",
}
ENTITY = {"sample": "SØREN HOLM", "carol": "EBENEZER SCROOGE"}
TARGETS_S = {
    "query --method basic": 0.8,
    "query --method local": 1.0,
    "sql": 0.6,
    "status": 0.6,
    "index (no change)": 1.5,
}


def commands(corpus: str, root: Path) -> dict[str, list[str]]:
    where = ["--root", str(root)]
    question = QUESTIONS[corpus]
    return {
        "--help": cli_command("--help"),
        "status": cli_command("status", *where),
        "sql": cli_command("sql", "select count(*) as entities from entities", *where),
        "query --method basic": cli_command("query", question, "--method", "basic", *where),
        "query --method local": cli_command("query", question, "--method", "local", *where),
        "query --method global": cli_command("query", question, "--method", "global", *where),
        "query --method drift": cli_command("query", question, "--method", "drift", *where),
        "show entity": cli_command("show", "entity", ENTITY[corpus], *where),
        "index (no change)": cli_command("index", *where),
    }


def corpus_input(corpus: str) -> tuple[Path, list[Path]] | None:
    if corpus == "sample":
        base = REPO_ROOT / "data" / "input"
        return base, sorted(p for p in base.rglob("*") if p.is_file())
    return (CHRISTMAS_CAROL.parent, [CHRISTMAS_CAROL]) if CHRISTMAS_CAROL.exists() else None


def figures(found_runs: list[Any]) -> dict[str, Any]:
    return {
        "median_s": round(statistics.median(m.wall_s for m in found_runs), 3),
        "best_s": round(min(m.wall_s for m in found_runs), 3),
        "peak_rss_mb": round(statistics.median(m.peak_rss_mb for m in found_runs), 1),
        "runs_s": [m.wall_s for m in found_runs],
    }


def time_corpus(
    corpus: str, root: Path, repeats: int, baseline: Path | None = None
) -> dict[str, dict[str, Any]] | None:
    found = corpus_input(corpus)
    if found is None:
        print(f"skipped {corpus}: its text is not in ../shared", file=sys.stderr)
        return None
    prepare_project(root, *found)
    env = offline_env()
    measure(cli_command("index", "--root", str(root)), env=env)
    old_env = {**env, "PYTHONPATH": str(baseline)} if baseline else None
    runs: dict[str, list[Any]] = {name: [] for name in commands(corpus, root)}
    old_runs: dict[str, list[Any]] = {name: [] for name in runs}
    for _ in range(repeats):
        for name, command in commands(corpus, root).items():
            runs[name].append(measure(command, env=env))
            if old_env:
                old_runs[name].append(measure(command, env=old_env))
    timed = {name: figures(found_runs) for name, found_runs in runs.items()}
    if old_env:
        for name, found_runs in old_runs.items():
            timed[name]["baseline"] = figures(found_runs)
            timed[name]["ratio"] = round(timed[name]["median_s"] / timed[name]["baseline"]["median_s"], 2)
    return timed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "graphrag-bench")
    parser.add_argument("--corpus", nargs="+", choices=["sample", "carol"], default=["sample", "carol"])
    parser.add_argument(
        "--baseline",
        type=Path,
        default=None,
        help="folder holding another version's graphrag_assets package, timed in turns",
    )
    args = parser.parse_args()
    machine, load_start = machine_info(), load_average()
    results: dict[str, Any] = {}
    for corpus in args.corpus:
        root = args.workdir / f"cli-{corpus}"
        timed = time_corpus(corpus, root, args.repeats, args.baseline)
        if timed is not None:
            results[corpus] = timed
    load_end = load_average()
    print(header_block("cold CLI commands", invocation(), load_start, load_end, machine))
    for corpus, timed in results.items():
        print(f"\n### {corpus} (median of {args.repeats} cold runs)\n")
        head = ["command", "median s", "best s", "peak RSS MB", "target s (sample)"]
        rows = [
            [name, f["median_s"], f["best_s"], f["peak_rss_mb"], TARGETS_S.get(name, "")] for name, f in timed.items()
        ]
        if args.baseline:
            head += ["baseline median / best s", "ratio of medians"]
            for row, f in zip(rows, timed.values()):
                row += [f"{f['baseline']['median_s']} / {f['baseline']['best_s']}", f["ratio"]]
        print(markdown_table(head, rows))
    if results:
        path = write_results(
            "cli.json",
            {
                "machine": machine,
                "git": git_state(),
                "command": invocation(),
                "repeats": args.repeats,
                "baseline": str(args.baseline) if args.baseline else None,
                "load_average_start": load_start,
                "load_average_end": load_end,
                "results": results,
                "targets_s": TARGETS_S,
            },
        )
        print(f"\nwritten to {path.relative_to(REPO_ROOT)}")


if __name__ == "__main__":
    main()
