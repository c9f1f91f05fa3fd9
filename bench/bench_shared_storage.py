"""The cost of an index on shared storage: the sample corpus indexed offline with ``storage.shared_url``
on moto's S3 server (loopback) vs the embedded default, and a cold query from another machine.

    python bench/bench_shared_storage.py [--repeats 3]

Each repeat, in one run, with the variants taking turns:

- **index, local**: ``graphrag-assets index`` (nlp method, local embedder) of the sample into a new
  project, no shared location;
- **index, S3**: the same with ``storage.shared_url: s3://bench/…`` on moto: the run checks the
  shared pointer first, and after publishing copies the checkpointed DuckDB file (and LanceDB
  folder) and swaps the pointer;
- **cold query, local**: ``query --method local --json`` in the indexed project (a new process);
- **cold query, S3 reader**: the same in a project folder holding graphrag.yaml only, whose first
  command fetches the build into its cache; **warm query, S3 reader**: the next one (pointer read only).

Every figure is the wall of a whole CLI process (start-up included), median of the repeats; the
load average is printed with them, since this machine is shared.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from graphrag_assets_testkit.builds import env_without_endpoint
from graphrag_assets_testkit.projects import make_project
from graphrag_assets_testkit.s3_server import start_s3_server

QUESTION = "Who is Søren Holm, and what did he do during Storm Odile?"
OFFLINE = "method: nlp\nllm:\n  embeddings: local\n"


def timed(root: Path, *args: str, env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "graphrag_assets.cli.main", args[0], "--root", str(root), *args[1:]],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    if done.returncode != 0:
        raise SystemExit(f"{args[0]} failed in {root}: {done.stderr.strip()}")
    return time.perf_counter() - started


def one_round(base: Path, turn: int, env: dict[str, str], bucket_url: str) -> dict[str, float]:
    local = make_project(base / f"local-{turn}")
    (local / "graphrag.yaml").write_text(OFFLINE, encoding="utf-8")
    shared_settings = OFFLINE + f"storage:\n  shared_url: {bucket_url}/round-{turn}\n"
    shared = make_project(base / f"s3-{turn}")
    (shared / "graphrag.yaml").write_text(shared_settings, encoding="utf-8")
    reader = base / f"reader-{turn}"
    reader.mkdir()
    (reader / "graphrag.yaml").write_text(shared_settings, encoding="utf-8")
    query = ("query", QUESTION, "--method", "local", "--json")
    order = [("index, local", local, ("index",)), ("index, S3", shared, ("index",))]
    if turn % 2:
        order.reverse()
    figures = {name: timed(root, *args, env=env) for name, root, args in order}
    figures["cold query, local"] = timed(local, *query, env=env)
    figures["cold query, S3 reader"] = timed(reader, *query, env=env)
    figures["warm query, S3 reader"] = timed(reader, *query, env=env)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    server = start_s3_server()
    try:
        env = {**env_without_endpoint(), **server.env()}
        bucket = server.create_bucket("bench")
        rounds = []
        with tempfile.TemporaryDirectory(prefix="bench_shared_") as folder:
            for turn in range(args.repeats):
                rounds.append(one_round(Path(folder), turn, env, bucket))
    finally:
        server.stop()
    load = os.getloadavg()
    medians = {name: statistics.median(r[name] for r in rounds) for name in rounds[0]}
    print(f"load average: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} (2 cores); median of {args.repeats} runs")
    print("| step | wall (s) |\n|---|---|")
    for name, seconds in medians.items():
        print(f"| {name} | {seconds:.2f} |")
    print(f"index S3 / local: {medians['index, S3'] / medians['index, local']:.2f}x")
    print(f"cold query S3 reader / local: {medians['cold query, S3 reader'] / medians['cold query, local']:.2f}x")


if __name__ == "__main__":
    main()
