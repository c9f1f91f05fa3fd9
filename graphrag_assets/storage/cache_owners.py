"""Which documents and which corpus build each response-cache row belongs to, so that deleting a
document deletes the cached answers made from its text too.

Cache rows are keyed by content (:mod:`graphrag_assets.llm.cache`), so the key says nothing about
where the prompt came from. ``llm_cache_owners`` says it, one row per (cache key, owner):

- **document** owners: a per-document call (extraction, gleaning, claims, a text-unit embedding)
  is owned by the document whose chunk it read. Two documents with an identical chunk make the
  same call, so both own the row; it goes when the last of them goes.
- **corpus** owners: a call of a corpus step (description summaries, entity resolution, community
  reports, entity and report embeddings) is owned by the corpus run that made or reused it (its
  Dagster run id). Those prompts mix descriptions of many documents, so no document can own them.

The rule, applied by :func:`forget_documents` and :func:`settle_corpus_run`:

1. When documents are deleted, their document ownerships go, and every cache row left without any
   owner is deleted at once. That takes the deleted documents' own answers and embeddings, and
   also the answers nobody owns: query answers (their prompts quoted the index, which held the
   document) and rows cached before ownership was recorded. Corpus answers stay for now: the
   published build still uses them, and the next corpus run reuses those it still needs.
2. When a corpus build is published, only its own run's corpus ownerships are kept. If the build
   dropped documents that the previous build had, the rows left without an owner are deleted then:
   a summary or report that still mixed in a deleted document's descriptions has a different
   prompt from anything the new build asked, so it is not owned any more. Everything the new build
   did ask stays cached, so a re-run pays only for calls that are really new.

Report reuse across updates (``index/report_reuse.py``) keeps working: every corpus run asks for
every report again, and a reused report is a cache hit of that run, so the run owns it. Rows
cached before ownership was recorded have no owner and go at the first deletion (a one-time cost
if they are ever asked again). Cache rows are never deleted when no document was removed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import polars as pl

from graphrag_assets.core.ownership import CORPUS, DOCUMENT
from graphrag_assets.storage.database import connect, table_exists, transaction
from graphrag_assets.storage.table_names import CACHE_OWNERS as OWNERS_TABLE
from graphrag_assets.storage.table_names import CHAT_CACHE, EMBEDDING_CACHE

CACHE_TABLES = (CHAT_CACHE, EMBEDDING_CACHE)
OWNERS_DDL = f"""
create table if not exists {OWNERS_TABLE} (
    key VARCHAR,
    cache_table VARCHAR,
    scope VARCHAR,
    owner VARCHAR
)
"""  # no primary key: DuckDB took 5 s to delete 50k rows of this table with one, 15 ms without
_COLUMNS = ("key", "cache_table", "scope", "owner")


def add_owners(
    conn,
    rows: Iterable[tuple[str, str, str, str]],
    *,
    only_cached: bool = False,
    create: bool = True,
    fresh: bool = False,
) -> int:
    """Record (key, cache table, scope, owner) rows on an open connection; returns distinct rows given.

    ``only_cached`` keeps only keys that have a cache row (for ownership recorded after the fact,
    where a key may never have been cached: an embedder without a cache, say). ``create=False``:
    the caller knows the table exists (the cache's writer, after its first write of owners).
    ``fresh``: the caller knows no row holds these keys yet (answers cached in the same
    transaction), so none is looked for.

    The rows go to DuckDB as one list parameter per column: this runs on the cache's writer thread
    after nearly every model answer, where a polars frame (and its thread pool) cost several times
    more than the few rows it held, and an Arrow table would import pyarrow (+25 MB resident) for
    nothing else.
    """
    unique = list(dict.fromkeys(tuple(row) for row in rows))
    if not unique:
        return 0
    if create:
        conn.execute(OWNERS_DDL)
    if only_cached:
        cached = " union all ".join(
            f"select key, '{table}' as cache_table from {table}" for table in CACHE_TABLES if table_exists(conn, table)
        )
        if not cached:
            return 0
        source = f"select o.* from _owners o semi join ({cached}) c using (key, cache_table)"
    else:
        source = "select * from _owners"
    owners = ", ".join(f"unnest(${i}::VARCHAR[]) as {name}" for i, name in enumerate(_COLUMNS, start=1))
    if fresh and not only_cached:
        conn.execute(f"insert into {OWNERS_TABLE} by name select {owners}", [list(column) for column in zip(*unique)])
        return len(unique)
    conn.execute(
        f"insert into {OWNERS_TABLE} by name (with _owners as (select {owners}) {source} "
        f"except select key, cache_table, scope, owner from {OWNERS_TABLE} where key in (select key from _owners))",
        [list(column) for column in zip(*unique)],
    )
    return len(unique)


def record_owners(path: str | Path, rows: Iterable[tuple[str, str, str, str]], *, only_cached: bool = False) -> int:
    """:func:`add_owners` on its own connection (no-op without a database)."""
    rows = list(rows)
    if not rows or not Path(path).exists():
        return 0
    with connect(path) as conn:
        return add_owners(conn, rows, only_cached=only_cached)


def forget_documents(
    path: str | Path, *, removed: Sequence[str] | None = None, keep: Sequence[str] | None = None
) -> dict[str, int]:
    """Drop the ownerships of the documents ``removed`` (or of every document not in ``keep``),
    then the cache rows that no owner holds any more; rows deleted per cache table (non-zero only).

    Call it only when documents were really deleted: the sweep also takes unowned rows that are
    not about any document (query answers), which is right after a deletion and wasteful otherwise.
    """
    if not Path(path).exists():
        return {}
    keys = list(removed if removed is not None else keep or [])
    with connect(path) as conn:
        if not any(table_exists(conn, table) for table in CACHE_TABLES):
            return {}
        conn.execute(OWNERS_DDL)
        frame = pl.DataFrame({"owner": keys}, schema={"owner": pl.String})
        with transaction(conn, _documents=frame):
            test = "in" if removed is not None else "not in"
            conn.execute(
                f"delete from {OWNERS_TABLE} where scope = '{DOCUMENT}' and owner {test} (select owner from _documents)"
            )
            return _drop_unowned(conn)


def settle_corpus_run(path: str | Path, run_id: str, *, documents_removed: bool) -> dict[str, int]:
    """Keep only ``run_id``'s corpus ownerships (the build just published); after a build that
    removed documents, also delete the cache rows no owner holds. Rows deleted per cache table."""
    if not Path(path).exists():
        return {}
    with connect(path) as conn:
        conn.execute(OWNERS_DDL)
        with transaction(conn):
            conn.execute(f"delete from {OWNERS_TABLE} where scope = '{CORPUS}' and owner <> ?", [run_id])
            return _drop_unowned(conn) if documents_removed else {}


def clear_owners(conn) -> None:
    """Forget every ownership (the cache itself is being emptied)."""
    if table_exists(conn, OWNERS_TABLE):
        conn.execute(f"delete from {OWNERS_TABLE}")


def _drop_unowned(conn) -> dict[str, int]:
    deleted: dict[str, int] = {}
    for table in CACHE_TABLES:
        if not table_exists(conn, table):
            continue
        owned = f"select key from {OWNERS_TABLE} where cache_table = '{table}'"
        count = int(conn.execute(f"select count(*) from {table} where key not in ({owned})").fetchone()[0])
        if count:
            conn.execute(f"delete from {table} where key not in ({owned})")
            deleted[table] = count
    return deleted
