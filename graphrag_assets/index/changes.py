"""What changed in the input folder since the last ingestion.

Used by the CLI's incremental ``index`` and by the sensor. A file whose size and modification time
match the last ingestion is assumed unchanged (like make or rsync); otherwise its bytes are hashed
and compared, so touching a file costs a hash (after which `index` stores its new time), not a re-index.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from graphrag_assets.index.input_files import file_hash, scan_input_files

_UNRECORDED = object()  # a state table from before settings fingerprints: no settings change is seen


@dataclass
class ChangeSet:
    new: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    reconfigured: list[str] = field(default_factory=list)  # changed because the settings changed
    paths: dict[str, str] = field(default_factory=dict)  # key -> path relative to the input folder
    hashes: dict[str, str] = field(default_factory=dict)  # key -> content hash of files hashed now
    passed_over: list[str] = field(default_factory=list)  # entries of the input folder that are not read, and why

    @property
    def any(self) -> bool:
        return bool(self.new or self.changed or self.deleted)

    def summary(self) -> str:
        return (
            f"{len(self.new)} new, {len(self.changed)} changed, {len(self.deleted)} deleted, "
            f"{len(self.unchanged)} unchanged document file(s)"
        )


def detect_changes(
    input_dir: Path,
    file_types: list[str],
    stored: pl.DataFrame | None,
    registered_keys: set[str],
    materialized_keys: set[str] | None = None,
    fingerprint: str | None = None,
) -> ChangeSet:
    """Compare the input folder with the stored ``source_files`` state.

    ``registered_keys`` are the document partitions Dagster knows; ``materialized_keys`` those
    with a successful ingestion (a registered but never-ingested partition counts as new work).
    A document ingested with other settings (``fingerprint`` differs) counts as changed.
    """
    # (size, mtime_ns, content hash, settings fingerprint) by document, read from the columns at
    # once: a dict per row cost 0.55 s at 100,000 documents, which `status` and `index` pay each time.
    state: dict[str, tuple] = {}
    if stored is not None and not stored.is_empty():
        fingerprints = (
            stored["settings_fingerprint"].to_list()
            if "settings_fingerprint" in stored.columns
            else [_UNRECORDED] * stored.height
        )
        state = dict(
            zip(
                stored["document_key"].to_list(),
                zip(
                    stored["size"].to_list(),
                    stored["mtime_ns"].to_list(),
                    stored["content_hash"].to_list(),
                    fingerprints,
                ),
            )
        )
    changes = ChangeSet()
    on_disk: set[str] = set()
    scan = scan_input_files(input_dir, file_types)
    changes.passed_over = scan.passed_over
    for found in scan.files:
        on_disk.add(found.key)
        changes.paths[found.key] = found.path
        previous = state.get(found.key)
        if found.key not in registered_keys:
            changes.new.append(found.key)
            continue
        if previous is None or (materialized_keys is not None and found.key not in materialized_keys):
            changes.changed.append(found.key)  # registered but never ingested successfully
            continue
        size, mtime_ns, content_hash, stored_fingerprint = previous
        if fingerprint is not None and stored_fingerprint is not _UNRECORDED and stored_fingerprint != fingerprint:
            changes.changed.append(found.key)
            changes.reconfigured.append(found.key)
            continue
        if size == found.size and mtime_ns == found.mtime_ns:
            changes.unchanged.append(found.key)
            continue
        try:
            digest = file_hash(input_dir / found.path)
        except FileNotFoundError:
            continue  # gone since the scan
        changes.hashes[found.key] = digest
        (changes.unchanged if digest == content_hash else changes.changed).append(found.key)
    for key in sorted(registered_keys | set(state)):
        if key not in on_disk:
            changes.deleted.append(key)
    for bucket in (changes.new, changes.changed, changes.unchanged, changes.deleted):
        bucket.sort()
    return changes
