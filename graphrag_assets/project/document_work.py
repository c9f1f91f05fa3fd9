"""Which documents a run of the per-document steps works on, decided from our own tables.

A partition is either one document or a hash bucket of documents (:mod:`graphrag_assets.core.buckets`).
Either way each step works out its documents here rather than trusting Dagster's partition
statuses, so a bucket run redoes exactly the documents that changed (an edit to one document in a
bucket of 400 re-extracts that document only), a document whose extraction failed is retried on
its own, and re-running an up-to-date partition costs nothing:

- ingestion reads every document of a document partition (reading a file is cheap and shows the
  user what the file holds now), and in a bucket the documents that are new, changed, incomplete or
  failed; documents of the bucket whose file is gone are removed;
- extraction and embedding take the documents whose rows of that step were not made from the
  version ``source_files`` now holds (see :mod:`graphrag_assets.storage.documents`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from graphrag_assets.core.buckets import documents_in_buckets, is_bucket_key
from graphrag_assets.core.settings import Settings
from graphrag_assets.index.changes import ChangeSet
from graphrag_assets.project.state import document_state
from graphrag_assets.storage.documents import documents_needing_step, indexed_documents

EXTRACTION_STATUS = "extraction_status"


def bucketed(partition_keys: Sequence[str]) -> bool:
    return any(is_bucket_key(key) for key in partition_keys)


@dataclass(frozen=True)
class IngestWork:
    ingest: list[str]  # documents to read now
    remove: list[str]  # documents of these buckets whose file is gone


def ingest_work(settings: Settings, partition_keys: Sequence[str], changes: ChangeSet | None = None) -> IngestWork:
    """``changes``: the update's, when ``index`` handed its plan to the run (else read here, in bucket mode)."""
    if not bucketed(partition_keys):
        return IngestWork(sorted(partition_keys), [])
    changes = changes or document_state(settings).changes
    return IngestWork(
        documents_in_buckets([*changes.new, *changes.changed], partition_keys),
        documents_in_buckets(changes.deleted, partition_keys),
    )


def partition_documents(settings: Settings, partition_keys: Sequence[str]) -> list[str]:
    """The documents of these partitions that the index knows (a document partition is its own)."""
    if not bucketed(partition_keys):
        return sorted(partition_keys)
    return documents_in_buckets(indexed_documents(settings.database_path), partition_keys)


def step_work(settings: Settings, partition_keys: Sequence[str], step: str) -> list[str]:
    """The documents of these partitions whose ``step`` is out of date (extraction: or failed, or cut off)."""
    failed_table = EXTRACTION_STATUS if step == "graph_extractions" else None
    return documents_needing_step(
        settings.database_path, step, partition_documents(settings, partition_keys), failed_table
    )
