"""Reading cached embeddings back: vectors stored as float32 bytes against ``FLOAT[]`` lists.

    python bench/bench_embedding_cache.py [--rows 573] [--dim 1536] [--repeat 5]

Fills two response caches with the same ``--rows`` random vectors: one written by today's cache
(``vector BLOB``, little-endian float32) and one laid out as caches were before (``vector
FLOAT[]``, which :class:`~graphrag_assets.llm.cache.LLMCache` still reads until its first write
rewrites it). Then, in a new process each time (alternating, ``--repeat`` times), one
``get_embeddings`` of every key, as a re-run that hits the cache does: its wall time and how much
the process's resident memory grew (peak, sampled every 2 ms). 573 rows is the entity count of
the *A Christmas Carol* index. Medians are printed with the load average; writes
bench/results/embedding_cache.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

RESULTS = REPO_ROOT / "bench" / "results"
LAYOUTS = (("bytes", "BLOB of float32 (today)"), ("lists", "FLOAT[] lists (before)"))


def _resident_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def fill(db: Path, layout: str, rows: int, dim: int) -> list[str]:
    """A cache holding ``rows`` vectors in ``layout``; returns their keys."""
    import duckdb
    import numpy as np

    from graphrag_assets.llm.cache import EMBEDDING_TABLE, LLMCache

    vectors = np.random.default_rng(7).standard_normal((rows, dim), dtype=np.float32)
    keys = [f"{i:064x}" for i in range(rows)]
    if layout == "bytes":
        cache = LLMCache(db)
        cache.put_embeddings("bench", dict(zip(keys, vectors)))
        cache.close()
    else:
        with duckdb.connect(str(db)) as conn:
            conn.execute(f"create table {EMBEDDING_TABLE} (key VARCHAR PRIMARY KEY, model VARCHAR, vector FLOAT[])")
            conn.execute(f"insert into {EMBEDDING_TABLE} select unnest($1::VARCHAR[]), 'bench', unnest($2::FLOAT[][])",
                         [keys, vectors.tolist()])
    return keys


def look_up(db: Path, rows: int) -> dict[str, float]:
    """One lookup of every key, in this (new) process: seconds and resident growth."""
    from graphrag_assets.llm.cache import LLMCache

    keys = [f"{i:064x}" for i in range(rows)]
    cache = LLMCache(db)
    asyncio.run(cache.get_embeddings(keys[:1]))  # opens the file and loads the key set
    base = peak = _resident_mb()
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, _resident_mb())
            time.sleep(0.002)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    started = time.perf_counter()
    found = asyncio.run(cache.get_embeddings(keys))
    seconds = time.perf_counter() - started
    done.set()
    sampler.join()
    cache.close()
    if len(found) != rows:
        raise SystemExit(f"expected {rows} cached vectors, found {len(found)}")
    return {"seconds": seconds, "peak_growth_mb": max(peak, _resident_mb()) - base}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=573)
    parser.add_argument("--dim", type=int, default=1536)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--child", nargs=2, metavar=("DB", "ROWS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(look_up(Path(args.child[0]), int(args.child[1]))))
        return
    load_start = [round(x, 2) for x in os.getloadavg()]
    runs: dict[str, list[dict[str, float]]] = {layout: [] for layout, _ in LAYOUTS}
    with tempfile.TemporaryDirectory() as tmp:
        dbs = {layout: Path(tmp) / f"{layout}.duckdb" for layout, _ in LAYOUTS}
        for layout, db in dbs.items():
            fill(db, layout, args.rows, args.dim)
        for _ in range(args.repeat):
            for layout, db in dbs.items():
                out = subprocess.run([sys.executable, __file__, "--child", str(db), str(args.rows)],
                                     capture_output=True, text=True, check=True)
                runs[layout].append(json.loads(out.stdout))
    load_end = [round(x, 2) for x in os.getloadavg()]
    summary = {layout: {k: round(statistics.median(r[k] for r in runs[layout]), 4) for k in ("seconds", "peak_growth_mb")}
               for layout in runs}
    print(f"{args.rows} cached vectors of {args.dim} dimensions, one lookup of all, median of {args.repeat} "
          f"(load average {load_start} -> {load_end})")
    for layout, label in LAYOUTS:
        print(f"  {label:26s} {summary[layout]['seconds'] * 1000:7.1f} ms   +{summary[layout]['peak_growth_mb']:.1f} MB")
    ratio = summary["bytes"]["seconds"] / summary["lists"]["seconds"]
    print(f"  time, bytes / lists: {ratio:.2f}")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "embedding_cache.json").write_text(json.dumps(
        {"rows": args.rows, "dim": args.dim, "repeat": args.repeat, "median": summary, "runs": runs,
         "load_average": {"start": load_start, "end": load_end}}, indent=1) + "\n")


if __name__ == "__main__":
    main()
