"""Offline ("nlp" method) indexing time and peak memory on real corpora.

    python bench/bench_nlp.py [--corpus carol lihua] [--workdir /tmp/graphrag-bench]

For each corpus a fresh project directory is made under ``--workdir`` (``carol/``, ``lihua/``),
the corpus files are copied into ``data/input`` and ``graphrag-assets index --root DIR`` runs as
a child process with every ``OPENAI_*`` variable removed from its environment, so the method
resolves to ``nlp`` (noun-phrase graph, extractive reports, local hashing embedder). Then the
same command runs again with nothing changed (the incremental no-op).

Each command runs under the measuring wrapper of ``bench/common.py``: a fresh process that
starts the command, waits for it and reads ``resource.getrusage(RUSAGE_CHILDREN)``, so wall
time, CPU time and peak RSS cover that one command. Peak RSS is the largest resident set of any
single process in the command's tree (Linux ``ru_maxrss``), not a sum.

Corpora (in ../shared; skipped with a message when absent):

- ``carol``: *A Christmas Carol* (``nano-graphrag/tests/mock_data.txt``, one file);
- ``lihua``: the 442 LiHua-World chat logs (``MiniRAG/dataset/LiHua-World/data/LiHuaWorld.zip``,
  extracted to a temporary folder; its week folders are kept under ``data/input``).

Entity / relationship / community / report / text-unit counts come from
``graphrag-assets sql ... --json``. Results: printed as markdown and written to
``bench/results/nlp.json`` (left alone when every corpus was skipped). The LiHua project stays in
``--workdir`` for ``bench/bench_lihua_retrieval.py``.

Also holds what ``bench_query.py`` and ``bench_lihua_retrieval.py`` share: the offline
environment, a percentile, the LiHua corpus and its project.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import (  # noqa: E402
    REPO_ROOT,
    cli_command,
    header_block,
    invocation,
    load_average,
    machine_info,
    markdown_table,
    measure,
    shown_command,
    write_results,
)

from graphrag_assets_testkit.shared_data import CHRISTMAS_CAROL, SHARED_DATA  # noqa: E402

DEFAULT_WORKDIR = Path(tempfile.gettempdir()) / "graphrag-bench"
LIHUA_DIR = SHARED_DATA / "MiniRAG" / "dataset" / "LiHua-World"
LIHUA_ZIP = LIHUA_DIR / "data" / "LiHuaWorld.zip"
LIHUA_QA = LIHUA_DIR / "qa" / "query_set.json"
CORPORA = ("carol", "lihua")

COUNT_QUERY = (
    "select (select count(*) from documents) as documents, (select count(*) from text_units) as text_units, "
    "(select count(*) from entities) as entities, (select count(*) from relationships) as relationships, "
    "(select count(*) from communities) as communities, (select count(*) from community_reports) as community_reports, "
    "(select coalesce(max(level) + 1, 0) from communities) as levels"
)


# --- shared with bench_query.py and bench_lihua_retrieval.py -------------------------------------------


def offline_env() -> dict[str, str]:
    """This environment without anything that would point the product at a model server."""
    return {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_") and k != "GRAPHRAG_ROOT"}


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (q in 0..100) of a non-empty sequence."""
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


# --- corpora ------------------------------------------------------------------------------------------


def extract_lihua(destination: Path) -> Path:
    """Extract the LiHua-World zip; returns the folder holding the week folders."""
    with zipfile.ZipFile(LIHUA_ZIP) as archive:
        archive.extractall(destination)
    return destination / "LiHua-World"


def corpus_files(corpus: str, scratch: Path) -> tuple[Path, list[Path]] | None:
    """(base folder, files) of a corpus, or None when its ../shared data is absent."""
    if corpus == "carol":
        return (CHRISTMAS_CAROL.parent, [CHRISTMAS_CAROL]) if CHRISTMAS_CAROL.exists() else None
    if corpus == "lihua":
        if not LIHUA_ZIP.exists():
            return None
        base = extract_lihua(scratch)
        return base, sorted(base.rglob("*.txt"))
    raise ValueError(f"unknown corpus {corpus!r}")


def prepare_project(root: Path, base: Path, files: Sequence[Path]) -> None:
    """A fresh project folder with ``files`` copied into data/input (paths relative to ``base`` kept)."""
    if root.exists():
        shutil.rmtree(root)
    for file in files:
        target = root / "data" / "input" / file.relative_to(base)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(file, target)


def index_counts(root: Path) -> dict[str, int]:
    done = subprocess.run(
        cli_command("sql", COUNT_QUERY, "--root", str(root), "--json"),
        env=offline_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)[0]


def index_corpus(corpus: str, root: Path, scratch: Path) -> dict[str, Any] | None:
    """Fresh project, first index, no-change re-index and counts; None when the corpus is absent."""
    found = corpus_files(corpus, scratch)
    if found is None:
        return None
    base, files = found
    prepare_project(root, base, files)
    command = cli_command("index", "--root", str(root))
    first = measure(command, env=offline_env())
    again = measure(command, env=offline_env())
    return {
        "corpus": corpus,
        "project": str(root),
        "files": len(files),
        "input_mb": round(sum(f.stat().st_size for f in files) / 1e6, 3),
        "command": shown_command(command),
        "first_index": first.figures(),
        "no_change_reindex": again.figures(),
        "counts": index_counts(root),
    }


# --- main ---------------------------------------------------------------------------------------------


def print_report(results: list[dict[str, Any]]) -> None:
    rows = []
    for r in results:
        for run in ("first_index", "no_change_reindex"):
            m = r[run]
            rows.append(
                [
                    r["corpus"],
                    run.replace("_", " "),
                    r["files"],
                    r["input_mb"],
                    m["wall_s"],
                    m["cpu_s"],
                    m["user_s"],
                    m["system_s"],
                    m["peak_rss_mb"],
                ]
            )
    print(
        markdown_table(
            ["corpus", "run", "files", "input MB", "wall s", "CPU s", "user s", "sys s", "peak RSS MB"], rows
        )
    )
    print()
    count_columns = (
        "documents",
        "text_units",
        "entities",
        "relationships",
        "communities",
        "community_reports",
        "levels",
    )
    print(
        markdown_table(
            ["corpus", "documents", "text units", "entities", "relationships", "communities", "reports", "levels"],
            [[r["corpus"], *(r["counts"][k] for k in count_columns)] for r in results],
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", nargs="+", default=list(CORPORA), choices=CORPORA)
    parser.add_argument("--workdir", type=Path, default=DEFAULT_WORKDIR, help="project folders go here")
    args = parser.parse_args()

    info, command, load_start = machine_info(), invocation(), load_average()
    results, skipped = [], []
    with tempfile.TemporaryDirectory(prefix="bench-nlp-") as scratch:
        for corpus in args.corpus:
            print(f"indexing {corpus} ...", file=sys.stderr, flush=True)
            result = index_corpus(corpus, args.workdir / corpus, Path(scratch) / corpus)
            if result is None:
                skipped.append(f"{corpus}: reference data not available under {SHARED_DATA}; skipped.")
            else:
                results.append(result)
    load_end = load_average()
    if not results:
        print("\n".join(skipped) + "\nNothing measured; bench/results/nlp.json left as it was.")
        return

    print(header_block("nlp-method indexing", command, load_start, load_end, info))
    print()
    print_report(results)
    for message in skipped:
        print(f"\n{message}")
    path = write_results(
        "nlp.json",
        {
            **info,
            "command": command,
            "load_average_start": load_start,
            "load_average_end": load_end,
            "results": results,
            "skipped": skipped,
        },
    )
    print(f"\nwritten to {path.relative_to(REPO_ROOT)}")


if __name__ == "__main__":
    main()
