"""Peak RSS of the extractive (offline) community_reports step's phases, in this process.

    python bench/profile_reports_step.py PROJECT_ROOT

Reads the project's published ``entities``, ``text_units`` and ``communities`` as the step does
(read only: nothing is written), counts the internal links, then makes the reports, all written and
then as an update that keeps the published ones where their inputs match, then as an update where
the most connected entity's degree changed (its communities written again from kept sentences);
prints each
phase's peak resident memory (sampled every 20 ms), its seconds and the load average. Cheaper than
a whole ``bench_scale`` run for finding what holds the reports step's memory (issue 35).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from profile_graph_step import Phases  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", type=Path)
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()}")
    print("| phase | peak RSS MB | RSS after MB | seconds |\n|---|---|---|---|")
    phases = Phases()
    import polars as pl

    from graphrag_assets.core.settings import load_settings
    from graphrag_assets.index.extractive_reuse import (
        NAME_VOTES,
        NO_VOTES,
        SENTENCES,
        PreviousReports,
        VotesFrame,
        update_extractive_reports,
    )
    from graphrag_assets.storage.corpus import internal_link_counts, read_kept_rows, read_staged_without
    from graphrag_assets.storage.table_names import REPORT_NAME_VOTES, REPORT_SENTENCES
    from graphrag_assets.storage.tables import read_table

    database = load_settings(args.root).database_path
    phases.done("imports")
    entities = read_table(database, "entities")
    phases.done(f"entities ({entities.height} rows, {entities.estimated_size('mb'):.0f} MB)")
    text_units = read_table(database, "text_units")
    units = text_units.sort("document_key", "chunk_index").select("id", "text")
    phases.done(f"text units ({units.height} rows, {text_units.estimated_size('mb'):.0f} MB whole)")
    communities = read_staged_without(database, "communities", ["relationship_ids"])
    phases.done(f"communities ({communities.height} rows, {communities.estimated_size('mb'):.0f} MB)")
    links = internal_link_counts(database)
    phases.done("internal link counts")
    whole = update_extractive_reports(communities, entities, units, links, PreviousReports())
    phases.done(f"extractive reports, all written ({whole.frame.height})")
    # as the step runs on an update: the published reports, name votes and sentences kept where
    # inputs match (an index written before the sentences were kept reads every unit once here)
    previous = PreviousReports(
        read_table(database, "community_reports"),
        VotesFrame(read_kept_rows(database, REPORT_NAME_VOTES, list(NAME_VOTES))),
        read_kept_rows(database, REPORT_SENTENCES, list(SENTENCES)),
    )
    update = update_extractive_reports(communities, entities, units, links, previous)
    phases.done(f"extractive reports, update ({update.kept} kept, {update.units_read} units read)")
    # the costly update: the most connected entity gains a link, so every community holding it
    # (the largest ones, one per level) is written again from its units' kept sentences
    top = entities["degree"].arg_max()
    bumped = entities.with_columns(
        pl.when(pl.int_range(pl.len()) == top).then(pl.col("degree") + 1).otherwise("degree")
    )
    kept = PreviousReports(whole.frame, NO_VOTES.updated(whole), whole.sentences)
    moved = update_extractive_reports(communities, bumped, units, links, kept)
    phases.done(
        f"extractive reports, top entity's degree +1 ({moved.frame.height - moved.kept} written, {moved.units_read} units read)"
    )
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
