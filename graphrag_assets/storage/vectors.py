"""LanceDB tables of embeddings: publishing (incremental merge), similarity and full-text search.

DuckDB holds the embeddings as the system of record; LanceDB is the search index, named like
Microsoft GraphRAG's (``text_unit_text``, ``entity_description``, ``community_full_content``) so
its tools find them. Publishing merges by id: rows whose text changed are updated, new rows are
inserted and rows whose source is gone (within the published scope) are deleted; nothing is
rewritten wholesale. ``lancedb`` is imported lazily because importing it takes ~2 s.

A table published with a ``text`` column (the text units') also keeps LanceDB's native full-text
index (BM25, English stemming and stop words) on it, caught up by merges in batches
(:func:`_index_text`): the full-text search of a big build without search tables
(``storage/search_tables.py``), whose hits hybrid search fuses with the vector hits
(:mod:`graphrag_assets.query.hybrid_search`).
"""

from __future__ import annotations

import functools
import os
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import timedelta
from itertools import chain
from pathlib import Path

import polars as pl

from graphrag_assets.core.errors import UserError, dimension_mismatch
from graphrag_assets.storage.database import disk_full, is_disk_full

TEXT_UNIT_TABLE = "text_unit_text"
ENTITY_TABLE = "entity_description"
REPORT_TABLE = "community_full_content"
TEXT_COLUMN = "text"


@dataclass(frozen=True)
class PublishResult:
    inserted: int
    updated: int
    deleted: int
    rows: int
    version: int = 0  # the table's version after the merge (0: the table does not exist)


def lancedb_module():
    """``lancedb``, imported on first use (about 1–2 s) with its Rust log limited to errors.

    Its default level prints a WARN line for every table it creates ("No existing dataset ..."),
    which is how LanceDB always creates one; ``LANCEDB_LOG`` set by the user still wins.
    """
    os.environ.setdefault("LANCEDB_LOG", "error")
    import lancedb

    return lancedb


def _writes(function: Callable) -> Callable:
    """A write to the LanceDB folder ``path`` (the first argument) that reports a full disk in one sentence."""

    @functools.wraps(function)
    def write(path: Path, *args, **kwargs):
        try:
            return function(path, *args, **kwargs)
        except Exception as exc:
            if is_disk_full(exc):
                raise disk_full(Path(path)) from exc
            raise

    return write


def _connect(path: Path):
    path.mkdir(parents=True, exist_ok=True)
    return lancedb_module().connect(str(path))


def _table_names(db) -> set[str]:
    listed = db.list_tables()
    return set(getattr(listed, "tables", listed))


def table_names(path: Path) -> list[str]:
    """The LanceDB tables under ``path`` (none when the folder does not exist)."""
    return sorted(_table_names(_connect(path))) if path.exists() else []


def table_built(path: Path, table: str) -> bool:
    """Whether the table exists, read from the folder LanceDB keeps it in (``<table>.lance``).

    Asking LanceDB itself would import it (about a second) in every step that only needs to know
    whether there is anything to maintain.
    """
    return (path / f"{table}.lance").is_dir()


def drop_tables(path: Path, tables: Sequence[str]) -> list[str]:
    """Delete those of ``tables`` that exist (an index replaced by one that keeps no LanceDB
    tables); returns the names deleted. LanceDB is imported only when there is one."""
    present = [table for table in tables if table_built(path, table)]
    if present:
        db = _connect(path)
        for table in present:
            db.drop_table(table)
    return present


def _open(path: Path, table: str):
    """The LanceDB table, or None when the database or the table does not exist."""
    if not table_built(path, table):
        return None
    db = _connect(path)
    return db.open_table(table) if table in _table_names(db) else None


def _arrow(frame: pl.DataFrame):
    """id, vector (fixed-size float32 list), text_hash and scope column as an Arrow table."""
    return frame.with_columns(pl.col("vector").cast(pl.Array(pl.Float32, _dimension(frame)))).to_arrow()


def _dimension(frame: pl.DataFrame) -> int:
    dtype = frame.schema["vector"]
    if isinstance(dtype, pl.Array):
        return dtype.size
    first = frame.get_column("vector").drop_nulls().head(1).to_list()
    return len(first[0]) if first else 0


def _quote_list(values: Sequence[str]) -> str:
    return ", ".join("'" + v.replace("'", "''") + "'" for v in values)


@_writes
def publish(
    path: Path,
    table: str,
    frame: pl.DataFrame,
    *,
    scope_column: str | None = None,
    scope_keys: Sequence[str] | None = None,
) -> PublishResult:
    """Merge ``frame`` (id, vector, text_hash[, scope column][, text]) into a LanceDB table.

    With ``scope_column``/``scope_keys`` only rows of those scopes (e.g. document partitions) are
    candidates for deletion; without them every row missing from ``frame`` is deleted. A change of
    vector dimension (another embedding model) or of columns (a table published before it stored
    its text) recreates the table. With a ``text`` column the full-text index is kept up to date.
    """
    db = _connect(path)
    names = _table_names(db)
    if frame.is_empty() and table not in names:
        return PublishResult(0, 0, 0, 0)
    if table in names:
        existing = db.open_table(table)
        field = existing.schema.field("vector")
        existing_dim = getattr(field.type, "list_size", None)
        changed_columns = set(existing.schema.names) != set(frame.columns)
        if not frame.is_empty() and (existing_dim != _dimension(frame) or changed_columns):
            db.drop_table(table)
            names.discard(table)
    if table not in names:
        if frame.is_empty():
            return PublishResult(0, 0, 0, 0)
        created = db.create_table(table, data=_arrow(frame))
        _index_text(created)
        return PublishResult(frame.height, 0, 0, created.count_rows(), created.version)
    existing = db.open_table(table)
    if frame.is_empty():
        where = None if scope_column is None else f"{scope_column} IN ({_quote_list(scope_keys or [])})"
        if scope_column is not None and not scope_keys:
            return PublishResult(0, 0, 0, existing.count_rows(), existing.version)
        before = existing.count_rows()
        existing.delete(where or "true")
        return PublishResult(0, 0, before - existing.count_rows(), existing.count_rows(), existing.version)
    merge = (
        existing.merge_insert("id")
        .when_matched_update_all(where="target.text_hash != source.text_hash")
        .when_not_matched_insert_all()
    )
    if scope_column is None:
        merge = merge.when_not_matched_by_source_delete()
    elif scope_keys:
        merge = merge.when_not_matched_by_source_delete(f"{scope_column} IN ({_quote_list(scope_keys)})")
    result = merge.execute(_arrow(frame))
    if result.num_inserted_rows or result.num_updated_rows or result.num_deleted_rows:
        _index_text(existing)
    return PublishResult(
        result.num_inserted_rows,
        result.num_updated_rows,
        result.num_deleted_rows,
        existing.count_rows(),
        existing.version,
    )


@_writes
def create_from_frames(path: Path, table: str, frames: Iterator[pl.DataFrame]) -> PublishResult:
    """Create (replace) a table from a stream of frames in one write, one table version.

    For building a table that was not kept before from rows DuckDB holds, without a second full
    copy of them in memory; with a ``text`` column its full-text index is built too.
    """
    first = next(frames, None)
    if first is None or first.is_empty():
        return PublishResult(0, 0, 0, 0)
    head = _arrow(first)
    batches = chain(head.to_batches(), (batch for frame in frames for batch in _arrow(frame).to_batches()))
    created = _connect(path).create_table(table, data=batches, schema=head.schema, mode="overwrite")
    _index_text(created)
    rows = created.count_rows()
    return PublishResult(rows, 0, 0, rows, created.version)


def version(path: Path, table: str) -> int:
    """The table's latest version (0: it does not exist)."""
    existing = _open(path, table)
    return 0 if existing is None else existing.version


@_writes
def compact(path: Path, tables: Sequence[str]) -> dict[str, int]:
    """Compact these tables and delete every older version; returns each table's new version.

    LanceDB keeps every version of a table (time travel), so vectors of deleted documents stay
    readable in old versions until they are cleaned up; this is what makes a deletion final.
    """
    versions: dict[str, int] = {}
    for table in tables:
        existing = _open(path, table)
        if existing is None:
            continue
        with warnings.catch_warnings():
            # LanceDB warns that readers of an older version fail; ours fall back to the latest one,
            # which has the same content (see LanceVectorIndex).
            warnings.filterwarnings("ignore", message=r"optimize\(cleanup_older_than=0\)")
            existing.optimize(cleanup_older_than=timedelta(0), delete_unverified=True)
        versions[table] = existing.version
    return versions


# A merge folds its rows into the full-text index (LanceDB's ``optimize``) only once the rows the
# index lacks reach 1/UNINDEXED_SHARE of the table, or its small files SMALL_FRAGMENTS: ``optimize``
# also compacts the table, which rewrote the text units' whole data file (218 MB at 100,000
# documents) for each added document. LanceDB advises it after about 20 modifications.
UNINDEXED_SHARE = 10
SMALL_FRAGMENTS = 20


def _index_text(table) -> None:
    """Create the full-text index of a table's ``text`` column, or fold new rows into it when
    enough of them wait (see :data:`UNINDEXED_SHARE`).

    Rows the index does not cover yet are still found (LanceDB scans them), so this is about
    speed, not correctness; ``optimize`` adds new rows to the index without rebuilding it.
    """
    if TEXT_COLUMN not in table.schema.names:
        return
    indexes = [index for index in table.list_indices() if TEXT_COLUMN in index.columns]
    if not indexes:
        from lancedb.index import FTS

        table.create_index(TEXT_COLUMN, config=FTS(with_position=False))
        return
    stats = table.stats()
    waiting = table.index_stats(indexes[0].name).num_unindexed_rows
    small = stats["fragment_stats"]["num_small_fragments"]
    if waiting * UNINDEXED_SHARE >= stats["num_rows"] or small >= SMALL_FRAGMENTS:
        table.optimize()


@_writes
def delete_scopes(path: Path, table: str, scope_column: str, scope_keys: Sequence[str]) -> int:
    """Delete the rows of some scopes (documents that were removed); returns rows deleted."""
    existing = _open(path, table) if scope_keys else None
    if existing is None:
        return 0
    before = existing.count_rows()
    existing.delete(f"{scope_column} IN ({_quote_list(scope_keys)})")
    return before - existing.count_rows()


@_writes
def delete_scopes_except(path: Path, table: str, scope_column: str, keep: Sequence[str]) -> int:
    """Delete the rows of every scope not in ``keep``; returns rows deleted.

    The scopes present are read first (one column) and only those to go are named, if any: a
    filter ``NOT IN`` the 100,000 kept documents of a big index took 0.9-1.05 s of every update,
    which mostly deletes nothing, and made a new version of the table (now 0.12-0.16 s).
    """
    existing = _open(path, table)
    if existing is None:
        return 0
    where = "true"
    if keep:
        present = existing.search().select([scope_column]).limit(None).to_arrow().column(scope_column)
        gone = sorted(set(present.unique().drop_null().to_pylist()) - set(keep))
        if not gone:
            return 0
        where = f"{scope_column} IN ({_quote_list(gone)})"
    before = existing.count_rows()
    existing.delete(where)
    return before - existing.count_rows()


def table_ids(path: Path, table: str) -> list[str]:
    """All ids in a LanceDB table (for consistency checks)."""
    existing = _open(path, table)
    return [] if existing is None else sorted(existing.to_arrow().column("id").to_pylist())


class LanceTextIndex:
    """BM25 full-text search over a LanceDB table's ``text`` column (the query LexicalIndex protocol).

    The question is matched as plain words (a ``MatchQuery``), so quotes, ``AND`` or ``-`` in it
    are not read as query syntax.
    """

    def __init__(self, table) -> None:
        self._table = table

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        if k <= 0 or not query.strip():
            return []
        from lancedb.query import MatchQuery

        hits = (
            self._table.search(MatchQuery(query, TEXT_COLUMN), query_type="fts")
            .select(["id", "_score"])
            .limit(k)
            .to_arrow()
        )
        return [(i, float(s)) for i, s in zip(hits.column("id").to_pylist(), hits.column("_score").to_pylist())]


def lexical_index(path: Path, table: str, version: int | None = None) -> LanceTextIndex | None:
    """The full-text search of a table (at ``version``, as :class:`LanceVectorIndex`), or None when
    the table is missing or holds no text."""
    opened = _open_at(path, table, version)
    if opened is None or TEXT_COLUMN not in opened.schema.names:
        return None
    return LanceTextIndex(opened)


def _open_at(path: Path, table: str, version: int | None):
    """The table checked out at ``version``; at its latest version when that one was compacted away
    (after a newer build with the same content) or when ``version`` is None."""
    opened = _open(path, table)
    if opened is not None and version is not None and version != opened.version:
        try:
            opened.checkout(version)
        except ValueError:
            opened.checkout_latest()
    return opened


class LanceVectorIndex:
    """Cosine-similarity search over one LanceDB table (implements the query VectorIndex protocol).

    ``version`` pins the table at the version the published corpus build recorded, so a corpus run
    that merged new vectors but did not commit its tables is not seen. A version that is gone was
    compacted away after a newer commit with the same content, so the latest version is used.
    """

    def __init__(self, path: Path, table: str, version: int | None = None) -> None:
        self._name = table
        self._table = _open_at(path, table, version)

    def search(self, vector: Sequence[float], k: int) -> list[tuple[str, float]]:
        if self._table is None or k <= 0:
            return []
        import numpy as np  # here, not at the top: 'status' and 'index' import this module and never search

        query = np.asarray(vector, dtype=np.float32)
        stored = getattr(self._table.schema.field("vector").type, "list_size", None)
        if stored is not None and query.shape != (stored,):
            raise UserError(dimension_mismatch(self._name, stored, query.shape[-1] if query.ndim else 0))
        hits = self._table.search(query).distance_type("cosine").limit(k).to_arrow()
        ids = hits.column("id").to_pylist()
        distances = hits.column("_distance").to_pylist()
        return [(i, 1.0 - float(d)) for i, d in zip(ids, distances)]
