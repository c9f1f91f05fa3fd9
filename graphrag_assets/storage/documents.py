"""Per-document bookkeeping in the project database: which step wrote which document, and forgetting
a document everywhere.

Every per-document table is written a partition at a time. After a write, :func:`record_document_step`
notes in ``document_steps`` which version of each document (content hash and settings
fingerprint, copied from its ``source_files`` row) the step's rows were made from. A document is
complete when every step holds the version ``source_files`` holds now; a run that stopped part
way (a failed step, a killed process) leaves an older version or none, so the document is done
again. This lives in our own table rather than in Dagster's partition statuses so that
``status``, the dry run and the sensor read it without Dagster, and a crash between writing rows
and recording them errs on the side of redoing work.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path

import duckdb
import polars as pl

from graphrag_assets.core.schemas import PER_DOCUMENT_TABLES
from graphrag_assets.storage.cache_owners import forget_documents
from graphrag_assets.storage.database import FrameStream, connect, table_exists
from graphrag_assets.storage.pending import mark_deleted
from graphrag_assets.storage.pending_rows import BUILD_DOCUMENT_TABLES
from graphrag_assets.storage.tables import delete_partitions, purge_partitions_except, quote
from graphrag_assets.storage.vectors import TEXT_UNIT_TABLE, delete_scopes, delete_scopes_except

STEPS_TABLE = "document_steps"
SOURCE_TABLE = "source_files"
# The per-document steps that must hold a document's current version for it to be complete.
REQUIRED_STEPS = tuple(table for table in PER_DOCUMENT_TABLES if table != SOURCE_TABLE)
# Steps one asset writes after ``step``, each recorded on its own: a run stopped between the writes
# (a Ctrl-C) records the first only. The document is then incomplete, so every later ``index``
# plans it again; the asset must redo it too (asking only by ``step`` it found nothing to do, and
# the document stayed "changed" for good).
WRITTEN_WITH = {"graph_extractions": ("extraction_status",)}
# Per-document tables that are the pipeline's own state: rows go at once (the build's go at the publish).
WORK_TABLES = (*(table for table in PER_DOCUMENT_TABLES if table not in BUILD_DOCUMENT_TABLES), STEPS_TABLE)


def record_document_step(path: str | Path, step: str, keys: Sequence[str]) -> None:
    """Note that ``step`` was written for ``keys`` from their current ``source_files`` rows.

    Tables that are not steps of the document pipeline (or a database without ``source_files``)
    are left alone, so the IO manager can call this for every partitioned write.
    """
    if step not in REQUIRED_STEPS or not keys:
        return
    with connect(path) as conn:
        if not table_exists(conn, SOURCE_TABLE):
            return
        conn.register("_keys", FrameStream(pl.DataFrame({"key": list(keys)}, schema={"key": pl.String})))
        conn.execute("begin transaction")
        try:
            conn.execute(
                f"create table if not exists {quote(STEPS_TABLE)} "
                "(document_key varchar, step varchar, content_hash varchar, settings_fingerprint varchar)"
            )
            conn.execute(
                f"delete from {quote(STEPS_TABLE)} where step = ? and document_key in (select key from _keys)", [step]
            )
            conn.execute(
                f"insert into {quote(STEPS_TABLE)} select document_key, ?, content_hash, settings_fingerprint "
                f"from {quote(SOURCE_TABLE)} where document_key in (select key from _keys)",
                [step],
            )
            conn.execute("commit")
        except Exception:
            with contextlib.suppress(duckdb.Error):  # a failed commit ended it already; keep its error
                conn.execute("rollback")
            raise
        finally:
            conn.unregister("_keys")


def documents_needing_step(
    path: str | Path, step: str, keys: Sequence[str], failed_status_table: str | None = None
) -> list[str]:
    """The documents of ``keys`` whose rows of ``step`` (or of a step written with it, see
    ``WRITTEN_WITH``) were not written from their current ``source_files`` version (or never),
    plus, with ``failed_status_table``, those whose status there is ``failed`` or ``incomplete``
    (an answer was cut off at the token limit); sorted.

    This is how the per-document steps decide their own work: a re-run of a document (or of a
    bucket of them) redoes exactly what is out of date, and nothing else.
    """
    if not keys:
        return []
    if not Path(path).exists():
        return sorted(keys)
    steps = (step, *WRITTEN_WITH.get(step, ()))
    with connect(path) as conn:
        if not table_exists(conn, SOURCE_TABLE) or not table_exists(conn, STEPS_TABLE):
            return sorted(keys)
        failed = ""
        if failed_status_table and table_exists(conn, failed_status_table):
            failed = f" or k.key in (select document_key from {quote(failed_status_table)} where status in ('failed', 'incomplete'))"
        conn.register("_keys", FrameStream(pl.DataFrame({"key": list(keys)}, schema={"key": pl.String})))
        try:
            rows = conn.execute(
                f"with current as (select d.document_key, count(distinct d.step) as steps from {quote(STEPS_TABLE)} d "
                f"join {quote(SOURCE_TABLE)} s on s.document_key = d.document_key "
                "and d.content_hash is not distinct from s.content_hash "
                "and d.settings_fingerprint is not distinct from s.settings_fingerprint "
                f"where d.step in ({', '.join('?' for _ in steps)}) group by d.document_key) "
                "select k.key from _keys k left join current c on c.document_key = k.key "
                f"where coalesce(c.steps, 0) < ?{failed} order by k.key",
                [*steps, len(steps)],
            ).fetchall()
        finally:
            conn.unregister("_keys")
    return [row[0] for row in rows]


def indexed_documents(path: str | Path) -> list[str]:
    """Every document with a ``source_files`` row (ingested, skipped or missing), sorted."""
    if not Path(path).exists():
        return []
    with connect(path) as conn:
        if not table_exists(conn, SOURCE_TABLE):
            return []
        return [row[0] for row in conn.execute(f"select document_key from {quote(SOURCE_TABLE)} order by 1").fetchall()]


def complete_documents(source_files: pl.DataFrame | None, steps: pl.DataFrame | None) -> set[str]:
    """Documents whose every required step was written from their current version."""
    if source_files is None or steps is None or source_files.is_empty():
        return set()
    current = source_files.select("document_key", "content_hash", "settings_fingerprint")
    matching = steps.filter(pl.col("step").is_in(REQUIRED_STEPS)).join(
        current, on=["document_key", "content_hash", "settings_fingerprint"], how="inner", nulls_equal=True
    )
    done = matching.group_by("document_key").agg(pl.col("step").n_unique().alias("steps"))
    return set(done.filter(pl.col("steps") == len(REQUIRED_STEPS))["document_key"].to_list())


def delete_documents(database: Path, lancedb: Path, keys: Sequence[str]) -> dict[str, int]:
    """Delete every row derived from these documents (tables, text-unit vectors and the cached model
    answers only they own, see :mod:`.cache_owners`); counts per table. Their rows of the published
    build go when the next build is published (:mod:`.pending`), and readers open the LanceDB
    text-unit table at the version that build recorded."""
    deleted = mark_deleted(database, keys)  # first: the documents' source_files rows say there is work left
    deleted.update(delete_partitions(database, WORK_TABLES, "document_key", keys))
    vectors = delete_scopes(lancedb, TEXT_UNIT_TABLE, "document_key", keys)
    if vectors:
        deleted[f"lancedb:{TEXT_UNIT_TABLE}"] = vectors
    if keys:
        deleted.update(forget_documents(database, removed=keys))
    return deleted


def keep_only_documents(database: Path, lancedb: Path, keep: Sequence[str]) -> dict[str, int]:
    """Delete every row derived from documents not in ``keep`` (as :func:`delete_documents`); counts per table."""
    deleted = mark_deleted(database, keep, keep=True)
    deleted.update(purge_partitions_except(database, WORK_TABLES, "document_key", keep))
    vectors = delete_scopes_except(lancedb, TEXT_UNIT_TABLE, "document_key", keep)
    if vectors:
        deleted[f"lancedb:{TEXT_UNIT_TABLE}"] = vectors
    if deleted:  # some document was removed: its cached answers go too
        deleted.update(forget_documents(database, keep=keep))
    return deleted


def refresh_file_stats(database: Path, rows: Sequence[dict[str, object]]) -> None:
    """Store new ``size`` and ``mtime_ns`` for files whose content was hashed and found unchanged."""
    if not rows or not Path(database).exists():
        return
    with connect(database) as conn:
        if not table_exists(conn, SOURCE_TABLE):
            return
        conn.register("_touched", FrameStream(pl.DataFrame(list(rows))))
        conn.execute(
            f"update {quote(SOURCE_TABLE)} set size = t.size, mtime_ns = t.mtime_ns from _touched t "
            f"where {quote(SOURCE_TABLE)}.document_key = t.document_key"
        )
        conn.unregister("_touched")
