"""Incremental indexing of a project through its Dagster instance (the CLI's ``index``).

1. compare the input folder with what the index holds (:mod:`graphrag_assets.document_state`);
2. register new document partitions, forget deleted ones and delete every row derived from them;
3. run the per-document job: one range run for all new documents, one range run per contiguous
   group of changed documents;
4. run the corpus job (entities onwards) when anything changed or the corpus graph is stale —
   unless a document run failed, so the graph is never built from half-updated documents.
"""

from __future__ import annotations

import contextlib
import fcntl
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from graphrag_assets.errors import UserError
from graphrag_assets.index.changes import ChangeSet
from graphrag_assets.settings import Settings
from graphrag_assets.storage.tables import delete_partitions, read_table


@dataclass
class IndexReport:
    changes: ChangeSet
    runs: list[dict[str, Any]] = field(default_factory=list)
    deleted_rows: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    method: str = ""
    failed_documents: list[str] = field(default_factory=list)
    usage: dict[str, dict[str, int]] = field(default_factory=dict)
    reports: dict[str, Any] = field(default_factory=dict)  # reused / regenerated / deleted and why

    @property
    def success(self) -> bool:
        return all(run["success"] for run in self.runs)

    def as_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "new": self.changes.new,
            "changed": self.changes.changed,
            "deleted": self.changes.deleted,
            "unchanged": len(self.changes.unchanged),
            "runs": self.runs,
            "deleted_rows": self.deleted_rows,
            "failed_documents": self.failed_documents,
            "usage": self.usage,
            "reports": self.reports,
            "seconds": round(self.seconds, 3),
            "success": self.success,
        }


def index_project(
    settings: Settings,
    *,
    overrides: dict[str, Any] | None = None,
    announce: Callable[[str], None] = lambda message: None,
    force_corpus: bool = False,
    recluster: bool = False,
) -> IndexReport:
    """Bring the index up to date with the input folder; returns what was done.

    Holds the project's index lock for the whole update and refuses to start while a Dagster run
    of this project is in progress, so two writers never interleave. ``recluster`` runs the
    corpus job even when nothing changed and makes it cluster from scratch (stable mode).
    """
    from graphrag_assets.runner import open_instance

    instance = open_instance(settings)
    with index_lock(settings):
        refuse_while_runs_are_active(instance)
        return _index(settings, instance, overrides, announce, force_corpus or recluster, recluster)


def _index(settings: Settings, instance, overrides, announce, force_corpus: bool, recluster: bool = False) -> IndexReport:
    from graphrag_assets.assets.partitions import CORPUS_JOB, DOCUMENTS_JOB, PARTITIONS_NAME
    from graphrag_assets.definitions import build_definitions
    from graphrag_assets.document_state import corpus_is_stale, document_state, failed_extractions
    from graphrag_assets.runner import run_job

    started = time.monotonic()
    defs = build_definitions(settings.root, overrides=overrides)
    state = document_state(settings, instance)
    changes = state.changes
    report = IndexReport(changes=changes, method=settings.resolved_method)
    announce(changes.summary())
    refresh_unchanged_files(settings, changes)

    if changes.deleted:
        report.deleted_rows = delete_documents(settings, instance, changes.deleted, set(state.registered))
    document_runs: list[dict[str, Any]] = []
    if changes.new:
        instance.add_dynamic_partitions(PARTITIONS_NAME, changes.new)
        announce(f"indexing {len(changes.new)} new document file(s)")
        document_runs.append(run_job(defs, instance, DOCUMENTS_JOB, changes.new).as_dict())
    for group in contiguous_groups(changes.changed, state.registered):
        announce(f"re-indexing {len(group)} changed document file(s)" if len(group) > 1 else f"re-indexing {group[0]}")
        document_runs.append(run_job(defs, instance, DOCUMENTS_JOB, group).as_dict())
    report.runs.extend(document_runs)
    # A range run stores the documents that worked; a document whose extraction failed gets one
    # more try on its own, which marks its partition as failed in Dagster if it fails again.
    for key in failed_extractions(settings, changes.new + changes.changed):
        if any(run["success"] and len(run["partitions"]) > 1 and key in run["partitions"] for run in document_runs):
            announce(f"retrying {key} on its own (its extraction failed)")
            report.runs.append(run_job(defs, instance, DOCUMENTS_JOB, [key]).as_dict())
    report.failed_documents = failed_extractions(settings, changes.new + changes.changed)
    broken = [run for run in document_runs if not run["success"]]
    if broken:
        announce(f"{len(broken)} document run(s) failed; the corpus graph is left as it was until they succeed")
    elif changes.any or force_corpus or corpus_is_stale(settings, read_table(settings.database_path, "source_files")):
        from graphrag_assets.assets.communities import RECLUSTER_TAG

        announce("updating the corpus-wide graph" + (" (clustering from scratch)" if recluster else ""))
        tags = {RECLUSTER_TAG: "true"} if recluster else None
        report.runs.append(run_job(defs, instance, CORPUS_JOB, tags=tags).as_dict())
    report.seconds = time.monotonic() - started
    report.usage = usage_of_runs(settings, [run["run_id"] for run in report.runs])
    report.reports = report_outcomes(settings, [run["run_id"] for run in report.runs])
    return report


def contiguous_groups(keys: list[str], order: list[str]) -> list[list[str]]:
    """``keys`` split into runs that are contiguous in the partition ``order`` (one range run each).

    After a settings change every document is changed; they then run as one range, so their model
    calls share one concurrency pool instead of running document after document.
    """
    wanted = set(keys)
    groups: list[list[str]] = []
    current: list[str] = []
    for key in order:
        if key in wanted:
            current.append(key)
        elif current:
            groups.append(current)
            current = []
    if current:
        groups.append(current)
    return groups


def refresh_unchanged_files(settings: Settings, changes: ChangeSet) -> None:
    """Store the new size and modification time of files that were hashed but had not changed.

    Otherwise a touched file (a fresh clone, a copy without timestamps) is hashed on every check.
    """
    import polars as pl

    from graphrag_assets.storage.database import connect, table_exists

    touched = [key for key in changes.unchanged if key in changes.hashes]
    if not touched or not settings.database_path.exists():
        return
    rows = []
    for key in touched:
        stat = (settings.input_dir / changes.paths[key]).stat()
        rows.append({"document_key": key, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns})
    with connect(settings.database_path) as conn:
        if not table_exists(conn, "source_files"):
            return
        conn.register("_touched", pl.DataFrame(rows).to_arrow())
        conn.execute(
            "update source_files set size = t.size, mtime_ns = t.mtime_ns from _touched t "
            "where source_files.document_key = t.document_key"
        )
        conn.unregister("_touched")


@contextlib.contextmanager
def index_lock(settings: Settings) -> Iterator[None]:
    """An exclusive lock on the project's index for the whole of an update (data/.index.lock)."""
    path = settings.database_path.parent / ".index.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UserError(
                f"another 'graphrag-assets index' is updating {settings.root}; wait for it to finish and run again."
            ) from None
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def index_lock_held(settings: Settings) -> bool:
    """True while some process holds the index lock (the sensor then waits for its next tick)."""
    path = settings.database_path.parent / ".index.lock"
    if not path.exists():
        return False
    with path.open("a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
        return False


ACTIVE_RUN_MAX_AGE_HOURS = 12


def active_runs(instance) -> int:
    """Runs of this project's instance queued or in progress (ignoring any stuck for over 12 hours)."""
    from dagster import DagsterRunStatus, RunsFilter

    statuses = [DagsterRunStatus.QUEUED, DagsterRunStatus.NOT_STARTED, DagsterRunStatus.STARTING, DagsterRunStatus.STARTED]
    since = datetime.now(timezone.utc) - timedelta(hours=ACTIVE_RUN_MAX_AGE_HOURS)
    return instance.get_runs_count(RunsFilter(statuses=statuses, created_after=since))


def refuse_while_runs_are_active(instance) -> None:
    count = active_runs(instance)
    if count:
        raise UserError(
            f"{count} Dagster run(s) of this project are queued or running (see the Dagster UI); "
            f"wait for them to finish, then run 'graphrag-assets index' again."
        )


def usage_of_runs(settings: Settings, run_ids: list[str]) -> dict[str, dict[str, int]]:
    """Model calls made and answered from the cache, per purpose, over the given runs."""
    from graphrag_assets.storage.database import connect, table_exists

    if not run_ids or not settings.database_path.exists():
        return {}
    import polars as pl

    with connect(settings.database_path, read_only=True) as conn:
        if not table_exists(conn, "llm_usage"):
            return {}
        conn.register("_runs", pl.DataFrame({"run_id": run_ids}).to_arrow())
        rows = conn.sql(
            "select purpose, sum(requests)::bigint, sum(cache_hits)::bigint, sum(prompt_tokens + embedding_tokens)::bigint, "
            "sum(completion_tokens)::bigint, sum(cost_usd) from llm_usage where run_id in (select run_id from _runs) "
            "group by purpose order by purpose"
        ).fetchall()
    return {
        purpose: {"calls": calls, "cached": cached, "prompt_tokens": prompt, "completion_tokens": completion, "cost_usd": round(cost or 0.0, 6)}
        for purpose, calls, cached, prompt, completion, cost in rows
    }


def report_outcomes(settings: Settings, run_ids: list[str]) -> dict[str, Any]:
    """Reports reused, regenerated (with reasons) and deleted by the given runs' corpus step ({} if none)."""
    import json

    from graphrag_assets.storage.database import connect, table_exists

    if not run_ids or not settings.database_path.exists():
        return {}
    import polars as pl

    with connect(settings.database_path, read_only=True) as conn:
        if not table_exists(conn, "llm_usage"):
            return {}
        columns = {row[0] for row in conn.sql("select column_name from information_schema.columns where table_name = 'llm_usage'").fetchall()}
        if "reused" not in columns:
            return {}
        conn.register("_runs", pl.DataFrame({"run_id": run_ids}).to_arrow())
        rows = conn.sql(
            "select reused, regenerated, deleted, reasons from llm_usage where run_id in (select run_id from _runs) "
            "and reused is not null order by recorded_at desc limit 1"
        ).fetchall()
    if not rows:
        return {}
    reused, regenerated, deleted, reasons = rows[0]
    return {"total": reused + regenerated, "reused": reused, "regenerated": regenerated, "deleted": deleted, "reasons": json.loads(reasons or "{}")}


def delete_documents(settings: Settings, instance, keys: list[str], registered: set[str]) -> dict[str, int]:
    """Forget deleted documents: their partitions, and every row derived from them.

    Per-document tables lose the partitions' rows and LanceDB loses their text-unit vectors;
    corpus-wide tables are rebuilt by the corpus run that follows.
    """
    from graphrag_assets.storage.vectors import TEXT_UNIT_TABLE, delete_scopes

    from graphrag_assets.assets.partitions import PARTITIONS_NAME, PER_DOCUMENT_TABLES

    deleted = delete_partitions(settings.database_path, PER_DOCUMENT_TABLES, "document_key", keys)
    vectors = delete_scopes(settings.lancedb_path, TEXT_UNIT_TABLE, "document_key", keys)
    if vectors:
        deleted[f"lancedb:{TEXT_UNIT_TABLE}"] = vectors
    for key in keys:
        if key in registered:
            instance.delete_dynamic_partition(PARTITIONS_NAME, key)
    return deleted


