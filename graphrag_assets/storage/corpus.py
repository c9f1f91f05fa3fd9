"""The corpus build commits as one unit.

A corpus run writes its tables (entities, relationships, communities, reports, embeddings, ...)
under a reserved name, ``_staged_<table>``; its last step, :func:`publish_corpus`, drops the
published tables and renames the staged ones in their place, writes ``corpus_manifest`` (the
documents the build was made from) and ``corpus_build`` (when, by which run, and which LanceDB
versions hold its vectors), all in one transaction. So readers — ``status``, ``index``, queries,
SQL — see the previous build or the new one, never a mix, and a run that is interrupted (Ctrl-C,
``kill -9``, a power cut) leaves the previous build in place plus staged tables that say work is
unfinished.

The staged tables sit in the main schema because DuckDB renames a table only within its schema.
Builds before staged them in a ``staging`` schema and copied each one in the commit: a second copy
of every corpus table in memory until the commit was done (9 MB of the cold index's peak for *A
Christmas Carol*), and the dropped copies' blocks left in the file (416 MB instead of 242 MB for
10,000 generated documents).

The same transaction folds in the rows the document runs since the last build wrote for the
build's document tables (documents, text units, their vectors; see :mod:`.pending`).

LanceDB has no transactions with DuckDB; instead its tables are merged before the commit (the
text units' by the document runs) and the versions they reached are recorded in ``corpus_build``,
so queries open every LanceDB table at the version of the build DuckDB holds (see
:class:`~graphrag_assets.storage.vectors.LanceVectorIndex`).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from graphrag_assets.storage.database import FrameStream, connect, frame_of, table_exists, transaction
from graphrag_assets.storage.pending import merge_pending
from graphrag_assets.storage.tables import quote

STAGED_PREFIX = "_staged_"
LEGACY_STAGING_SCHEMA = "staging"  # where builds before staged their tables; dropped by the next run
MANIFEST_TABLE = "corpus_manifest"
BUILD_TABLE = "corpus_build"
MANIFEST_COLUMNS = ("document_key", "path", "content_hash", "status", "error", "settings_fingerprint")
CLUSTERING_TABLE = "community_clustering"  # one row: how the build's communities were clustered
RUN_MARKER = "corpus_run"  # staged first by every corpus run, so even a run stopped before its first table shows


def staged_name(table: str) -> str:
    """The quoted name of ``table``'s staged version."""
    return quote(STAGED_PREFIX + table)


def staged_table_exists(conn, table: str) -> bool:
    return table_exists(conn, STAGED_PREFIX + table)


DUCKDB_ROW_GROUP_ROWS = 122_880  # DuckDB's rows per row group
# Narrow rows go this many to a statement: whole row groups, which DuckDB writes to the file as the
# statement runs. A statement's last, partial row group waits for the checkpoint, which rewrites the
# partial groups of all statements: 15 M relationships in statements of 250,000 rows took 35 s and
# 1,813 MB, of 245,760 rows 28 s and 1,319 MB (checkpoint 8 s -> 0.1 s; 2026-12-07, load 1.6).
STAGE_CHUNK_ROWS = 2 * DUCKDB_ROW_GROUP_ROWS
STAGE_MEMORY_LIMIT = "512MB"
# The nlp graph's relationships (1.7M rows for a 30 MB text file) written under this limit instead:
# DuckDB then keeps 128 MB of the table's blocks cached, not 512: ``bench/profile_graph_step.py``
# on that file's extraction rows peaked at 625 MB instead of 764 (write phase 6.8 s vs 5.5 s, load 4-5).
BATCHES_MEMORY_LIMIT = "128MB"
# ... up to this many relationships; a larger graph's own arrays put the step's peak in pruning and
# the descriptions, far above what the write adds, and there the lower limit only slows the write:
# 3 M of the 15 M relationships of 100,000 documents took 11.1 s under 128 MB, 7.4 s under 512 MB.
BATCHES_LIMIT_ROWS = 4_000_000
WIDE_ROW_BYTES = 1024  # frames whose rows are this wide or wider (embedding vectors) ...
WIDE_CHUNK_BYTES = 1 << 20  # ... are staged in chunks of at least about this size ...
WIDE_STATEMENTS = 2  # ... or in about this many statements, of at most BATCH_CHUNK_BYTES (see write_staged)
# ... or of this size when they come in batches (write_staged_batches): the communities' lists of
# 100,000 documents (7 M relationship ids) took 34 s in 1 MB statements, 8.9 s in 64 MB ones and
# 6.5 s in one per batch, at the same peak (1.1 GB; the batches' producer bounds their size).
BATCH_CHUNK_BYTES = 64 << 20
# Tables whose strings are stored without DuckDB's FSST compression: the communities' lists of ids
# (random hex, 8.6 M of them at 100,000 documents). DuckDB trying FSST on them was most of their
# write: the step's lists and write took 34.3-35.9 s with it, 21.7-25.6 s without, and the table
# takes 356 MB instead of 183 (2026-12-07, load 1.0-1.4).
PLAIN_STRING_TABLES = frozenset({"communities"})


def write_staged(path: str | Path, table: str, frame: pl.DataFrame) -> None:
    """Write ``frame`` as the staged version of ``table`` (replacing an earlier staged one).

    Large frames go in chunks of ``STAGE_CHUNK_ROWS``, each committed on its own, under a DuckDB
    memory limit: written in one statement, DuckDB held a second full copy of a frame of
    millions of relationships until the commit (+1 GB for 1.7M rows; +0.5 GB in chunks). Readers
    of ``table`` do not see the staged one before :func:`publish_corpus`, and a run stopped
    half-way is cleaned up by :func:`begin_corpus_run`, so per-chunk commits are safe here.
    Frames of wide rows (vectors) go in chunks of about ``WIDE_CHUNK_BYTES``: DuckDB takes about
    four times what it is given while it writes, +15 MB for the 3.5 MB of the Christmas Carol
    index's entity vectors in one statement, +12 MB in 1 MB chunks, and that write was the highest
    point of that index's memory. A larger frame of wide rows goes in :data:`WIDE_STATEMENTS`
    chunks of up to ``BATCH_CHUNK_BYTES``: every statement commits on its own, and the 50,000
    entities of 100,000 documents (150 MB, their text-unit lists) took 8.6 s in 1 MB statements,
    4.5-7.1 s in 19-37 MB ones and 2.7-3.4 s in 64 MB ones, at +64, +199-225 and +84-121 MB
    (2026-12-07, load 0.6-0.8).
    """
    statement_bytes = min(BATCH_CHUNK_BYTES, max(WIDE_CHUNK_BYTES, frame.estimated_size() // WIDE_STATEMENTS))
    _write_statements(path, table, _statements([frame], statement_bytes), STAGE_MEMORY_LIMIT)


def batches_memory_limit(rows: int) -> str:
    """DuckDB's memory limit for writing a table of ``rows`` made in batches (see :data:`BATCHES_LIMIT_ROWS`)."""
    return BATCHES_MEMORY_LIMIT if rows <= BATCHES_LIMIT_ROWS else STAGE_MEMORY_LIMIT


def write_staged_batches(
    path: str | Path,
    table: str,
    batches: Iterable[pl.DataFrame],
    memory_limit: str = STAGE_MEMORY_LIMIT,
    checkpoint: bool = False,
) -> int:
    """Write ``batches`` as the staged ``table``, one after another; returns the rows written.

    For a table made in batches so that it is never whole in memory; the batches' rows are cut
    into statements of whole row groups (:func:`_statements`; wide rows in statements of about
    ``BATCH_CHUNK_BYTES``), each committed on its own under ``memory_limit`` as
    :func:`write_staged` commits them, and nothing of it is kept: what the
    step checks and shows is read back by DuckDB
    (:func:`staged_graph_problems`, :func:`staged_top_rows`). DuckDB keeps the blocks it wrote
    cached up to the limit, so a table written only to be read by a later step (the nlp graph's
    relationships: :data:`BATCHES_MEMORY_LIMIT`) is better written under a lower one.
    ``checkpoint``: move the written rows into the file before the limit is lifted. Otherwise the
    checkpoint comes when the file is closed, without the limit: for the 1.7M relationships of a
    30 MB text file that close took +350 MB, under the limit it took nothing more than the writing
    (``bench/profile_graph_step.py``).
    """
    rows = _write_statements(path, table, _statements(batches), memory_limit, checkpoint=checkpoint)
    if rows is None:
        raise ValueError(f"no batch to write for {table}")
    return rows


def append_staged(path: str | Path, table: str, frame: pl.DataFrame) -> None:
    """Add ``frame``'s rows to the staged ``table``, which this run has written (its columns in
    the same order), in statements as :func:`write_staged` writes them."""
    _write_statements(path, table, _statements([frame]), STAGE_MEMORY_LIMIT, append=True)


def _write_statements(
    path: str | Path,
    table: str,
    statements: Iterable[pl.DataFrame],
    memory_limit: str,
    *,
    checkpoint: bool = False,
    append: bool = False,
) -> int | None:
    """Write ``statements`` as the staged ``table`` (``append``: into it), a commit each, under
    ``memory_limit``; the rows written, or None when no statement came. A table of
    :data:`PLAIN_STRING_TABLES` is checkpointed before the settings are reset: DuckDB compresses
    when it checkpoints."""
    rows = 0 if append else None
    plain = table in PLAIN_STRING_TABLES
    with connect(path) as conn:
        # set, not passed as connect config: a config that differs from another open connection
        # of this process to the same file is refused; reset after, as the instance may be shared
        conn.execute(f"set memory_limit = '{memory_limit}'")
        if plain:
            conn.execute("set disabled_compression_methods = 'fsst,dict_fsst'")
        try:
            for statement in statements:
                conn.register("_incoming", FrameStream(statement))
                try:
                    verb = (
                        f"insert into {staged_name(table)}"
                        if rows is not None
                        else f"create or replace table {staged_name(table)} as"
                    )
                    conn.execute(f"{verb} select * from _incoming")
                finally:
                    conn.unregister("_incoming")
                rows = (rows or 0) + statement.height
                del statement
            if checkpoint or plain:
                conn.execute("checkpoint")
        finally:
            conn.execute("reset memory_limit")
            if plain:
                conn.execute("reset disabled_compression_methods")
    return rows


# Each entity's degree as written and as its distinct neighbours in the relationships give it (an
# entity in no relationship: 0), made once into a temporary table that both degree checks read.
# The distinct pairs are of the ends' numbers in title order, not of the titles: 5.3-6.0 -> 2.8-3.0 s
# for the checks of 15 M relationships (2026-12-07, load 1.3-1.5).
_EXPECTED_DEGREES = """
    create or replace temp table _expected as
    with ends as (
        select title, (row_number() over (order by title))::integer as code
        from (select source as title from {relationships} union select target from {relationships})
    ),
    pairs as (
        select distinct least(s.code, t.code) as a, greatest(s.code, t.code) as b from {relationships} r
        left join ends s on r.source = s.title left join ends t on r.target = t.title
    ),
    degrees as (
        select code, count(*) as expected from (select a as code from pairs union all select b from pairs) group by code
    )
    select e.title, e.degree, coalesce(x.expected, 0) as expected
    from _entities e left join ends n on e.title = n.title left join degrees x on n.code = x.code"""
# The relationships with an end that is no entity (orphan) or whose combined degree is not the sum
# of its ends' expected degrees (an end that is no entity counts 0): one pass over the table for
# both, where a query each read it three times (at 100,000 documents, 15 M rows).
_RELATIONSHIP_PROBLEMS = """
    select r.id, s.title is null or t.title is null as orphan,
        r.combined_degree != coalesce(s.expected, 0) + coalesce(t.expected, 0) as mismatch
    from {relationships} r left join _expected s on r.source = s.title left join _expected t on r.target = t.title
    where orphan or mismatch"""
_ENTITY_PROBLEMS = {
    "duplicate_titles": "select title from _entities group by title having count(*) > 1 order by title",
    "entity_degree_mismatches": "select title from _expected where degree != expected order by title",
}


def staged_graph_problems(path: str | Path, entities: pl.DataFrame) -> dict[str, list[str]]:
    """The graph step's invariants (as :func:`~graphrag_assets.index.graph_checks.check_graph`
    states them) checked by DuckDB against the staged ``relationships`` and ``entities`` (a frame:
    ``title``, ``degree``), under the staging memory limit.

    For a relationships table of millions of rows written in batches: checked in polars, its
    string columns (ids, titles) and the joins over them were the graph step's peak memory
    (+0.5 GB over the written table's 1.9 M rows at 10,000 documents).
    Keys: ``orphan_relationships``, ``duplicate_titles``, ``entity_degree_mismatches`` and
    ``relationship_degree_mismatches`` (sorted ids or titles).
    """
    relationships = staged_name("relationships")
    with connect(path) as conn:
        conn.register("_entities", FrameStream(entities.select("title", "degree")))
        conn.execute(f"set memory_limit = '{STAGE_MEMORY_LIMIT}'")
        try:
            conn.execute(_EXPECTED_DEGREES.format(relationships=relationships))
            problems = {
                name: [row[0] for row in conn.execute(sql).fetchall()] for name, sql in _ENTITY_PROBLEMS.items()
            }
            rows = conn.execute(_RELATIONSHIP_PROBLEMS.format(relationships=relationships)).fetchall()
        finally:
            conn.execute("drop table if exists _expected")
            conn.execute("reset memory_limit")
            conn.unregister("_entities")
    problems["orphan_relationships"] = sorted({row[0] for row in rows if row[1]})
    problems["relationship_degree_mismatches"] = sorted({row[0] for row in rows if row[2]})
    return problems


def staged_top_rows(path: str | Path, table: str, columns: Sequence[str], order_by: str, rows: int) -> pl.DataFrame:
    """The first ``rows`` rows of the staged ``table`` by ``order_by`` (SQL), only ``columns``: a
    preview that does not need the table in memory."""
    selected = ", ".join(quote(column) for column in columns)
    with connect(path) as conn:
        return frame_of(conn.sql(f"select {selected} from {staged_name(table)} order by {order_by} limit {int(rows)}"))


def _statements(batches: Iterable[pl.DataFrame], wide_bytes: int = BATCH_CHUNK_BYTES) -> Iterator[pl.DataFrame]:
    """The rows of ``batches``, in order, cut into the frames written one statement each.

    Narrow rows go :data:`STAGE_CHUNK_ROWS` to a statement whatever the batches' sizes, the rows
    left over at the end of a batch carried into the next, so that every statement but the last
    writes whole row groups; wide rows go about ``wide_bytes`` to a statement. At least
    one frame comes (an empty batch's), so that the table is made.
    """
    carried: pl.DataFrame | None = None
    empty: pl.DataFrame | None = None  # an empty batch, to make the table from when no rows come
    made = False
    for batch in batches:
        chunk_rows = _chunk_rows(batch, wide_bytes)
        narrow = chunk_rows == STAGE_CHUNK_ROWS
        if carried is not None and narrow:
            batch = pl.concat([carried, batch], rechunk=False)  # no copy: the frame holds both parts
        elif carried is not None:  # a wide batch after narrow ones: the rows carried go first
            made = True
            yield carried
        carried = None
        whole = batch.height - batch.height % chunk_rows if narrow else batch.height
        for start in range(0, whole, chunk_rows):
            made = True
            yield batch.slice(start, chunk_rows)
        if whole < batch.height:
            carried = batch.slice(whole)
        elif not batch.height:
            empty = batch
    if carried is not None:
        yield carried
    elif not made and empty is not None:
        yield empty


def _chunk_rows(frame: pl.DataFrame, wide_chunk_bytes: int = WIDE_CHUNK_BYTES) -> int:
    row_bytes = frame.estimated_size() / max(frame.height, 1)
    return STAGE_CHUNK_ROWS if row_bytes < WIDE_ROW_BYTES else max(1, int(wide_chunk_bytes // row_bytes))


def read_staged(path: str | Path, table: str) -> pl.DataFrame | None:
    """The staged version of ``table`` when this run wrote one, else the published one (None: neither)."""
    with connect(path) as conn:
        if staged_table_exists(conn, table):
            return frame_of(conn.sql(f"select * from {staged_name(table)}"))
        if table_exists(conn, table):
            return frame_of(conn.sql(f"select * from {quote(table)}"))
    return None


def read_staged_without(path: str | Path, table: str, left_out: Sequence[str]) -> pl.DataFrame | None:
    """:func:`read_staged` without the columns ``left_out`` (lists a step does not need)."""
    return _select_staged(path, table, f"* exclude ({', '.join(quote(c) for c in left_out)})")


def read_staged_columns(path: str | Path, table: str, columns: Sequence[str]) -> pl.DataFrame | None:
    """``columns`` of :func:`read_staged`'s table (None: neither version exists)."""
    return _select_staged(path, table, ", ".join(quote(c) for c in columns))


def _select_staged(path: str | Path, table: str, selection: str) -> pl.DataFrame | None:
    with connect(path) as conn:
        source = readable_table(conn, table)
        if source is None:
            return None
        return frame_of(conn.sql(f"select {selection} from {source}"))


def read_published_columns(path: str | Path, table: str, columns: Sequence[str]) -> pl.DataFrame | None:
    """``columns`` of the published ``table`` (not this run's staged one); None when it does not exist."""
    with connect(path) as conn:
        if not table_exists(conn, table):
            return None
        return frame_of(conn.sql(f"select {', '.join(quote(c) for c in columns)} from {quote(table)}"))


def read_kept_rows(path: str | Path, table: str, columns: Sequence[str]) -> pl.DataFrame | None:
    """``columns`` of the published ``table`` a corpus run keeps for the next one (phrase
    descriptions, name votes); None when it does not exist or lacks one of them (older code
    wrote it): the run then makes every row afresh."""
    with connect(path) as conn:
        if not has_columns(conn, table, columns):
            return None
        return frame_of(conn.sql(f"select {', '.join(quote(c) for c in columns)} from {quote(table)}"))


def has_columns(conn: Any, table: str, columns: Sequence[str]) -> bool:
    """Whether the published ``table`` exists with every one of ``columns``."""
    present = {
        row[0]
        for row in conn.execute(
            "select column_name from information_schema.columns where table_schema = 'main' and table_name = ?",
            [table],
        ).fetchall()
    }
    return present.issuperset(columns)


def internal_link_counts(path: str | Path) -> dict[int, int]:
    """Per community, its ``relationship_ids`` that the relationships table holds.

    Counted by DuckDB on the staged (else published) tables: as strings in memory, the ids of
    every community of every level were several times the relationships table itself. The ids
    are matched by their 64-bit hashes and counted without a distinct, as a community's list
    holds an id once (``index/coded_graph.py`` writes them so): a distinct count joined on the
    strings took 2,030 MB at 100,000 documents (15 M relationships), this 897 MB, with the same
    counts. An id the table does not hold could count only by sharing its hash with one it holds.
    """
    with connect(path) as conn:
        communities, relationships = readable_table(conn, "communities"), readable_table(conn, "relationships")
        if communities is None:
            return {}
        ids = f"select community, hash(unnest(relationship_ids)) as h from {communities}"
        if relationships is None or not conn.execute(f"select count(*) from {relationships}").fetchall()[0][0]:
            known = ""  # no relationships to check against: every id counts
        else:
            known = f"semi join (select hash(id) as h from {relationships}) using (h)"
        rows = conn.execute(f"select community, count(*) from ({ids}) {known} group by community").fetchall()
    return {int(community): int(count) for community, count in rows}


def readable_table(conn, table: str) -> str | None:
    """The staged version of ``table`` when this run wrote one, else the published one (None: neither)."""
    if staged_table_exists(conn, table):
        return staged_name(table)
    return quote(table) if table_exists(conn, table) else None


def staged_tables(path: str | Path, *, read_only: bool = False, wait_seconds: float = 30.0) -> list[str]:
    """Tables a corpus run staged and did not publish (an interrupted run leaves some)."""
    if not Path(path).exists():
        return []
    with connect(path, read_only=read_only, wait_seconds=wait_seconds) as conn:
        rows = conn.execute(
            "select table_name from information_schema.tables where table_schema = 'main' and starts_with(table_name, ?) "
            "order by table_name",
            [STAGED_PREFIX],
        ).fetchall()
    return [row[0].removeprefix(STAGED_PREFIX) for row in rows]


def begin_corpus_run(path: str | Path, run_id: str) -> None:
    """Drop what an earlier, unfinished corpus run staged and mark this one as started."""
    tables = staged_tables(path)
    with connect(path) as conn:
        for table in tables:
            conn.execute(f"drop table if exists {staged_name(table)}")
        conn.execute(f"drop schema if exists {LEGACY_STAGING_SCHEMA} cascade")
    marker = pl.DataFrame({"run_id": [run_id], "started_at": [dt.datetime.now(dt.UTC).replace(tzinfo=None)]})
    write_staged(path, RUN_MARKER, marker)


def publish_corpus(
    path: str | Path,
    manifest: pl.DataFrame,
    build: Mapping[str, object],
    with_build: Callable[[Any], object] | None = None,
) -> list[str]:
    """Replace the published corpus tables with the staged ones, in one transaction; returns their names.

    ``manifest`` becomes ``corpus_manifest``; ``build`` (run id, settings fingerprint, LanceDB
    versions ...) becomes the one row of ``corpus_build``, with the time of the commit.
    ``with_build(connection)`` runs last in the transaction, so what it writes from the new build
    (a big build's search tables) commits with it: no reader sees the build without it.
    """
    tables = [table for table in staged_tables(path) if table != RUN_MARKER]
    row = {**build, "published_at": dt.datetime.now(dt.UTC).replace(tzinfo=None)}
    build_frame = pl.DataFrame([{k: (json.dumps(v) if isinstance(v, dict) else v) for k, v in row.items()}])
    with connect(path) as conn, transaction(conn, _manifest=manifest, _build=build_frame):
        for table in tables:
            conn.execute(f"drop table if exists {quote(table)}")
            conn.execute(f"alter table {staged_name(table)} rename to {quote(table)}")
        conn.execute(f"drop table if exists {staged_name(RUN_MARKER)}")
        merge_pending(conn, replaced=tables)  # the documents, text units and vectors the new graph cites
        conn.execute(f"create or replace table {quote(MANIFEST_TABLE)} as select * from _manifest")
        conn.execute(f"create or replace table {quote(BUILD_TABLE)} as select * from _build")
        if with_build is not None:
            with_build(conn)
    return tables


def build_stamp(conn: Any) -> tuple[str, str] | None:
    """The published build's run id and commit time, as text (None: no build record): what a
    table derived from a build (the walk graph, the search tables) is stamped with."""
    if not table_exists(conn, BUILD_TABLE):
        return None
    rows = conn.execute(f"select run_id::varchar, published_at::varchar from {quote(BUILD_TABLE)}").fetchall()
    return (rows[0][0] or "", rows[0][1] or "") if rows else None


def last_clustering(path: str | Path) -> dict[str, object]:
    """How the published communities were clustered (mode, fresh or warm start, drift), {} before any."""
    if not Path(path).exists():
        return {}
    with connect(path, read_only=True) as conn:
        if not table_exists(conn, CLUSTERING_TABLE):
            return {}
        rows = frame_of(conn.sql(f"select * from {quote(CLUSTERING_TABLE)}")).to_dicts()
    return rows[0] if rows else {}


def graph_sizes(path: str | Path) -> dict[str, int]:
    """Rows of the published build: entities, relationships, communities (and levels), reports."""
    sizes = {"entities": 0, "relationships": 0, "communities": 0, "levels": 0, "reports": 0}
    if not Path(path).exists():
        return sizes
    queries = {
        "entities": "select count(*) from entities",
        "relationships": "select count(*) from relationships",
        "communities": "select count(*) from communities",
        "levels": "select count(distinct level) from communities",
        "reports": "select count(*) from community_reports",
    }
    with connect(path, read_only=True) as conn:
        for name, sql in queries.items():
            table = sql.rsplit(" ", 1)[1]
            if table_exists(conn, table):
                sizes[name] = int(conn.execute(sql).fetchone()[0])
    return sizes


def vector_versions(path: str | Path, *, wait_seconds: float = 30.0) -> dict[str, int]:
    """The LanceDB table versions of the published build (empty before the first build)."""
    if not Path(path).exists():
        return {}
    with connect(path, read_only=True, wait_seconds=wait_seconds) as conn:
        if not table_exists(conn, BUILD_TABLE):
            return {}
        present = {r[0] for r in conn.execute(f"describe {quote(BUILD_TABLE)}").fetchall()}
        if "vector_versions" not in present:
            return {}
        value = conn.execute(f"select vector_versions from {quote(BUILD_TABLE)}").fetchone()
    return {str(k): int(v) for k, v in json.loads(value[0]).items()} if value and value[0] else {}


def record_vector_versions(path: str | Path, versions: Mapping[str, int]) -> None:
    """Point the published build at new LanceDB versions of the same content (after compaction)."""
    with connect(path) as conn:
        conn.execute(f"update {quote(BUILD_TABLE)} set vector_versions = ?", [json.dumps(dict(versions))])


def published_build(path: str | Path, *, wait_seconds: float = 30.0) -> dict[str, str] | None:
    """Which build is published: run id, commit time and LanceDB versions, as text (None before any).

    One small read: what a long-running reader (the HTTP server) polls to notice a newer build.
    ``vector_versions`` is part of it because compacting LanceDB re-points the same build.
    """
    if not Path(path).exists():
        return None
    with connect(path, read_only=True, wait_seconds=wait_seconds) as conn:
        if not table_exists(conn, BUILD_TABLE):
            return None
        relation = conn.sql(f"select * from {quote(BUILD_TABLE)}")
        columns, rows = relation.columns, relation.fetchall()
    if not rows:
        return None
    row = dict(zip(columns, rows[0]))
    return {key: "" if row.get(key) is None else str(row[key]) for key in ("run_id", "published_at", "vector_versions")}
