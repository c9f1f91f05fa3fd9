"""``vacuum``: give back the disk space an index no longer uses.

Deleting documents and re-indexing leave space behind: LanceDB keeps every older version of a
table (time travel), and DuckDB reuses the blocks of deleted rows without ever shortening its
file. Vacuum compacts every LanceDB table and deletes its older versions, points the published
build at the compacted versions (same content), and rewrites the DuckDB file. With
``drop_cache`` it also empties the model response cache (the next index then pays for every call
again). Deleting a document already deletes the cached answers only it owned, and the next
corpus build those built from it (:mod:`graphrag_assets.storage.cache_owners`); dropping the
cache is for starting over.

It holds the index lock, so no update runs meanwhile, and refuses to run over an update that
stopped before it was published: that update's vectors may already be in LanceDB, and deleting
the versions the published build reads would serve half of it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from graphrag_assets.core.errors import UserError
from graphrag_assets.core.settings import Settings
from graphrag_assets.project.locks import index_lock
from graphrag_assets.storage import vectors
from graphrag_assets.storage.corpus import record_vector_versions, staged_tables, vector_versions
from graphrag_assets.storage.database import rewrite_compact
from graphrag_assets.storage.pending import has_pending
from graphrag_assets.storage.response_cache import empty_cache


@dataclass
class VacuumReport:
    bytes_before: int = 0
    bytes_after: int = 0
    lancedb_tables: dict[str, int] = field(default_factory=dict)  # table -> version after compaction
    cache_rows_deleted: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "bytes_before": self.bytes_before,
            "bytes_after": self.bytes_after,
            "bytes_freed": self.bytes_before - self.bytes_after,
            "lancedb_tables": self.lancedb_tables,
            "cache_rows_deleted": self.cache_rows_deleted,
        }


def vacuum_index(settings: Settings, *, drop_cache: bool = False) -> VacuumReport:
    """Compact LanceDB and DuckDB (and empty the response cache with ``drop_cache``)."""
    if not settings.database_path.exists():
        raise UserError(f"no index database at {settings.database_path}; there is nothing to vacuum.")
    with index_lock(settings, command="vacuum"):
        if staged_tables(settings.database_path) or has_pending(settings.database_path, read_only=False):
            raise UserError(
                "the last update stopped before it was published; run 'graphrag-assets index' to finish it, then vacuum."
            )
        report = VacuumReport(bytes_before=_size(settings))
        pinned = vector_versions(settings.database_path)
        report.lancedb_tables = vectors.compact(settings.lancedb_path, vectors.table_names(settings.lancedb_path))
        if pinned:
            record_vector_versions(
                settings.database_path, {t: report.lancedb_tables.get(t, v) for t, v in pinned.items()}
            )
        if drop_cache:
            report.cache_rows_deleted = empty_cache(settings.database_path)
        rewrite_compact(settings.database_path)
        report.bytes_after = _size(settings)
    return report


def _size(settings: Settings) -> int:
    """Bytes of the DuckDB file (with its write-ahead log) and the LanceDB folder."""
    files = [settings.database_path, settings.database_path.with_name(settings.database_path.name + ".wal")]
    total = sum(f.stat().st_size for f in files if f.exists())
    if settings.lancedb_path.exists():
        total += sum(f.stat().st_size for f in settings.lancedb_path.rglob("*") if f.is_file())
    return total
