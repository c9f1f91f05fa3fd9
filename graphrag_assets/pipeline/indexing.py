"""Incremental indexing of a project through its Dagster instance (the CLI's ``index``).

1. compare the input folder with what the index holds (:mod:`graphrag_assets.project.state`);
2. register new document partitions, forget deleted ones and delete every row derived from them;
3. run the per-document job: one range run for all new documents, one range run per contiguous
   group of changed documents;
4. run the corpus job (entities onwards) when anything changed or the corpus graph is stale —
   unless a document run failed, so the graph is never built from half-updated documents.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import polars as pl
from dagster import DagsterInstance, Definitions

from graphrag_assets.core.buckets import bucket_of, is_bucket_key
from graphrag_assets.core.progress import warn
from graphrag_assets.core.settings import Settings
from graphrag_assets.index.changes import ChangeSet
from graphrag_assets.index.partition_plan import PartitionPlan, plan_partitions
from graphrag_assets.llm.usage import create_model_tables, report_outcomes, usage_by_purpose
from graphrag_assets.pipeline.assets.communities import RECLUSTER_TAG
from graphrag_assets.pipeline.definitions import build_definitions
from graphrag_assets.pipeline.instance import open_instance, refuse_while_runs_are_active
from graphrag_assets.pipeline.partitions import CORPUS_JOB, DOCUMENTS_JOB, PARTITIONS_NAME, run_groups
from graphrag_assets.pipeline.runner import run_job
from graphrag_assets.project.index_run import IndexOptions, IndexReport
from graphrag_assets.project.locks import index_lock
from graphrag_assets.project.state import (
    check_input,
    corpus_is_stale,
    document_state,
    extraction_parse_failures,
    failed_extractions,
)
from graphrag_assets.storage.corpus import graph_sizes
from graphrag_assets.storage.database import let_go
from graphrag_assets.storage.documents import delete_documents, refresh_file_stats
from graphrag_assets.storage.tables import read_table

Announce = Callable[[str], None]


def index_project(
    settings: Settings, options: IndexOptions | None = None, announce: Announce = lambda message: None
) -> IndexReport:
    """Bring the index up to date with the input folder; returns what was done.

    Holds the project's index lock for the whole update and refuses to start while a Dagster run
    of this project is in progress, so two writers never interleave. Refuses, before writing
    anything, an input folder that is missing or empty (unless ``allow_empty_input``). Runs left
    STARTED by a process that died are marked failed first, and an update that was killed part-way
    is finished (its model calls were cached).
    """
    options = options or IndexOptions()
    started = time.monotonic()
    check_input(settings, document_state(settings), allow_empty=options.allow_empty_input)
    instance = open_instance(settings)
    with index_lock(settings) as interrupted:
        if interrupted:
            announce(
                f"the update started at {interrupted.get('started_at')} (pid {interrupted.get('pid')}) was stopped before it finished; finishing it"
            )
        dead = refuse_while_runs_are_active(instance)
        if dead:
            announce(f"marked {len(dead)} run(s) failed whose process is gone: {', '.join(run[:8] for run in dead)}")
        defs = build_definitions(settings.root, overrides=options.overrides)
        report = _index(settings, instance, defs, announce, options)
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


def _index(
    settings: Settings, instance: DagsterInstance, defs: Definitions, announce: Announce, options: IndexOptions
) -> IndexReport:
    changes = document_state(settings).changes
    report = IndexReport(changes=changes, method=settings.resolved_method)
    announce(changes.summary())
    for entry in changes.passed_over:
        warn(entry)
    refresh_file_stats(settings.database_path, _touched_files(settings, changes))

    registered = list(instance.get_dynamic_partitions(PARTITIONS_NAME))
    plan = plan_partitions(changes, registered, settings.partitions)
    gone = sorted(
        set(changes.deleted) | {key for key in plan.forget if not is_bucket_key(key) and key not in changes.paths}
    )
    if gone:
        report.deleted_rows = delete_documents(settings.database_path, settings.lancedb_path, gone)
    for key in plan.forget:
        instance.delete_dynamic_partition(PARTITIONS_NAME, key)
    if plan.forget and plan.bucketed != any(is_bucket_key(key) for key in plan.forget):
        announce(
            f"{len(changes.paths)} document files: partitions are now "
            + (f"{settings.partitions.buckets} hash buckets" if plan.bucketed else "one per document")
        )
    document_runs: list[dict[str, Any]] = []
    if plan.add:
        instance.add_dynamic_partitions(PARTITIONS_NAME, plan.add)
        new_work = sum(plan.work.get(key, 0) for key in plan.add)
        for keys in run_groups(plan.add, plan.add, plan.work):
            announce(_describe_run(keys, plan, new_work, "indexing", "new"))
            document_runs.append(run_job(defs, instance, DOCUMENTS_JOB, keys).as_dict())
    order = [key for key in registered if key not in set(plan.forget)]
    for keys in run_groups(plan.rerun, order, plan.work):
        announce(_describe_run(keys, plan, None, "re-indexing", "changed"))
        document_runs.append(run_job(defs, instance, DOCUMENTS_JOB, keys).as_dict())
    report.runs.extend(document_runs)
    # A range run stores the documents that worked; a document whose extraction failed gets one
    # more try on its own (in bucket mode: its bucket's run, which redoes only that document),
    # which marks its partition as failed in Dagster if it fails again. (A bucket's retry redoes
    # all its failed documents, so a bucket is retried once.)
    retried: set[str] = set()
    for key in failed_extractions(settings, changes.new + changes.changed):
        partition = bucket_of(key, settings.partitions.buckets) if plan.bucketed else key
        if partition in retried:
            continue
        if any(
            run["success"] and len(run["partitions"]) > 1 and partition in run["partitions"] for run in document_runs
        ):
            retried.add(partition)
            announce(f"retrying {key} on its own (its extraction failed)")
            report.runs.append(run_job(defs, instance, DOCUMENTS_JOB, [partition]).as_dict())
    report.failed_documents = failed_extractions(settings, changes.new + changes.changed)
    report.parse_failures = extraction_parse_failures(settings, changes.new + changes.changed)
    report.vanished = _vanished(settings, changes.new)
    broken = [run for run in document_runs if not run["success"]]
    if broken:
        announce(f"{len(broken)} document run(s) failed; the corpus graph is left as it was until they succeed")
    elif (
        changes.any
        or options.force_corpus
        or options.recluster
        or corpus_is_stale(settings, read_table(settings.database_path, "source_files"))
    ):
        announce("updating the corpus-wide graph" + (" (clustering from scratch)" if options.recluster else ""))
        tags = {RECLUSTER_TAG: "true"} if options.recluster else None
        report.runs.append(run_job(defs, instance, CORPUS_JOB, tags=tags).as_dict())
    return report


def _describe_run(keys: list[str], plan: PartitionPlan, total: int | None, verb: str, kind: str) -> str:
    documents = sum(plan.work.get(key, 0) for key in keys)
    if plan.bucketed:
        return f"{verb} {documents} {kind} document file(s) in {len(keys)} bucket(s)" + (
            f" (of {total})" if total and total != documents else ""
        )
    if len(keys) == 1 and kind == "changed":
        return f"{verb} {keys[0]}"
    return f"{verb} {documents} {kind} document file(s)" + (f" (of {total})" if total and total != documents else "")


def _vanished(settings: Settings, new: list[str]) -> list[str]:
    """New documents whose file was gone by the time their run read it."""
    source_files = read_table(settings.database_path, "source_files", read_only=True)
    if source_files is None or not new:
        return []
    missing = source_files.filter(pl.col("status") == "missing")["document_key"].to_list()
    return sorted(set(new) & set(missing))


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
