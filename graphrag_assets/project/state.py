"""What the pipeline knows about each document, in one place for ``index``, ``status``, the dry
run, the sensor and the schedule (so they never disagree).

A document needs work when its file is new, changed (content or per-document settings), deleted,
or when its partition is not complete: a run failed part-way, or its extraction failed.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from graphrag_assets.project.fingerprints import corpus_fingerprint, document_fingerprint
from graphrag_assets.index.changes import ChangeSet, detect_changes
from graphrag_assets.core.settings import Settings
from graphrag_assets.storage.tables import read_table


@dataclass
class DocumentState:
    changes: ChangeSet
    registered: list[str]  # Dagster's document partitions, in partition order
    source_files: pl.DataFrame | None
    failed: list[str]  # documents whose last extraction failed

    @property
    def hashes(self) -> dict[str, str]:
        """Content hash per document: as stored, updated by the files hashed in this check."""
        stored = {} if self.source_files is None else dict(zip(self.source_files["document_key"], self.source_files["content_hash"]))
        return {**stored, **self.changes.hashes}


def failed_extractions(settings: Settings, keys: list[str] | None = None, wait_seconds: float = 30.0) -> list[str]:
    """Documents (of ``keys``, or all) whose extraction status is ``failed``."""
    if not settings.database_path.exists():
        return []
    status = read_table(settings.database_path, "extraction_status", read_only=True, wait_seconds=wait_seconds)
    if status is None:
        return []
    failed = status.filter(pl.col("status") == "failed")["document_key"].to_list()
    return sorted(k for k in failed if keys is None or k in keys)


def document_state(settings: Settings, instance, wait_seconds: float = 30.0) -> DocumentState:
    """Compare the input folder with what the index and Dagster hold (reads the database read-only)."""
    from graphrag_assets.pipeline.partitions import PARTITIONS_NAME, complete_document_partitions

    registered = list(instance.get_dynamic_partitions(PARTITIONS_NAME))
    stored = None
    if settings.database_path.exists():
        stored = read_table(settings.database_path, "source_files", read_only=True, wait_seconds=wait_seconds)
    failed = failed_extractions(settings, None, wait_seconds)
    complete = complete_document_partitions(instance, registered) - set(failed) if registered else set()
    changes = detect_changes(
        settings.input_dir, settings.input.file_types, stored, set(registered), complete, document_fingerprint(settings)
    )
    return DocumentState(changes, registered, stored, failed)


def corpus_is_stale(settings: Settings, source_files: pl.DataFrame | None, wait_seconds: float = 30.0) -> bool:
    """True when the corpus graph was built from other documents or other corpus settings."""
    from graphrag_assets.project.status import corpus_staleness

    manifest = None
    if settings.database_path.exists():
        manifest = read_table(settings.database_path, "corpus_manifest", read_only=True, wait_seconds=wait_seconds)
    return bool(corpus_staleness(source_files, manifest, corpus_fingerprint(settings))["stale"])
