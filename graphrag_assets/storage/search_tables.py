"""The tables a big build's queries search by SQL, so that a query never opens LanceDB.

A command-line query on a 100,000-document index spent ~1 s importing LanceDB, more than the
sample's whole query, for two searches DuckDB does as fast: an exact vector search over the
embedding tables (DuckDB's ``FLOAT[n]`` columns are the vectors' system of record; 100,000 text
units in ~50-110 ms) and a BM25 search of the text units. For the latter, and for local search's
ranking of the relationships of its entities, each big build stores, in the transaction that
publishes it (:func:`graphrag_assets.storage.corpus.publish_corpus`), so that they commit together:

- ``text_unit_terms`` (term, id, tf, length): one row per word and text unit, with the words of
  that text unit (BM25's length norm: held here, a join with the lengths cost half the search),
  sorted by word, so a question's words read only the row groups that hold them;
- ``text_unit_lengths`` (id, length): the words of each text unit, for their count and average;
- ``relationship_targets`` (target, source, human_readable_id): the relationships' ends sorted by
  target. The relationships are stored by source, so the ones with a given source are a few row
  groups; those with a given target were a scan of all 15 M targets (~0.3 s a cold query), now a
  few row groups too. Written when every relationship has its own human-readable id, which then
  names its row;
- ``search_tables``, one row: the build they describe (``corpus_build``'s run id and commit time),
  the stop words left out, whether the targets were written and the tables' format. A query uses
  the tables only when that build is the published one and it reads their format; otherwise (a
  build by code that did not store them) the build is searched through LanceDB as before.

The words are what the in-memory index of a small build (:mod:`graphrag_assets.query.lexical`,
``bm25s``) takes: the text lower-cased, runs of two or more letters or digits, English stop words
left out; BM25's Lucene variant with bm25s's k1 and b, so both rank the same texts alike (tested).
Text unit ids hash their text, so an update adds the words of new ids and drops those of ids gone;
the targets are rewritten (~7 s at 15 M relationships), as an update renumbers the relationships.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graphrag_assets.core.bm25 import K1, WORD_RE2, B
from graphrag_assets.core.errors import UserError, dimension_mismatch
from graphrag_assets.storage.corpus import STAGE_MEMORY_LIMIT, build_stamp, vector_versions
from graphrag_assets.storage.database import connect, frame_of, table_exists, transaction
from graphrag_assets.storage.table_names import RELATIONSHIPS, TEXT_UNITS
from graphrag_assets.storage.tables import quote

TERMS = "text_unit_terms"
LENGTHS = "text_unit_lengths"
TARGETS = "relationship_targets"
HEADER = "search_tables"
FORMAT = 1  # of the tables: tables of another format are written anew, and not read
RESORT_SHARE = 0.1  # re-sort the words once the text units appended since the last sort pass this share


@dataclass(frozen=True)
class SearchTables:
    """What the published build's search tables hold: the stop words its words left out, and
    whether its relationships' targets were stored."""

    stopwords: list[str]
    targets: bool


def _words_of(text: str) -> str:
    return f"regexp_extract_all(lower(coalesce({text}, '')), '{WORD_RE2}')"


_NEW_WORDS = f"""
create temporary table _new_words as
with words as (
    select u.id, unnest({_words_of("u.text")}) as term from {quote(TEXT_UNITS)} u anti join {LENGTHS} l using (id)
    where u.id is not null
)
select id, term from words where term not in (select unnest($1::varchar[]))
"""
_SEARCH = f"""
with asked as (
    select term, count(*) as times from (select unnest({_words_of("$1")}) as term)
    where term not in (select unnest($2::varchar[])) group by term
),
stats as (select count(*) as n, coalesce(avg(length), 0) as avg from {LENGTHS}),
postings as (select t.* from {TERMS} t semi join asked using (term)),
df as (select term, count(*) as df from postings group by term)
select p.id, sum(
    asked.times * ln(1 + (stats.n - df.df + 0.5) / (df.df + 0.5))
    * p.tf / (p.tf + {K1} * ((1 - {B}) + {B} * p.length / stats.avg))
) as score
from postings p join df using (term) join asked using (term), stats
group by p.id order by round(score, 9) desc, p.id limit $3
"""
# Every relationship's number is its row's (the corpus step writes them so): one scan, no grouping.
_NUMBERED_AS_ROWS = f"select not exists (select 1 from {RELATIONSHIPS} where human_readable_id is distinct from rowid)"
_NUMBERED = (  # a count(distinct) of 15 M ids does not fit the memory limit; a grouping spills
    f"select not exists (select 1 from {RELATIONSHIPS} where human_readable_id is null) and not exists "
    f"(select 1 from {RELATIONSHIPS} group by human_readable_id having count(*) > 1)"
)
# The ends by target, sorted by an integer key per target: sorting 15 M rows by the title took
# 10.4 s, by its number among the distinct targets 7.2 s (the same order; 2026-12-07, load 1.1-1.6).
_TARGETS = f"""
create or replace table {TARGETS} as
with numbered as (select target, row_number() over (order by target) as key from (select distinct target from {RELATIONSHIPS}))
select r.target, r.source, r.human_readable_id from {RELATIONSHIPS} r left join numbered n on r.target = n.target
order by n.key nulls last, r.human_readable_id
"""


def sync_search_tables(path: str | Path, stopwords: Sequence[str]) -> int:
    """:func:`write_search_tables` in a transaction of its own."""
    with connect(path) as conn, transaction(conn):
        return write_search_tables(conn, stopwords)


def write_search_tables(conn: Any, stopwords: Sequence[str]) -> int:
    """Bring the published build's search tables up to date on ``conn``, inside the caller's
    transaction (publishing a build writes them in its own, so they commit with it); returns the
    text units tokenized (those new since the stored words' build, or all of them)."""
    stamp = build_stamp(conn)
    if stamp is None or not table_exists(conn, TEXT_UNITS):
        return 0
    kept = _readable(conn) is not None and _stopwords(conn) == list(stopwords)
    conn.execute(f"set memory_limit = '{STAGE_MEMORY_LIMIT}'")  # 12 M words at 100,000 documents spill
    try:
        added, appended = _sync_words(conn, stopwords, kept=kept)
        targets = _write_targets(conn)
        conn.execute(
            f"create or replace table {HEADER} as select ?::varchar as run_id, ?::varchar as published_at, "
            "?::varchar[] as stopwords, ?::bigint as appended_units, ?::boolean as relationship_targets, "
            "?::integer as format",
            [stamp[0], stamp[1], list(stopwords), appended, targets, FORMAT],
        )
        return added
    finally:
        conn.execute("reset memory_limit")


def search_tables_due(path: str | Path, *, wait_seconds: float = 30.0) -> bool:
    """Whether the published build is a big one (it recorded LanceDB tables) without search tables
    this code reads: published by code before them, or with another format."""
    if not Path(path).exists() or not vector_versions(path, wait_seconds=wait_seconds):
        return False
    with connect(path, read_only=True, wait_seconds=wait_seconds) as conn:
        return table_exists(conn, TEXT_UNITS) and stored_search_tables(conn) is None


def _sync_words(conn: Any, stopwords: Sequence[str], *, kept: bool) -> tuple[int, int]:
    """Drop the words of text units gone, add those of new ones; returns (units added, units
    appended since the words were last sorted)."""
    if kept:
        # (anti joins, not "not in": one null id would make "not in" keep every row)
        gone = f"select id from {LENGTHS} anti join {quote(TEXT_UNITS)} using (id)"
        conn.execute(f"delete from {TERMS} where id in ({gone})")
        conn.execute(f"delete from {LENGTHS} where id in ({gone})")
    else:
        conn.execute(f"create or replace table {TERMS} (term varchar, id varchar, tf integer, length integer)")
        conn.execute(f"create or replace table {LENGTHS} (id varchar, length integer)")
    conn.execute(_NEW_WORDS, [list(stopwords)])
    conn.execute(
        # a text unit without words counts one, as bm25s counts it (it gives such a text an empty token)
        "create temporary table _new_lengths as select id, greatest(count(term), 1)::integer as length from "
        f"(select u.id from {quote(TEXT_UNITS)} u anti join {LENGTHS} l using (id) where u.id is not null) "
        "left join _new_words using (id) group by id"
    )
    conn.execute(
        f"insert into {TERMS} select term, id, count(*), any_value(length) from _new_words join _new_lengths "
        "using (id) group by term, id order by term, id"
    )
    conn.execute(f"insert into {LENGTHS} select * from _new_lengths order by id")
    added = _count(conn, "_new_lengths")
    conn.execute("drop table _new_words")
    conn.execute("drop table _new_lengths")
    appended = _appended(conn) + added if kept else 0
    if appended > RESORT_SHARE * max(1, _count(conn, LENGTHS)):
        conn.execute(f"create or replace table {TERMS} as select * from {TERMS} order by term, id")
        appended = 0
    return added, appended


def _write_targets(conn: Any) -> bool:
    """Store the relationships' ends by target when each has its own human-readable id; else none."""
    numbered = table_exists(conn, RELATIONSHIPS) and any(
        conn.execute(check).fetchall()[0][0] for check in (_NUMBERED_AS_ROWS, _NUMBERED)
    )
    if not numbered:
        conn.execute(f"drop table if exists {TARGETS}")
        return False
    conn.execute(_TARGETS)
    return True


def _count(conn: Any, table: str) -> int:
    return int(conn.execute(f"select count(*) from {table}").fetchall()[0][0])


def _stopwords(conn: Any) -> list[str] | None:
    rows = conn.execute(f"select stopwords from {HEADER}").fetchall()
    return list(rows[0][0]) if rows else None


def _appended(conn: Any) -> int:
    """Text units whose words were appended after the last sort (their rows widen every row group's range)."""
    rows = conn.execute(f"select appended_units from {HEADER}").fetchall()
    return int(rows[0][0] or 0) if rows else 0


def _readable(conn: Any) -> tuple | None:
    """The header row (run id, commit time, stop words, targets stored, format) of search tables
    this code reads; None when there are none or they have another format."""
    if not all(table_exists(conn, t) for t in (TERMS, LENGTHS, HEADER)):
        return None
    if "format" not in {row[0] for row in conn.execute(f"describe {HEADER}").fetchall()}:
        return None
    rows = conn.execute(
        f"select run_id, published_at, stopwords, relationship_targets, format from {HEADER}"
    ).fetchall()
    return rows[0] if rows and rows[0][4] == FORMAT else None


def stored_search_tables(conn: Any) -> SearchTables | None:
    """What the published build's search tables hold; None when it has none (see the module docstring)."""
    header = _readable(conn)
    if header is None or (header[0], header[1]) != build_stamp(conn):
        return None
    return SearchTables(list(header[2]), bool(header[3]) and table_exists(conn, TARGETS))


def search_words(conn: Any, stopwords: Sequence[str], query: str, k: int) -> list[tuple[str, float]]:
    """Up to ``k`` (text unit id, BM25 score) pairs for ``query``, best first; ties by id."""
    if k <= 0 or not query.strip():
        return []
    rows = conn.execute(_SEARCH, [query, list(stopwords), k]).fetchall()
    return [(i, float(s)) for i, s in rows if s > 0]


def search_vectors(conn: Any, table: str, vector: Sequence[float], k: int) -> list[tuple[str, float]]:
    """Up to ``k`` (id, cosine similarity) pairs of the embedding ``table`` nearest ``vector``,
    most similar first; ties by id. An exact search, as LanceDB's was."""
    if k <= 0 or not table_exists(conn, table):
        return []
    stored = conn.execute(f"select vector from {quote(table)} where vector is not null limit 1").fetchall()
    if not stored:
        return []
    size = len(stored[0][0])
    if len(vector) != size:
        raise UserError(dimension_mismatch(table, size, len(vector)))
    similarity = f"array_cosine_similarity(vector, $1::float[{size}])"
    sql = (  # a zero vector's similarity is NaN, which sorts first: 0, as numpy's search gives it
        f"select id, case when isnan({similarity}) then 0 else {similarity} end as score from {quote(table)} "
        "where vector is not null order by score desc, id limit $2"
    )
    return [(i, float(s)) for i, s in conn.execute(sql, [list(map(float, vector)), k]).fetchall()]


POSTING_BYTES = 12  # a posting in memory: its text unit's position, the count and the length, int32 each


def words_megabytes(conn: Any) -> float:
    """What :func:`word_postings` holds in memory, in MB."""
    return _count(conn, TERMS) * POSTING_BYTES / 1e6


def word_postings(conn: Any) -> tuple[list[str], list[str], dict[str, Any], float]:
    """The stored words as arrays for an in-memory index (:class:`graphrag_assets.query.word_index.WordIndex`):
    the text unit ids (sorted), the words (sorted), the postings (``starts`` per word, then per
    posting ``units``, ``tf``, ``length``) and the units' mean length. Only integers cross to
    Python: 12 M postings as strings, joined and sorted in polars, peaked at 2.4 GB."""
    import numpy as np

    units = frame_of(conn.sql(f"select id from {LENGTHS} order by id"))["id"].to_list()
    average = float(conn.execute(f"select coalesce(avg(length), 0) from {LENGTHS}").fetchall()[0][0])
    counts = frame_of(conn.sql(f"select term, count(*) as n from {TERMS} group by term order by term"))
    conn.execute(f"set memory_limit = '{STAGE_MEMORY_LIMIT}'")  # the sort spills rather than grows (~0.9 GB)
    try:
        postings = frame_of(
            conn.sql(
                f"with u as (select id, (row_number() over (order by id) - 1)::integer as unit from {LENGTHS}) "
                f"select u.unit, t.tf, t.length from {TERMS} t join u using (id) order by t.term, u.unit"
            )
        )
    finally:
        conn.execute("reset memory_limit")
    arrays = {
        "starts": np.concatenate([[0], np.cumsum(counts["n"].to_numpy(), dtype=np.int64)]),
        **{
            name: postings[column].to_numpy()
            for name, column in (("units", "unit"), ("tf", "tf"), ("length", "length"))
        },
    }
    return units, counts["term"].to_list(), arrays, average
