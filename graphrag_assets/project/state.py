"""What the pipeline knows about each document, in one place for ``index``, ``status``, the dry
run, the sensor and the schedule (so they never disagree).

A document needs work when its file is new, changed (content or per-document settings), deleted,
or when it is not complete: a run stopped part-way (see :mod:`graphrag_assets.storage.documents`),
or its extraction failed. Everything here is read from the project database and the input folder,
never from Dagster, so ``status`` and the dry run work (and start quickly) without it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from graphrag_assets.core.errors import UserError
from graphrag_assets.core.settings import Settings
from graphrag_assets.index.changes import ChangeSet, detect_changes
from graphrag_assets.project.fingerprints import corpus_fingerprint, document_fingerprint
from graphrag_assets.project.lancedb_tables import lancedb_missing
from graphrag_assets.storage.corpus import staged_tables
from graphrag_assets.storage.documents import STEPS_TABLE, complete_documents
from graphrag_assets.storage.tables import read_table

DEFAULT_WAIT_SECONDS = 30.0


@dataclass
class DocumentState:
    changes: ChangeSet
    source_files: pl.DataFrame | None
    failed: list[str]  # documents whose last extraction failed

    @property
    def hashes(self) -> dict[str, str]:
        """Content hash per document: as stored, updated by the files hashed in this check."""
        stored = (
            {}
            if self.source_files is None
            else dict(zip(self.source_files["document_key"], self.source_files["content_hash"]))
        )
        return {**stored, **self.changes.hashes}


def _read(settings: Settings, table: str, wait_seconds: float) -> pl.DataFrame | None:
    return read_table(settings.database_path, table, read_only=True, wait_seconds=wait_seconds)


def failed_extractions(
    settings: Settings, keys: list[str] | None = None, wait_seconds: float = DEFAULT_WAIT_SECONDS
) -> list[str]:
    """Documents (of ``keys``, or all) whose extraction status is ``failed``."""
    return failed_in(_read(settings, "extraction_status", wait_seconds), keys)


def failed_in(status: pl.DataFrame | None, keys: list[str] | None = None) -> list[str]:
    """Documents (of ``keys``, or all) whose extraction failed, from an ``extraction_status`` frame."""
    return [] if status is None else _keys_with(status, "failed", keys)


def parse_failures_in(status: pl.DataFrame | None, keys: list[str]) -> dict[str, int]:
    """Extraction records that could not be parsed, per document of ``keys`` that had any."""
    if status is None:
        return {}
    found = status.filter(pl.col("document_key").is_in(keys) & (pl.col("parse_failures") > 0))
    return dict(found.select("document_key", "parse_failures").sort("document_key").iter_rows())


def extraction_outcome(settings: Settings, keys: list[str]) -> tuple[list[str], dict[str, int]]:
    """The failed extractions and unparsed records among ``keys``, from one read of ``extraction_status``."""
    status = _read(settings, "extraction_status", DEFAULT_WAIT_SECONDS)
    return failed_in(status, keys), parse_failures_in(status, keys)


def read_source_files(settings: Settings) -> pl.DataFrame | None:
    """``source_files`` as it is now (after a run wrote it)."""
    return _read(settings, "source_files", DEFAULT_WAIT_SECONDS)


def missing_sources(settings: Settings, keys: list[str]) -> list[str]:
    """Documents of ``keys`` whose file was gone by the time their run read it."""
    source_files = read_source_files(settings)
    if source_files is None:
        return []
    return sorted(set(keys) & set(source_files.filter(pl.col("status") == "missing")["document_key"].to_list()))


def _keys_with(status: pl.DataFrame, value: str, keys: list[str] | None = None) -> list[str]:
    found = status.filter(pl.col("status") == value)["document_key"].to_list()
    return sorted(k for k in found if keys is None or k in keys)


def document_state(settings: Settings, wait_seconds: float = DEFAULT_WAIT_SECONDS) -> DocumentState:
    """Compare the input folder with what the index holds (reads the database read-only).

    One scan of the input folder and one read each of ``source_files``, ``extraction_status`` and
    the step table; ``index`` does this once per run (:mod:`graphrag_assets.project.index_plan`).
    """
    stored = _read(settings, "source_files", wait_seconds)
    status = _read(settings, "extraction_status", wait_seconds)
    failed = failed_in(status)
    known = set() if stored is None else set(stored["document_key"].to_list())
    # A document whose extraction failed, or was cut off at the token limit (not cached), is asked again.
    retried = set(failed) | (set() if status is None else set(_keys_with(status, "incomplete")))
    complete = complete_documents(stored, _read(settings, STEPS_TABLE, wait_seconds)) - retried
    changes = detect_changes(
        settings.input_dir, settings.input.file_types, stored, known, complete, document_fingerprint(settings)
    )
    return DocumentState(changes, stored, failed)


def check_input(settings: Settings, state: DocumentState, *, allow_empty: bool = False) -> None:
    """Refuse an update from a missing or empty input folder, in one sentence, before anything is written.

    A typo in ``input.dir`` or an unmounted share looks exactly like "every document was deleted";
    the index is emptied only when the user says so (``allow_empty``).
    """
    if state.changes.paths:
        return
    folder = settings.input_dir
    problem = (
        "does not exist"
        if not folder.is_dir()
        else f"holds no documents ({', '.join(settings.input.file_types)} files)"
    )
    indexed = 0 if state.source_files is None else state.source_files.height
    if not indexed:
        raise UserError(
            f"the input folder {folder} {problem}; put documents there (or set input.dir in graphrag.yaml) and run 'graphrag-assets index' again."
        )
    if not allow_empty:
        raise UserError(
            f"the input folder {folder} {problem}, but the index holds {indexed} document file(s); nothing was deleted. "
            "Fix input.dir in graphrag.yaml, or pass --allow-empty-input to remove them all from the index."
        )


def corpus_is_stale(
    settings: Settings, source_files: pl.DataFrame | None, wait_seconds: float = DEFAULT_WAIT_SECONDS
) -> bool:
    """True when the published corpus build is not the one the documents and settings call for,
    a corpus run staged tables and did not publish them, or the index now needs LanceDB tables
    it does not have (see :mod:`graphrag_assets.project.lancedb_tables`)."""
    manifest = _read(settings, "corpus_manifest", wait_seconds)
    unfinished = staged_tables(settings.database_path, read_only=True, wait_seconds=wait_seconds)
    if corpus_staleness(source_files, manifest, corpus_fingerprint(settings), unfinished)["stale"]:
        return True
    return manifest is not None and lancedb_missing(settings, wait_seconds=wait_seconds)


def corpus_staleness(
    source_files: pl.DataFrame | None,
    manifest: pl.DataFrame | None,
    fingerprint: str | None = None,
    unfinished: Sequence[str] = (),
) -> dict[str, Any]:
    """Which ingested documents (and whether the corpus settings) differ from the last published
    build; ``unfinished`` are the tables a corpus run staged but did not publish."""
    if manifest is None:
        has_documents = source_files is not None and not source_files.is_empty()
        return {"built": False, "stale": has_documents or bool(unfinished), "unfinished": list(unfinished)}
    current = {} if source_files is None else dict(zip(source_files["document_key"], source_files["content_hash"]))
    built = dict(zip(manifest["document_key"], manifest["content_hash"]))
    added = sorted(set(current) - set(built))
    removed = sorted(set(built) - set(current))
    changed = sorted(k for k in set(current) & set(built) if current[k] != built[k])
    failed = (
        sorted(manifest.filter(pl.col("status") == "failed")["document_key"].to_list())
        if "status" in manifest.columns
        else []
    )
    built_with = (
        set(manifest["settings_fingerprint"].drop_nulls().to_list())
        if "settings_fingerprint" in manifest.columns
        else set()
    )
    settings_changed = fingerprint is not None and built_with != {fingerprint} and not manifest.is_empty()
    return {
        "built": True,
        "stale": bool(added or removed or changed or settings_changed or unfinished),
        "unfinished": list(unfinished),
        "settings_changed": settings_changed,
        "documents_since_build": {"added": added, "changed": changed, "removed": removed},
        "left_out": failed,
    }
