"""Peak RSS of the communities step's stages, alone in a fresh process, on an existing index.

    python bench/profile_communities_step.py INDEX.duckdb [--scratch DIR] [--stable] [--memory-limit 100MB]

Copies the index's DuckDB file to ``--scratch`` (the original is never written), loads its
``entities`` table as the step's input, then runs ``stage_communities`` as the ``communities``
step does (fresh clustering; ``--stable``: warm-started from the index's published communities)
and prints, per stage, the peak resident memory (VmHWM, reset between stages), the RSS after it
and its wall time, with the load average. ``--stable`` asks as the step does, with the last
build's clustering record: a warm start, and a fresh top level only when its measure is due.
The stages are the functions the step's module calls
(whichever of them it has), so the same script measures an older checkout for an A/B:
``PYTHONPATH=/path/to/other/checkout python bench/profile_communities_step.py ...``.
``--memory-limit`` lowers DuckDB's limit for the step's queries (``storage.community_graph``),
to reproduce on a small index what a larger one meets at the real limit (512 MB): the share of
the largest community in it grows with the corpus.
"""

from __future__ import annotations

import argparse
import functools
import os
import shutil
import time
from pathlib import Path

# Functions of graphrag_assets.pipeline.assets.communities timed as stages, when the module has them.
STAGES = (
    "_coded_relationships",  # before: the relationships coded in polars
    "staged_edge_list",  # after: DuckDB's normalized edge list
    "normalized_edges",
    "cluster_for_update",
    "community_rows",
    "write_staged_batches",  # the lists, made and written a chunk at a time
)


def status(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) // 1024
    return 0


class Stages:
    """Peak RSS (VmHWM) of each stage: the high-water mark is reset through ``clear_refs`` after each."""

    def __init__(self) -> None:
        self.started = self.began = time.time()
        self.peak = 0

    def done(self, name: str) -> None:
        peak = status("VmHWM")
        self.peak = max(self.peak, peak)
        print(f"| {name} | {peak:,} | {status('VmRSS'):,} | {time.time() - self.began:.1f} |", flush=True)
        Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS
        self.began = time.time()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("database", type=Path, help="the index's DuckDB file (copied, never written)")
    parser.add_argument("--scratch", type=Path, default=Path("/tmp/profile_communities"))
    parser.add_argument("--stable", action="store_true", help="warm-start from the index's communities")
    parser.add_argument(
        "--keep", action="store_true", help="keep the copy (its _staged_communities: the table written)"
    )
    parser.add_argument(
        "--memory-limit", help="DuckDB's limit for the step's queries, e.g. 100MB (default: the step's)"
    )
    args = parser.parse_args()
    args.scratch.mkdir(parents=True, exist_ok=True)
    database = args.scratch / "index.duckdb"
    shutil.copyfile(args.database, database)
    print(f"load average at start: {os.getloadavg()}; {os.uname().nodename}")
    print("| stage | peak RSS MB | RSS after MB | seconds |\n|---|---|---|---|")
    stages = Stages()
    from graphrag_assets.core.settings import CommunitySettings
    from graphrag_assets.index.stable_communities import (
        ClusteringRequest,
        last_fresh_modularity,
        previous_assignments,
    )
    from graphrag_assets.pipeline.assets import communities as step
    from graphrag_assets.storage.corpus import last_clustering, read_published_columns
    from graphrag_assets.storage.tables import read_table

    stages.done(f"imports ({step.__file__})")
    if args.memory_limit:
        print(f"DuckDB memory limit of the step's queries: {_lower_limit(args.memory_limit)}")
    # what the step reads: ENTITY_COLUMNS, or the whole table (the asset's input, before)
    if hasattr(step, "ENTITY_COLUMNS"):
        entities = step.read_staged_columns(database, "entities", step.ENTITY_COLUMNS)
    else:
        entities = read_table(database, "entities")
    stages.done(f"entities ({entities.height:,})")
    settings = CommunitySettings(update="stable" if args.stable else "exact")
    request = ClusteringRequest(settings)
    if args.stable:
        published = read_published_columns(database, "communities", step.PREVIOUS_COLUMNS)
        # as the step asks: a fresh top level only when the last build's measure is due (drift_every)
        last = last_clustering(database)
        request = ClusteringRequest(
            settings,
            previous=previous_assignments(published, entities),
            warm_starts=int(last.get("warm_starts") or 0),
            last_fresh=last_fresh_modularity(last),
        )
        stages.done("previous communities")
    for name in STAGES:
        if hasattr(step, name):
            setattr(step, name, _timed(getattr(step, name), name, stages))
    started = time.time()
    rows, outcome = step.stage_communities(database, entities, request, "p")
    wall = time.time() - started
    print(
        f"\nstage_communities: {wall:.1f} s, {rows.height:,} communities, {outcome.strategy} ({outcome.reason}); "
        f"peak of the stages {stages.peak:,} MB; load average at end: {os.getloadavg()}"
    )
    if not args.keep:
        shutil.rmtree(args.scratch, ignore_errors=True)


def _lower_limit(limit: str) -> str:
    """Set ``limit`` in the settings the step's DuckDB module applies (named ``_SETTINGS`` in its
    first version); a checkout without the module does not use DuckDB there."""
    try:
        from graphrag_assets.storage import community_graph
    except ImportError:
        return "not applied (this checkout has no storage.community_graph)"
    settings = getattr(community_graph, "SETTINGS", None) or community_graph._SETTINGS
    settings["memory_limit"] = f"'{limit}'"
    return limit


def _timed(function, name: str, stages: Stages):
    @functools.wraps(function)
    def timed(*args, **kwargs):
        result = function(*args, **kwargs)
        stages.done(name)
        return result

    return timed


if __name__ == "__main__":
    main()
