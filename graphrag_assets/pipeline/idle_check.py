"""Telling, before importing Dagster, that ``graphrag-assets index`` has nothing to do.

The common case of a command run from a hook or a cron job: no file changed. Importing Dagster and
opening its instance costs more than a second, while the answer comes from our own tables (the same
change detection and corpus fingerprint as the real run, :mod:`graphrag_assets.project.state`) and
two read-only queries on Dagster's SQLite files (:mod:`graphrag_assets.pipeline.runtime.dagster_files`).
Any doubt sends the command down the full path, which then behaves as it always did: a pending run
(live: refuse; dead: marked failed), a held or interrupted index lock, files that were hashed but
not changed (their stats are stored), partitions Dagster would add or forget, a stale corpus build.
"""

from __future__ import annotations

from graphrag_assets.core.settings import Settings
from graphrag_assets.index.partition_plan import PARTITIONS_NAME, plan_partitions
from graphrag_assets.pipeline.runtime.dagster_files import read_sqlite_state
from graphrag_assets.project import search_tables
from graphrag_assets.project.index_plan import IndexPlan
from graphrag_assets.project.index_run import IndexOptions, IndexReport
from graphrag_assets.project.locks import index_lock_held, interrupted_update
from graphrag_assets.project.state import check_input
from graphrag_assets.storage.database import reading


def plan_index(settings: Settings, options: IndexOptions) -> tuple[IndexPlan, IndexReport | None]:
    """The run's plan (its one scan of the input folder and read of each state table), and the
    report of the run when it has nothing to do (None: the full path goes on with the plan)."""
    with reading(settings.database_path):  # one open of the database for the plan and the check
        plan = IndexPlan.read(settings)
        return plan, nothing_to_index(settings, options, plan)


def nothing_to_index(settings: Settings, options: IndexOptions, plan: IndexPlan | None = None) -> IndexReport | None:
    """The report of an index run that has nothing to do, or None when the full path must decide.

    ``plan`` is this run's (read here when not given); the full path goes on with the same plan.
    Raises the same error as the full path for a missing or empty input folder.
    """
    if options.force_corpus or options.recluster:
        return None
    with reading(settings.database_path):  # one open of the database for every table read here
        return _up_to_date(settings, options, plan or IndexPlan.read(settings))


def _up_to_date(settings: Settings, options: IndexOptions, plan: IndexPlan) -> IndexReport | None:
    check_input(settings, plan.state, allow_empty=options.allow_empty_input)
    changes = plan.changes
    if changes.any or changes.passed_over or any(key in changes.hashes for key in changes.unchanged):
        return None
    if index_lock_held(settings) or interrupted_update(settings) is not None:
        return None
    dagster = read_sqlite_state(settings, PARTITIONS_NAME)
    if dagster is None or dagster.pending_runs:
        return None
    partitions = plan_partitions(changes, dagster.partitions, settings.partitions)
    if partitions.add or partitions.rerun or partitions.forget:
        return None
    if plan.corpus_stale or search_tables.due(settings):
        return None
    return IndexReport(changes=changes, method=settings.resolved_method)
