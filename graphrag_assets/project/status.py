"""What the index holds and what is out of date (``graphrag-assets status``).

Reads the database read-only and the input folder, with the same change detection as ``index``
and the sensor (:mod:`graphrag_assets.project.state`); works while the UI or a run is going on.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from graphrag_assets.core.settings import Settings
from graphrag_assets.llm.usage import CORPUS_MODEL_ASSETS, last_corpus_run_usage
from graphrag_assets.project.fingerprints import corpus_fingerprint
from graphrag_assets.project.lancedb_tables import lancedb_missing
from graphrag_assets.project.locks import index_lock_held, interrupted_update
from graphrag_assets.project.shared_index import cached_build
from graphrag_assets.project.state import corpus_staleness, document_state
from graphrag_assets.storage import table_names as tables
from graphrag_assets.storage.corpus import last_clustering, staged_tables
from graphrag_assets.storage.database import reading
from graphrag_assets.storage.index_reads import table_summary

PIPELINE_TABLES = (
    tables.SOURCE_FILES,
    tables.DOCUMENTS,
    tables.TEXT_UNITS,
    tables.GRAPH_EXTRACTIONS,
    tables.ENTITIES,
    tables.RELATIONSHIPS,
    tables.COVARIATES,
    tables.COMMUNITIES,
    tables.COMMUNITY_REPORTS,
    tables.TEXT_UNIT_EMBEDDINGS,
    tables.ENTITY_EMBEDDINGS,
    tables.COMMUNITY_REPORT_EMBEDDINGS,
    tables.CORPUS_MANIFEST,
    tables.CORPUS_BUILD,
    tables.CHAT_CACHE,
    tables.USAGE,
)


def _paths_on_disk(on_disk: dict[str, str], source_files: pl.DataFrame | None) -> dict[str, str]:
    """Each document's file name as it is (or was) on disk: partition keys are sanitized."""
    stored = {} if source_files is None else dict(source_files.select("document_key", "path").drop_nulls().iter_rows())
    return {**stored, **on_disk}


def project_status(settings: Settings) -> dict[str, Any]:
    """What the index holds and what is out of date; the database is opened once for all of it."""
    with reading(settings.database_path):
        return _status(settings)


def _status(settings: Settings) -> dict[str, Any]:
    report: dict[str, Any] = {
        "root": str(settings.root),
        "method": settings.resolved_method,
        "database": str(settings.database_path),
        "input_dir": str(settings.input_dir),
        "tables": {},
    }
    manifest: pl.DataFrame | None = None
    extraction_status: pl.DataFrame | None = None
    if settings.database_path.exists():
        report["tables"], frames = table_summary(
            settings.database_path, PIPELINE_TABLES, (tables.CORPUS_MANIFEST, tables.EXTRACTION_STATUS)
        )
        manifest, extraction_status = frames[tables.CORPUS_MANIFEST], frames[tables.EXTRACTION_STATUS]
    state = document_state(settings)
    changes, source_files = state.changes, state.source_files
    documents: dict[str, Any] = {
        "new": changes.new,
        "changed": changes.changed,
        "deleted": changes.deleted,
        "unchanged": len(changes.unchanged),
        "reconfigured": changes.reconfigured,
        "skipped": [],
        "failed": [],
        "parse_failures": [],
        "paths": _paths_on_disk(changes.paths, source_files),
        "passed_over": changes.passed_over,
    }
    if source_files is not None:
        documents["skipped"] = (
            source_files.filter(pl.col("status") != "ingested").select("document_key", "message").to_dicts()
        )
    if extraction_status is not None:
        documents["failed"] = (
            extraction_status.filter(pl.col("status") == "failed")
            .select("document_key", "error")
            .sort("document_key")
            .to_dicts()
        )
        documents["parse_failures"] = (
            extraction_status.filter(pl.col("parse_failures") > 0)
            .select("document_key", "parse_failures")
            .sort("document_key")
            .to_dicts()
        )
    build = cached_build(settings)
    if build is not None:  # a reader of the shared build: the input folder is on the machine that indexes
        report["shared_build"] = {"url": settings.storage.shared_url, "build_id": build}
        unchanged = 0 if source_files is None else source_files.height
        documents.update(new=[], changed=[], deleted=[], unchanged=unchanged, passed_over=[])
    report["documents"] = documents
    unfinished = staged_tables(settings.database_path, read_only=True)
    report["corpus"] = corpus_staleness(source_files, manifest, corpus_fingerprint(settings), unfinished)
    report["corpus"]["update_running"] = index_lock_held(settings)
    report["corpus"]["lancedb_missing"] = bool(manifest is not None and lancedb_missing(settings))
    last_run = last_corpus_run_usage(settings.database_path, CORPUS_MODEL_ASSETS)
    report["corpus"]["truncated_answers"] = sum(u["truncated"] for u in last_run.values())
    report["interrupted_update"] = interrupted_update(settings)
    report["communities"] = community_clustering(settings)
    return report


def community_clustering(settings: Settings) -> dict[str, Any]:
    """The update mode and how the published communities were clustered (drift included)."""
    section = settings.communities
    return {
        "update": section.update,
        "drift_threshold": section.drift_threshold,
        "recluster_every": section.recluster_every,
        "last_run": last_clustering(settings.database_path),
    }
