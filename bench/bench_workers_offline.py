"""Document steps on 1 vs 2 workers, offline (issue 34's target: 2 workers >= 1.6x faster on 2 cores).

Two fresh projects index the same generated corpus (``bench/scale_corpus.py``, 1–3 KB documents)
with the offline method (noun phrases, local static embedder): one with ``index`` (the document
steps in the indexing process), one with ``index --workers 2`` (plan, two shard processes,
collect). The figure compared is the wall time of the document runs (Dagster's run start to end,
from the project's instance; 10,000 documents make two runs of at most 5,000). The corpus step
is the same for both and is not measured: once it starts, the index is interrupted (Ctrl-C, which
publishes nothing). The load average is printed before and after each run, since other work on
the machine moves the ratio.

    .venv/bin/python bench/bench_workers_offline.py --documents 10000
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import cli_command, dagster_timeline, load_average, markdown_table  # noqa: E402  (bench/ is not a package)
from scale_corpus import write_text_corpus  # noqa: E402

OFFLINE = "method: nlp\nllm:\n  embeddings: local\n"
DOCUMENT_JOBS = ("document_job", "document_workers_job")


def document_steps(root: Path, workers: int) -> list[str]:
    """Run ``index`` on ``root`` until its corpus run starts (then Ctrl-C); the document runs' ids."""
    from graphrag_assets.core.settings import load_settings
    from graphrag_assets.pipeline.runtime.instance import open_instance

    args = ["index", "--root", str(root)] + (["--workers", str(workers)] if workers > 1 else [])
    index = subprocess.Popen(cli_command(*args), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    instance = open_instance(load_settings(root, environ={}))
    try:
        while index.poll() is None:
            runs = instance.get_runs()
            if any(run.job_name == "corpus_job" for run in runs):
                index.send_signal(signal.SIGINT)
                break
            time.sleep(2)
        _, stderr = index.communicate()
        runs = [run for run in instance.get_runs() if run.job_name in DOCUMENT_JOBS]
        if not runs or any(not run.is_success for run in runs):
            raise SystemExit(f"the document runs of {root} failed: {stderr[-2000:]}")
        return [run.run_id for run in runs]
    finally:
        instance.dispose()


def index_once(root: Path, workers: int) -> dict:
    """Index ``root``'s documents; the command's wall up to the corpus run, the document runs' wall and the load."""
    load_before = load_average()
    started = time.monotonic()
    document_runs = document_steps(root, workers)
    wall = time.monotonic() - started
    timeline = dagster_timeline(root, document_runs)
    document_wall = sum(run["end"] - run["start"] for run in timeline["runs"])
    steps: dict[str, float] = {}  # per step name: the longest (parallel shards) summed over the runs
    for run_id in document_runs:
        longest: dict[str, float] = {}
        for step in (step for step in timeline["steps"] if step["run_id"] == run_id):
            name = step["step"].split("[")[0]
            longest[name] = max(longest.get(name, 0.0), step["end"] - step["start"])
        for name, seconds in longest.items():
            steps[name] = steps.get(name, 0.0) + seconds
    return {
        "workers": workers,
        "command_s": round(wall, 1),  # up to the corpus run
        "document_steps_s": round(document_wall, 1),
        "longest_step_s": {name: round(seconds, 1) for name, seconds in steps.items()},
        "load_before": load_before,
        "load_after": load_average(),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=10_000)
    parser.add_argument("--keep", type=Path, default=None, help="build the projects here and keep them")
    args = parser.parse_args()
    base = args.keep or Path(tempfile.mkdtemp(prefix="bench-workers-"))
    rows = []
    for workers in (1, 2):
        root = base / f"workers-{workers}"
        subprocess.run(cli_command("init", "--root", str(root)), check=True, capture_output=True)
        (root / "graphrag.yaml").write_text(OFFLINE, encoding="utf-8")
        write_text_corpus(root / "data" / "input", args.documents)
        rows.append(index_once(root, workers))
        print(json.dumps(rows[-1]), flush=True)
    one, two = rows
    print(
        markdown_table(
            ["workers", "document runs (s)", "index until the corpus run (s)", "load before", "load after"],
            [
                [row["workers"], row["document_steps_s"], row["command_s"], row["load_before"], row["load_after"]]
                for row in rows
            ],
        )
    )
    print(
        f"{args.documents} documents offline: 2 workers {one['document_steps_s'] / two['document_steps_s']:.2f}x "
        f"the speed of 1 on the document steps (target >= 1.6x); load average now {load_average()}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
