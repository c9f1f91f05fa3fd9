"""Peak RSS of the nlp graph step's phases, in this process, on an index's extraction rows.

    python bench/profile_graph_step.py PROJECT_ROOT [--scratch /tmp/graph_step.duckdb] [--update]
        [--memory-limit 512MB]

Reads ``graph_extractions`` and ``text_units`` of the project's index (built by ``index``, e.g. a
project kept by ``bench/bench_scale.py --keep``), builds the graph as the ``graph`` step does and
writes its relationships to a scratch DuckDB file, then runs the step's checks on them; prints each
phase's peak resident memory (sampled every 20 ms) and the load average. ``--update``: with the
phrase descriptions the index stored, as an update's graph step has them (the descriptions phase
then reads only new units); ``--memory-limit``: DuckDB's limit for the relationships' write (the
step's own by default). Cheaper than a whole
``bench_scale`` run for finding what holds the graph step's memory (issue 35).
"""

from __future__ import annotations

import argparse
import os
import resource
import threading
import time
from pathlib import Path


def rss_mb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) // 1024
    return 0


class Phases:
    """Peak RSS since the previous phase, sampled in a thread."""

    def __init__(self) -> None:
        self.peak = rss_mb()
        self.started = time.time()
        threading.Thread(target=self._sample, daemon=True).start()

    def _sample(self) -> None:
        while True:
            self.peak = max(self.peak, rss_mb())
            time.sleep(0.02)

    def done(self, name: str) -> None:
        print(f"| {name} | {self.peak} | {rss_mb()} | {time.time() - self.started:.1f} |", flush=True)
        self.peak, self.started = rss_mb(), time.time()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--scratch", type=Path, default=Path("/tmp/graph_step.duckdb"))
    parser.add_argument("--update", action="store_true", help="use the index's stored phrase descriptions")
    parser.add_argument("--memory-limit", default=None, help="DuckDB's limit for the write (default: the step's)")
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()}")
    print("| phase | peak RSS MB | RSS after MB | seconds |\n|---|---|---|---|")
    phases = Phases()
    from graphrag_assets.core.made_ahead import made_ahead
    from graphrag_assets.core.settings import load_settings
    from graphrag_assets.index import nlp_graph
    from graphrag_assets.index.corpus_graph import extraction_columns, noun_graph
    from graphrag_assets.storage import corpus
    from graphrag_assets.storage.database import let_go
    from graphrag_assets.storage.tables import read_table

    database = args.root / "data" / "graphrag.duckdb"
    args.scratch.unlink(missing_ok=True)
    settings = load_settings(args.root)
    # the extraction rows as the step reads them: only the columns its method's graph uses
    extractions = read_table(database, "graph_extractions", columns=extraction_columns(settings))
    text_units = read_table(database, "text_units")
    phases.done(f"read inputs ({extractions.height:,} extraction rows)")
    for name in ("code_noun_graph", "prune_codes", "kept_part"):
        measured = getattr(nlp_graph, name)

        def timed(*a, _measured=measured, _name=name, **k):
            result = _measured(*a, **k)
            phases.done(_name)
            return result

        setattr(nlp_graph, name, timed)
    stored = None
    if args.update:
        from graphrag_assets.index.phrase_descriptions import DESCRIPTIONS, UNITS, Stored
        from graphrag_assets.storage.table_names import PHRASE_DESCRIPTIONS, PHRASE_UNITS

        stored = Stored(
            corpus.read_kept_rows(database, PHRASE_DESCRIPTIONS, list(DESCRIPTIONS)),
            corpus.read_kept_rows(database, PHRASE_UNITS, list(UNITS)),
        )
    built = noun_graph(settings, extractions, text_units, None, None, stored)
    del extractions
    phases.done("descriptions and entities")
    entities = built.entities
    batches = made_ahead(built.relationships.batches())  # as the step does
    limit = args.memory_limit or corpus.batches_memory_limit(built.relationships.count)
    written = corpus.write_staged_batches(args.scratch, "relationships", batches, limit, checkpoint=True)
    del batches
    del built
    phases.done(f"write {written:,} relationships (DuckDB limit {limit})")
    corpus.staged_graph_problems(args.scratch, entities)
    phases.done("checks in DuckDB")
    let_go(args.scratch)
    phases.done("close the file (its checkpoint)")
    print(
        f"\nprocess peak: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MB; load average at end: {os.getloadavg()}"
    )
    args.scratch.unlink(missing_ok=True)


if __name__ == "__main__":
    main()
