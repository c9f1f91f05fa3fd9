"""Incremental indexing of a project through its Dagster instance (the CLI's ``index``).

1. compare the input folder with what the index holds, once (:class:`~graphrag_assets.project.index_plan.IndexPlan`,
   which the idle check may already have read, and which the document runs are handed);
2. register new document partitions, forget deleted ones and delete every row derived from them;
3. run the per-document job: one range run for all new documents, one range run per contiguous
   group of changed documents;
4. run the corpus job (entities onwards) when anything changed or the corpus graph is stale —
   unless a document run failed, so the graph is never built from half-updated documents; on a
   big corpus each of its steps runs in a process of its own (:mod:`.corpus_processes`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from dagster import DagsterInstance, Definitions

from graphrag_assets.core.buckets import bucket_of, is_bucket_key
from graphrag_assets.core.errors import Interrupted
from graphrag_assets.core.progress import warn
from graphrag_assets.core.settings import Settings
from graphrag_assets.index.changes import ChangeSet
from graphrag_assets.index.partition_plan import PartitionPlan, plan_partitions
from graphrag_assets.llm.usage import create_model_tables, report_outcomes, usage_by_purpose
from graphrag_assets.pipeline.assets.communities import RECLUSTER_TAG
from graphrag_assets.pipeline.corpus_processes import run_corpus_job, wants_processes
from graphrag_assets.pipeline.definitions import build_definitions
from graphrag_assets.pipeline.partitions import (
    CORPUS_JOB,
    DOCUMENTS_JOB,
    DOCUMENTS_PER_RUN,
    PARTITIONS_NAME,
    run_groups,
)
from graphrag_assets.pipeline.runtime.instance import open_instance, refuse_while_runs_are_active
from graphrag_assets.pipeline.runtime.runner import run_job
from graphrag_assets.pipeline.workers_entry import run_document_workers
from graphrag_assets.project import search_tables
from graphrag_assets.project.index_plan import IndexPlan
from graphrag_assets.project.index_run import IndexOptions, IndexReport
from graphrag_assets.project.locks import index_lock
from graphrag_assets.project.state import (
    check_input,
    corpus_is_stale,
    extraction_outcome,
    missing_sources,
    read_source_files,
)
from graphrag_assets.storage.corpus import graph_sizes
from graphrag_assets.storage.database import let_go
from graphrag_assets.storage.documents import delete_documents, refresh_file_stats

Announce = Callable[[str], None]
NOTHING_PUBLISHED = (
    "interrupted; nothing was published, the previous build is still served; "
    "run 'graphrag-assets index' again to continue (completed model calls are cached)."
)


def index_project(
    settings: Settings,
    options: IndexOptions | None = None,
    announce: Announce = lambda message: None,
    plan: IndexPlan | None = None,
) -> IndexReport:
    """Bring the index up to date with the input folder; returns what was done.

    Holds the project's index lock for the whole update and refuses to start while a Dagster run
    of this project is in progress, so two writers never interleave. Refuses, before writing
    anything, an input folder that is missing or empty (unless ``allow_empty_input``). Runs left
    STARTED by a process that died are marked failed first, and an update that was killed part-way
    is finished (its model calls were cached). ``plan``: this run's, when the idle check read it.
    """
    options = options or IndexOptions()
    started = time.monotonic()
    plan = plan or IndexPlan.read(settings)
    check_input(settings, plan.state, allow_empty=options.allow_empty_input)
    instance = open_instance(settings)
    with index_lock(settings) as interrupted:
        if interrupted:
            announce(_interrupted_holder(interrupted))
        dead = refuse_while_runs_are_active(instance)
        if dead:
            announce(f"marked {len(dead)} run(s) failed whose process is gone: {', '.join(run[:8] for run in dead)}")
        defs = build_definitions(settings.root, overrides=options.overrides)
        try:
            report = _index(settings, plan, instance, defs, announce, options)
        except KeyboardInterrupt:
            raise Interrupted(NOTHING_PUBLISHED) from None  # the corpus job publishes last, all at once
        tokenized = search_tables.write_if_due(settings)  # a build published without them (older code)
        if tokenized is not None:
            announce(f"wrote the search tables of the published build ({tokenized:,} text units)")
        report.seconds = time.monotonic() - started
        if settings.database_path.exists():
            create_model_tables(settings.database_path)
        run_ids = [run["run_id"] for run in report.runs]
        report.usage = usage_by_purpose(settings.database_path, run_ids)
        report.reports = report_outcomes(settings.database_path, run_ids)
        if any(run["job"] == CORPUS_JOB for run in report.runs):
            report.graph = graph_sizes(settings.database_path)
        let_go(settings.database_path)  # checkpointed and closed before the index lock is released
        return report


def _interrupted_holder(holder: dict[str, Any]) -> str:
    """What the killed holder of the index lock was doing, and what this run does about it."""
    command = holder.get("command", "index")
    started = f"the '{command}' started at {holder.get('started_at')} (pid {holder.get('pid')}) was stopped before it finished"
    if command == "index":
        return f"{started}; finishing it"
    return f"{started}; run 'graphrag-assets {command}' again to finish it"


def _index(
    settings: Settings,
    plan: IndexPlan,
    instance: DagsterInstance,
    defs: Definitions,
    announce: Announce,
    options: IndexOptions,
) -> IndexReport:
    changes = plan.changes
    report = IndexReport(changes=changes, method=settings.resolved_method)
    announce(changes.summary())
    for entry in changes.passed_over:
        warn(entry)
    refresh_file_stats(settings.database_path, _touched_files(settings, changes))

    registered = list(instance.get_dynamic_partitions(PARTITIONS_NAME))
    partitions = plan_partitions(changes, registered, settings.partitions)
    gone = sorted(
        set(changes.deleted) | {key for key in partitions.forget if not is_bucket_key(key) and key not in changes.paths}
    )
    if gone:
        report.deleted_rows = delete_documents(settings.database_path, settings.lancedb_path, gone)
    for key in partitions.forget:
        instance.delete_dynamic_partition(PARTITIONS_NAME, key)
    if partitions.forget and partitions.bucketed != any(is_bucket_key(key) for key in partitions.forget):
        announce(
            f"{len(changes.paths)} document files: partitions are now "
            + (f"{settings.partitions.buckets} hash buckets" if partitions.bucketed else "one per document")
        )
    document_runs: list[dict[str, Any]] = []
    # A run's documents are bounded per process: with workers, each shard holds its share of them
    # (the coordinator's collect step holds the run's rows once, as a single process does).
    run_limit = DOCUMENTS_PER_RUN * settings.workers.count

    def run_documents(keys: list[str]) -> dict[str, Any]:
        """One run of the document steps: in this process, or on ``workers.count`` workers."""
        if settings.workers.count > 1:
            return run_document_workers(settings, instance, keys, options.overrides).as_dict()
        return run_job(defs, instance, DOCUMENTS_JOB, keys).as_dict()

    with plan.handed_to_runs():  # the ingest step takes its files (and a bucket's documents) from the plan
        if partitions.add:
            instance.add_dynamic_partitions(PARTITIONS_NAME, partitions.add)
            new_work = sum(partitions.work.get(key, 0) for key in partitions.add)
            for keys in run_groups(partitions.add, partitions.add, partitions.work, run_limit):
                announce(_describe_run(keys, partitions, new_work, "indexing", "new"))
                document_runs.append(run_documents(keys))
        order = [key for key in registered if key not in set(partitions.forget)]
        for keys in run_groups(partitions.rerun, order, partitions.work, run_limit):
            announce(_describe_run(keys, partitions, None, "re-indexing", "changed"))
            document_runs.append(run_documents(keys))
    report.runs.extend(document_runs)
    touched = changes.new + changes.changed  # every one of them was in a document run
    if touched:
        report.failed_documents, report.parse_failures = extraction_outcome(settings, touched)
    if _retry_failed(settings, partitions, report, document_runs, announce, (defs, instance)):
        report.failed_documents, report.parse_failures = extraction_outcome(settings, touched)
    report.vanished = missing_sources(settings, changes.new) if changes.new else []
    broken = [run for run in document_runs if not run["success"]]
    if broken:
        announce(f"{len(broken)} document run(s) failed; the corpus graph is left as it was until they succeed")
    elif changes.any or options.force_corpus or options.recluster or _corpus_stale(settings, plan, document_runs):
        announce("updating the corpus-wide graph" + (" (clustering from scratch)" if options.recluster else ""))
        tags = {RECLUSTER_TAG: "true"} if options.recluster else None
        separate = wants_processes(
            settings, len(changes.paths), lambda: graph_sizes(settings.database_path)["relationships"]
        )
        report.runs.append(run_corpus_job(settings, instance, defs, options.overrides, tags, separate).as_dict())
    return report


def _retry_failed(
    settings: Settings,
    partitions: PartitionPlan,
    report: IndexReport,
    document_runs: list[dict[str, Any]],
    announce: Announce,
    dagster: tuple[Definitions, DagsterInstance],
) -> bool:
    """Give each document whose extraction failed in a range run one more try on its own; True if any ran.

    A range run stores the documents that worked; a document whose extraction failed gets one more
    try on its own (in bucket mode: its bucket's run, which redoes only that document), which marks
    its partition as failed in Dagster if it fails again. (A bucket's retry redoes all its failed
    documents, so a bucket is retried once.) The retry works out its documents itself: the plan
    no longer says which of them need work.
    """
    retried: set[str] = set()
    for key in report.failed_documents:
        partition = bucket_of(key, settings.partitions.buckets) if partitions.bucketed else key
        if partition in retried:
            continue
        if any(
            run["success"] and len(run["partitions"]) > 1 and partition in run["partitions"] for run in document_runs
        ):
            retried.add(partition)
            announce(f"retrying {key} on its own (its extraction failed)")
            report.runs.append(run_job(*dagster, DOCUMENTS_JOB, [partition]).as_dict())
    return bool(retried)


def _corpus_stale(settings: Settings, plan: IndexPlan, document_runs: list[dict[str, Any]]) -> bool:
    """The plan's answer, unless document runs (with no document changed: new bucket partitions)
    rewrote ``source_files`` since."""
    return corpus_is_stale(settings, read_source_files(settings)) if document_runs else plan.corpus_stale


def _describe_run(keys: list[str], plan: PartitionPlan, total: int | None, verb: str, kind: str) -> str:
    documents = sum(plan.work.get(key, 0) for key in keys)
    if plan.bucketed:
        return f"{verb} {documents} {kind} document file(s) in {len(keys)} bucket(s)" + (
            f" (of {total})" if total and total != documents else ""
        )
    if len(keys) == 1 and kind == "changed":
        return f"{verb} {keys[0]}"
    return f"{verb} {documents} {kind} document file(s)" + (f" (of {total})" if total and total != documents else "")


def _touched_files(settings: Settings, changes: ChangeSet) -> list[dict[str, Any]]:
    """Size and modification time of files that were hashed but had not changed.

    Stored so that a touched file (a fresh clone, a copy without timestamps) is not hashed on
    every check.
    """
    rows = []
    for key in changes.unchanged:
        if key in changes.hashes:
            stat = (settings.input_dir / changes.paths[key]).stat()
            rows.append({"document_key": key, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns})
    return rows
