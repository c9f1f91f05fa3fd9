"""Crash fuzz: kill an incremental `index` at random moments, N times, and check every outcome.

    python bench/bench_crash_fuzz.py [--kills 100] [--seed 33] [--workdir /tmp/graphrag-crash-fuzz]

Offline (``nlp`` method, local embedder, LanceDB tables kept) on the bundled sample. Each trial
copies the previous build, edits the input (one document edited, one added, one deleted), starts
`index` and sends SIGKILL after a random delay up to the time an uninterrupted update takes. After
each kill a reader must see one build whole — every text unit the graph cites exists and has a
vector in the LanceDB version the build recorded — equal to the previous build or the new one, and
the next `index` must end equal to a clean build of the new input (see
``graphrag_assets_testkit/crash_fuzz.py``). ``make test`` runs two such trials; this runs many.
Results: markdown on stdout and ``bench/results/crash_fuzz.json``.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import header_block, invocation, load_average, machine_info, markdown_table, write_results  # noqa: E402

from graphrag_assets_testkit.builds import run_index  # noqa: E402
from graphrag_assets_testkit.crash_fuzz import SETTINGS, edit, kill_at_random  # noqa: E402
from graphrag_assets_testkit.projects import make_project  # noqa: E402


def _built(root: Path, edited: bool) -> Path:
    make_project(root)
    (root / "graphrag.yaml").write_text(SETTINGS, encoding="utf-8")
    if edited:
        edit(root)
    done = run_index(root)
    if done.returncode != 0:
        raise SystemExit(f"indexing {root} failed: {done.stderr[-2000:]}")
    return root


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kills", type=int, default=100)
    parser.add_argument("--seed", type=int, default=33)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/graphrag-crash-fuzz"))
    args = parser.parse_args()
    shutil.rmtree(args.workdir, ignore_errors=True)
    load_start = load_average()
    previous = _built(args.workdir / "previous", edited=False)
    clean = _built(args.workdir / "clean", edited=True)
    timed = args.workdir / "timed"
    shutil.copytree(previous, timed)
    edit(timed)
    started = time.monotonic()
    run_index(timed)
    longest = time.monotonic() - started

    rng = random.Random(args.seed)
    outcomes: Counter[str] = Counter()
    failures: list[str] = []
    for number in range(args.kills):
        root = args.workdir / f"trial{number}"
        try:
            trial = kill_at_random(previous, clean, root, rng, longest)
            outcomes[f"killed, reader saw the {trial.seen} build" if trial.killed else "finished before the kill"] += 1
        except AssertionError as failure:
            failures.append(f"trial {number}: {failure}")
        shutil.rmtree(root, ignore_errors=True)
        print(f"trial {number + 1}/{args.kills}: {len(failures)} failure(s) so far", file=sys.stderr)

    print(header_block("crash fuzz", invocation(), load_start, load_average(), machine_info()))
    print()
    rows = [[outcome, count] for outcome, count in sorted(outcomes.items())] + [["failed", len(failures)]]
    print(markdown_table(["outcome", "trials"], rows))
    print(f"\nan uninterrupted update took {longest:.1f} s; every passing trial ended equal to a clean build")
    for failure in failures:
        print(f"- {failure}")
    path = write_results(
        "crash_fuzz.json",
        {"kills": args.kills, "seed": args.seed, "update_seconds": longest, "outcomes": outcomes, "failures": failures},
    )
    print(f"\nresults: {path}", file=sys.stderr)
    raise SystemExit(1 if failures else 0)


if __name__ == "__main__":
    main()
