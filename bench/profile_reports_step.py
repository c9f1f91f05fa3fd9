"""Peak RSS of the extractive (offline) community_reports step's phases on an update, in this process.

    python bench/profile_reports_step.py PROJECT_ROOT [--scratch DIR] [--votes-in-memory]

Copies the project's DuckDB file to ``--scratch`` (the project is never written), reads its
published ``entities``, ``text_units`` and ``communities`` as the step does, counts the internal
links, then makes the reports as an update: first with nothing changed (every report kept), then
with the most connected entity's degree changed (its communities, the largest, one per level,
written again from kept sentences); and writes the name votes and sentences as the step stores
them. Prints each phase's peak resident memory (sampled every 20 ms), its seconds and the load
average. The name votes are kept in DuckDB as the step keeps them (``storage/name_votes.py``);
``--votes-in-memory`` reads them into a frame and writes them back instead, as the step did
before, for an A/B in one checkout. Cheaper than a whole ``bench_scale`` run for finding what
holds the reports step's memory (issue 35).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from profile_graph_step import Phases  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", type=Path)
    parser.add_argument(
        "--scratch", type=Path, help="where the copy of the database goes (default: a temporary folder)"
    )
    parser.add_argument("--votes-in-memory", action="store_true", help="the name votes as a frame (the step before)")
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()}")
    import polars as pl

    from graphrag_assets.core.settings import load_settings
    from graphrag_assets.index.extractive_reuse import (
        NAME_VOTES,
        SENTENCES,
        PreviousReports,
        VotesFrame,
        update_extractive_reports,
    )
    from graphrag_assets.pipeline.assets.reports import StagedVotes
    from graphrag_assets.storage.corpus import (
        append_staged,
        internal_link_counts,
        read_kept_rows,
        read_staged_without,
        write_staged,
    )
    from graphrag_assets.storage.table_names import REPORT_NAME_VOTES, REPORT_SENTENCES
    from graphrag_assets.storage.tables import read_table

    scratch = Path(args.scratch or tempfile.mkdtemp(prefix="profile-reports-"))
    scratch.mkdir(parents=True, exist_ok=True)
    database = scratch / "index.duckdb"
    shutil.copyfile(load_settings(args.root).database_path, database)
    print("| phase | peak RSS MB | RSS after MB | seconds |\n|---|---|---|---|")
    phases = Phases()
    entities = read_table(database, "entities")
    phases.done(f"entities ({entities.height} rows, {entities.estimated_size('mb'):.0f} MB)")
    text_units = read_table(database, "text_units")
    units = text_units.sort("document_key", "chunk_index").select("id", "text")
    phases.done(f"text units ({units.height} rows, {text_units.estimated_size('mb'):.0f} MB whole)")
    communities = read_staged_without(database, "communities", ["relationship_ids"])
    phases.done(f"communities ({communities.height} rows, {communities.estimated_size('mb'):.0f} MB)")
    links = internal_link_counts(database)
    phases.done("internal link counts")

    def previous_build() -> PreviousReports:
        votes = StagedVotes(database)  # as the step keeps them
        if args.votes_in_memory:
            votes = VotesFrame(read_kept_rows(database, REPORT_NAME_VOTES, list(NAME_VOTES)))
        return PreviousReports(
            read_table(database, "community_reports"),
            votes,
            read_kept_rows(database, REPORT_SENTENCES, list(SENTENCES)),
        )

    previous = previous_build()
    phases.done("the previous build's reports, votes and sentences")
    update = update_extractive_reports(communities, entities, units, links, previous)
    phases.done(f"update, nothing changed ({update.kept} kept, {update.units_read} units read)")
    # the costly update: the most connected entity gains a link, so every community holding it
    # (the largest ones, one per level) is written again from its units' kept sentences
    top = entities["degree"].arg_max()
    bumped = entities.with_columns(
        pl.when(pl.int_range(pl.len()) == top).then(pl.col("degree") + 1).otherwise("degree")
    )
    del previous, update
    previous = previous_build()
    moved = update_extractive_reports(communities, bumped, units, links, previous)
    phases.done(
        f"update, top entity's degree +1 ({moved.frame.height - moved.kept} written, {moved.units_read} units read)"
    )
    if args.votes_in_memory:
        write_staged(database, REPORT_NAME_VOTES, previous.name_votes.updated(moved).frame)
    else:
        append_staged(database, REPORT_NAME_VOTES, moved.new_votes)
    write_staged(database, REPORT_SENTENCES, moved.sentences)
    phases.done("write the votes and sentences")
    print(f"load average at end: {os.getloadavg()}")
    shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
