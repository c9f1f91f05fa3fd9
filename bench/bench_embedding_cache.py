"""Cached embeddings in the response cache: reading them back, and writing them.

    python bench/bench_embedding_cache.py [--rows 573] [--dim 1536] [--repeat 5]

Reading: fills two caches with the same ``--rows`` random vectors, one written by today's cache
(``vector BLOB``, little-endian float32) and one laid out as caches were before (``vector
FLOAT[]``, which :class:`~graphrag_assets.llm.cache.LLMCache` still reads until its first write
rewrites it); then one ``get_embeddings`` of every key, as a re-run that hits the cache does.

Writing: ``--rows`` new vectors into a cache that holds ``--rows // 3`` already, the way today's
cache writes them (``put_embeddings`` and ``close``: a delete and an insert in one transaction)
and with the statement it used before, DuckDB's ``insert or replace`` of the same rows.

Each measurement runs in a new process, the variants taking turns ``--repeat`` times: its wall
time and how much the process's resident memory grew (peak, sampled every 2 ms). 573 rows is the
entity count of the *A Christmas Carol* index. Medians are printed with the load average; writes
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
from collections.abc import Callable
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

RESULTS = REPO_ROOT / "bench" / "results"
VARIANTS = (
    ("read_bytes", "read, BLOB of float32 (today)"),
    ("read_lists", "read, FLOAT[] lists (before)"),
    ("write_delete_insert", "write, delete + insert (today)"),
    ("write_insert_or_replace", "write, insert or replace (before)"),
)


def _resident_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _vectors(rows: int, dim: int, seed: int):
    import numpy as np

    return np.random.default_rng(seed).standard_normal((rows, dim), dtype=np.float32)


def _keys(rows: int, offset: int = 0) -> list[str]:
    return [f"{i:064x}" for i in range(offset, offset + rows)]


def fill(db: Path, layout: str, rows: int, dim: int) -> None:
    """A cache holding ``rows`` vectors, as bytes (today) or as ``FLOAT[]`` lists (before)."""
    import duckdb

    from graphrag_assets.llm.cache import EMBEDDING_TABLE, LLMCache

    vectors = _vectors(rows, dim, 7)
    keys = _keys(rows)
    if layout == "bytes":
        cache = LLMCache(db)
        cache.put_embeddings("bench", dict(zip(keys, vectors)))
        cache.close()
    else:
        with duckdb.connect(str(db)) as conn:
            conn.execute(f"create table {EMBEDDING_TABLE} (key VARCHAR PRIMARY KEY, model VARCHAR, vector FLOAT[])")
            conn.execute(
                f"insert into {EMBEDDING_TABLE} select unnest($1::VARCHAR[]), 'bench', unnest($2::FLOAT[][])",
                [keys, vectors.tolist()],
            )


def measured(work: Callable[[], object]) -> dict[str, float]:
    """Seconds and peak resident growth of ``work()`` in this process."""
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
    work()
    seconds = time.perf_counter() - started
    done.set()
    sampler.join()
    return {"seconds": seconds, "peak_growth_mb": max(peak, _resident_mb()) - base}


def read_all(db: Path, rows: int) -> dict[str, float]:
    """One lookup of every key, in this (new) process."""
    from graphrag_assets.llm.cache import LLMCache

    keys = _keys(rows)
    cache = LLMCache(db)
    asyncio.run(cache.get_embeddings(keys[:1]))  # opens the file and loads the key set
    found: dict = {}
    figures = measured(lambda: found.update(asyncio.run(cache.get_embeddings(keys))))
    cache.close()
    if len(found) != rows:
        raise SystemExit(f"expected {rows} cached vectors, found {len(found)}")
    return figures


def write_new(db: Path, rows: int, dim: int, statement: str) -> dict[str, float]:
    """``rows`` new vectors written into the cache at ``db``, in this (new) process."""
    from graphrag_assets.llm.cache import EMBEDDING_TABLE, LLMCache
    from graphrag_assets.storage.database import connect

    vectors = _vectors(rows, dim, 11)
    keys = _keys(rows, offset=10**9)
    if statement == "delete_insert":
        cache = LLMCache(db)

        def work() -> None:
            cache.put_embeddings("bench", dict(zip(keys, vectors)))
            cache.close()
    else:

        def work() -> None:
            with connect(db) as conn:
                conn.execute(
                    f"insert or replace into {EMBEDDING_TABLE} select unnest($1::VARCHAR[]), 'bench', "
                    "unnest($2::BLOB[])",
                    [keys, [v.tobytes() for v in vectors]],
                )

    return measured(work)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=573)
    parser.add_argument("--dim", type=int, default=1536)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--child", nargs=2, metavar=("VARIANT", "DB"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        variant, db = args.child[0], Path(args.child[1])
        figures = (
            read_all(db, args.rows)
            if variant.startswith("read_")
            else write_new(db, args.rows, args.dim, variant.removeprefix("write_"))
        )
        print(json.dumps(figures))
        return
    load_start = [round(x, 2) for x in os.getloadavg()]
    runs: dict[str, list[dict[str, float]]] = {variant: [] for variant, _ in VARIANTS}
    with tempfile.TemporaryDirectory() as tmp:
        readable = {layout: Path(tmp) / f"{layout}.duckdb" for layout in ("bytes", "lists")}
        for layout, db in readable.items():
            fill(db, layout, args.rows, args.dim)
        for turn in range(args.repeat):
            for variant, _ in VARIANTS:
                if variant.startswith("read_"):
                    db = readable[variant.removeprefix("read_")]
                else:  # a fresh cache holding a third as many vectors for every write
                    db = Path(tmp) / f"{variant}-{turn}.duckdb"
                    fill(db, "bytes", max(1, args.rows // 3), args.dim)
                out = subprocess.run(
                    [
                        sys.executable,
                        __file__,
                        "--child",
                        variant,
                        str(db),
                        "--rows",
                        str(args.rows),
                        "--dim",
                        str(args.dim),
                    ],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                runs[variant].append(json.loads(out.stdout))
    load_end = [round(x, 2) for x in os.getloadavg()]
    summary = {
        variant: {k: round(statistics.median(r[k] for r in runs[variant]), 4) for k in ("seconds", "peak_growth_mb")}
        for variant in runs
    }
    print(
        f"{args.rows} vectors of {args.dim} dimensions, median of {args.repeat} "
        f"(load average {load_start} -> {load_end})"
    )
    for variant, label in VARIANTS:
        print(
            f"  {label:36s} {summary[variant]['seconds'] * 1000:8.1f} ms   +{summary[variant]['peak_growth_mb']:.1f} MB"
        )
    for today, before in (("read_bytes", "read_lists"), ("write_delete_insert", "write_insert_or_replace")):
        print(
            f"  {today.split('_')[0]}, time today / before: {summary[today]['seconds'] / summary[before]['seconds']:.2f}"
        )
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "embedding_cache.json").write_text(
        json.dumps(
            {
                "rows": args.rows,
                "dim": args.dim,
                "repeat": args.repeat,
                "median": summary,
                "runs": runs,
                "load_average": {"start": load_start, "end": load_end},
            },
            indent=1,
        )
        + "\n"
    )


if __name__ == "__main__":
    main()
