"""What the index holds and what is out of date (``graphrag-assets status``).

Reads the database read-only, the input folder and the Dagster instance's partition statuses, with
the same change detection as ``index`` and the sensor; works while the UI is running.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from graphrag_assets.fingerprints import corpus_fingerprint
from graphrag_assets.settings import Settings
from graphrag_assets.storage.database import connect, table_exists

PIPELINE_TABLES = (
    "source_files",
    "documents",
    "text_units",
    "graph_extractions",
    "entities",
    "relationships",
    "covariates",
    "communities",
    "community_reports",
    "text_unit_embeddings",
    "entity_embeddings",
    "community_report_embeddings",
    "corpus_manifest",
    "llm_cache",
    "llm_usage",
)


def _read(conn, table: str) -> pl.DataFrame | None:
    return conn.sql(f'select * from "{table}"').pl() if table_exists(conn, table) else None


def project_status(settings: Settings) -> dict[str, Any]:
    from graphrag_assets.document_state import document_state
    from graphrag_assets.runner import open_instance

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
        with connect(settings.database_path, read_only=True) as conn:
            for table in PIPELINE_TABLES:
                if table_exists(conn, table):
                    report["tables"][table] = int(conn.execute(f'select count(*) from "{table}"').fetchall()[0][0])
            manifest = _read(conn, "corpus_manifest")
            extraction_status = _read(conn, "extraction_status")
    instance = open_instance(settings)
    state = document_state(settings, instance)
    changes, source_files = state.changes, state.source_files
    documents: dict[str, Any] = {
        "new": changes.new,
        "changed": changes.changed,
        "deleted": changes.deleted,
        "unchanged": len(changes.unchanged),
        "reconfigured": changes.reconfigured,
        "skipped": [],
        "failed": [],
    }
    if source_files is not None:
        documents["skipped"] = (
            source_files.filter(pl.col("status") != "ingested").select("document_key", "message").to_dicts()
        )
    if extraction_status is not None:
        documents["failed"] = (
            extraction_status.filter(pl.col("status") == "failed").select("document_key", "error").sort("document_key").to_dicts()
        )
    report["documents"] = documents
    report["corpus"] = corpus_staleness(source_files, manifest, corpus_fingerprint(settings))
    report["communities"] = community_clustering(settings, instance)
    return report


def community_clustering(settings: Settings, instance) -> dict[str, Any]:
    """The update mode and how the stored communities were clustered (drift included)."""
    from graphrag_assets.assets.communities import last_clustering

    section = settings.communities
    return {
        "update": section.update,
        "drift_threshold": section.drift_threshold,
        "recluster_every": section.recluster_every,
        "last_run": last_clustering(instance),
    }


def corpus_staleness(
    source_files: pl.DataFrame | None, manifest: pl.DataFrame | None, fingerprint: str | None = None
) -> dict[str, Any]:
    """Which ingested documents (and whether the corpus settings) differ from the last corpus build."""
    if manifest is None:
        return {"built": False, "stale": source_files is not None and not source_files.is_empty()}
    current = {} if source_files is None else dict(zip(source_files["document_key"], source_files["content_hash"]))
    built = dict(zip(manifest["document_key"], manifest["content_hash"]))
    added = sorted(set(current) - set(built))
    removed = sorted(set(built) - set(current))
    changed = sorted(k for k in set(current) & set(built) if current[k] != built[k])
    failed = sorted(manifest.filter(pl.col("status") == "failed")["document_key"].to_list()) if "status" in manifest.columns else []
    built_with = set(manifest["settings_fingerprint"].drop_nulls().to_list()) if "settings_fingerprint" in manifest.columns else set()
    settings_changed = fingerprint is not None and built_with != {fingerprint} and not manifest.is_empty()
    return {
        "built": True,
        "stale": bool(added or removed or changed or settings_changed),
        "settings_changed": settings_changed,
        "documents_since_build": {"added": added, "changed": changed, "removed": removed},
        "left_out": failed,
    }
