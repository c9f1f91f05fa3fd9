"""Incremental indexing of a project through its Dagster instance (the CLI's ``index``).

1. compare the input folder with the stored ``source_files`` state;
2. register new document partitions, forget deleted ones and delete every row derived from them;
3. run the per-document job: one range run for all new documents, one run per changed document;
4. run the corpus job (entities onwards) when anything changed or the corpus was never built.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from graphrag_assets.fingerprints import document_fingerprint
from graphrag_assets.index.changes import ChangeSet, detect_changes
from graphrag_assets.settings import Settings
from graphrag_assets.storage.tables import delete_partitions, read_table

PARTITION_NAME = "documents"


@dataclass
class IndexReport:
    changes: ChangeSet
    runs: list[dict[str, Any]] = field(default_factory=list)
    deleted_rows: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    method: str = ""
    failed_documents: list[str] = field(default_factory=list)
    usage: dict[str, dict[str, int]] = field(default_factory=dict)

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
            "seconds": round(self.seconds, 3),
            "success": self.success,
        }


def index_project(
    settings: Settings,
    *,
    overrides: dict[str, Any] | None = None,
    announce: Callable[[str], None] = lambda message: None,
    force_corpus: bool = False,
) -> IndexReport:
    """Bring the index up to date with the input folder; returns what was done."""
    from graphrag_assets.definitions import CORPUS_JOB, DOCUMENTS_JOB, build_definitions
    from graphrag_assets.runner import open_instance, run_job

    started = time.monotonic()
    instance = open_instance(settings)
    defs = build_definitions(settings.root, overrides=overrides)
    registered = set(instance.get_dynamic_partitions(PARTITION_NAME))
    stored = read_table(settings.database_path, "source_files") if settings.database_path.exists() else None
    from graphrag_assets.assets.partitions import complete_document_partitions

    materialized = complete_document_partitions(instance, sorted(registered)) if registered else set()
    changes = detect_changes(
        settings.input_dir, settings.input.file_types, stored, registered, materialized, document_fingerprint(settings)
    )
    report = IndexReport(changes=changes, method=settings.resolved_method)
    announce(changes.summary())

    if changes.deleted:
        report.deleted_rows = delete_documents(settings, instance, changes.deleted, registered)
    if changes.new:
        instance.add_dynamic_partitions(PARTITION_NAME, changes.new)
        announce(f"indexing {len(changes.new)} new document file(s)")
        outcome = run_job(defs, instance, DOCUMENTS_JOB, changes.new)
        report.runs.append(outcome.as_dict())
        if outcome.success and len(changes.new) > 1:
            # A range run stores the documents that worked; failed ones get one more try on
            # their own, which marks their partition as failed in Dagster if it fails again.
            for key in failed_extractions(settings, changes.new):
                announce(f"retrying {key} on its own (its extraction failed)")
                report.runs.append(run_job(defs, instance, DOCUMENTS_JOB, [key]).as_dict())
    for key in changes.changed:
        announce(f"re-indexing changed file {key}")
        outcome = run_job(defs, instance, DOCUMENTS_JOB, [key])
        report.runs.append(outcome.as_dict())
    report.failed_documents = failed_extractions(settings, changes.new + changes.changed)
    if _has_job(defs, CORPUS_JOB) and (changes.any or force_corpus or not _corpus_built(settings)):
        announce("updating the corpus-wide graph")
        outcome = run_job(defs, instance, CORPUS_JOB)
        report.runs.append(outcome.as_dict())
    report.seconds = time.monotonic() - started
    report.usage = usage_of_runs(settings, [run["run_id"] for run in report.runs])
    return report


def failed_extractions(settings: Settings, keys: list[str]) -> list[str]:
    """Which of ``keys`` have a failed extraction status."""
    if not keys or not settings.database_path.exists():
        return []
    status = read_table(settings.database_path, "extraction_status", partition_column="document_key", partition_keys=keys)
    if status is None:
        return []
    return sorted(status.filter(status["status"] == "failed")["document_key"].to_list())


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


def delete_documents(settings: Settings, instance, keys: list[str], registered: set[str]) -> dict[str, int]:
    """Forget deleted documents: their partitions, and every row derived from them.

    Per-document tables lose the partitions' rows and LanceDB loses their text-unit vectors;
    corpus-wide tables are rebuilt by the corpus run that follows.
    """
    from graphrag_assets.storage.vectors import TEXT_UNIT_TABLE, delete_scopes

    from graphrag_assets.assets.partitions import PER_DOCUMENT_TABLES

    deleted = delete_partitions(settings.database_path, PER_DOCUMENT_TABLES, "document_key", keys)
    vectors = delete_scopes(settings.lancedb_path, TEXT_UNIT_TABLE, "document_key", keys)
    if vectors:
        deleted[f"lancedb:{TEXT_UNIT_TABLE}"] = vectors
    for key in keys:
        if key in registered:
            instance.delete_dynamic_partition(PARTITION_NAME, key)
    return deleted


def _has_job(defs, name: str) -> bool:
    return any(getattr(job, "name", None) == name for job in (defs.jobs or []))


def _corpus_built(settings: Settings) -> bool:
    from graphrag_assets.storage.database import connect, table_exists

    if not settings.database_path.exists():
        return False
    with connect(settings.database_path, read_only=True) as conn:
        return table_exists(conn, "entities")
