"""Reading the index for one question: a table when it is first needed, or only the rows asked for.

A command-line query used to read every index table whole before answering; on an index of
10,000 documents the relationships table alone is ~2 million rows, of which local search needs
the few hundred touching the entities it selected (and, for its ranking walk, every edge's ends
and weight, not their descriptions). :class:`StoredIndex` reads a table on first use and those
slices by SQL, each on a short read-only connection so that a long model call holds no lock that
an ``index`` run would wait for. Every read checks that the published build (``corpus_build``) is
still the one the question started on: a build committed in between would mix two indexes in one
answer, so the question is refused with a sentence instead.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from graphrag_assets.core.errors import UserError
from graphrag_assets.core.schemas import RANKED_RELATIONSHIP_COLUMNS, conform
from graphrag_assets.storage.corpus import BUILD_TABLE
from graphrag_assets.storage.database import FrameStream, connect, frame_of, table_exists
from graphrag_assets.storage.search_tables import (
    TARGETS,
    search_vectors,
    search_words,
    stored_search_tables,
    word_postings,
    words_megabytes,
)
from graphrag_assets.storage.snapshot import in_turn
from graphrag_assets.storage.table_names import RELATIONSHIPS, TEXT_UNITS
from graphrag_assets.storage.tables import quote
from graphrag_assets.storage.walk_tables import read_walk

Schemas = Mapping[str, Mapping[str, pl.DataType]]


# The rows with an end among the titles in $1: one filter per end, not ``source in … or target in
# …``, which DuckDB evaluates row by row (1.9M relationships, a hub's 84k: 4–7 s against 3.4–3.6 s
# at load 15); the row ids restore the stored order.
_NAMED = "(select unnest($1))"


def _touching(columns: str, by_target: str = quote(RELATIONSHIPS)) -> str:
    """``columns`` of the relationships with an end among $1: those by source, then those by
    target (read from ``by_target``) whose source is not among them."""
    return (
        f"select {columns} from {quote(RELATIONSHIPS)} where source in {_NAMED} union all select {columns} "
        f"from {by_target} where target in {_NAMED} and not coalesce(source in {_NAMED}, false)"
    )


_TOUCHING_ROWIDS = _touching("rowid")
# Ranking the same rows by their ends' scores (``_scores``), ties by human-readable id, then id.
# The rows are selected as they are found: filtering the whole table by the row ids above scanned
# its 15 M rows once more (a hub's ranking, 0.27–0.38 s against 0.16 s).
_SCORED = "left join _scores a on r.source = a.title left join _scores b on r.target = b.title"
_RANKED_BY_SCAN = f"""
with r as ({_touching(", ".join(RANKED_RELATIONSHIP_COLUMNS))})
select r.* from r {_SCORED}
order by coalesce(a.score, 0) + coalesce(b.score, 0) desc, r.human_readable_id asc nulls last, r.id asc nulls last
limit $2
"""
# With the ends stored by target (each row's own human-readable id: no tie reaches the id), the
# target side reads a few row groups, not 15 M targets (cold: ~0.3 s against ~0.03 s).
_RANKED_BY_TARGETS = f"""
with r as ({_touching("human_readable_id, source, target", by_target=TARGETS)}),
top as (
    select r.*, coalesce(a.score, 0) + coalesce(b.score, 0) as score from r {_SCORED}
    order by score desc, r.human_readable_id limit $2
)
select x.id, top.human_readable_id, top.source, top.target
from top join {quote(RELATIONSHIPS)} x on x.human_readable_id = top.human_readable_id
order by top.score desc, top.human_readable_id
"""


def _build_row(conn: Any, present: bool | None = None) -> tuple | None:
    """The published build's row (None: none). ``present``: whether the table is known to exist,
    which saves asking the catalog (~1.5 ms) on each of a question's reads; gone since, it reads as
    no build."""
    if not (table_exists(conn, BUILD_TABLE) if present is None else present):
        return None
    try:
        rows = conn.execute(f"select * from {quote(BUILD_TABLE)}").fetchall()
    except duckdb.CatalogException:
        return None
    return rows[0] if rows else None


class StoredIndex:
    """The index tables of one published build, read on demand (see the module docstring).

    ``schemas`` holds, per table, the columns a query reads with their types; a table the database
    lacks reads as None, a column it lacks as nulls.
    """

    def __init__(self, path: Path, schemas: Schemas) -> None:
        self.path = path
        self.schemas = schemas
        with connect(path, read_only=True) as conn:
            self._build = _build_row(conn)
            self._present = {
                table: {row[0] for row in conn.execute(f"describe {quote(table)}").fetchall()}
                for table in schemas
                if table_exists(conn, table)
            }
            self._search = stored_search_tables(conn)

    def _read(self, table: str, where: str = "", parameters: Sequence[Any] = (), columns: Sequence[str] = ()) -> Any:
        """The wanted ``columns`` (default: all of the table's schema) of the rows of ``table``
        matching ``where``, in stored order (DuckDB keeps insertion order), conformed to the schema; None when the table is absent."""
        if table not in self._present:
            return None
        schema = {c: t for c, t in self.schemas[table].items() if not columns or c in columns}
        present = [c for c in schema if c in self._present[table]]
        select = ", ".join(quote(c) for c in present) or "1 as _none"
        sql = f"select {select} from {quote(table)} {where}"
        return conform(self._on_build(lambda conn: frame_of(conn.sql(sql, params=list(parameters)))), schema)

    def _on_build(self, read: Callable[[Any], Any]) -> Any:
        """``read(connection)`` on a short read-only connection, refused when another build was
        published since this one was opened; retried briefly while the server's response cache
        writes (:func:`~graphrag_assets.storage.snapshot.in_turn`)."""

        def attempt() -> Any:
            with connect(self.path, read_only=True) as conn:
                # a build seen at the start is read directly; without one, the catalog says whether one came
                if _build_row(conn, present=True if self._build is not None else None) != self._build:
                    raise UserError("the index was rebuilt while the question was being answered; ask again.")
                return read(conn)

        return in_turn(attempt)

    def table(self, name: str) -> pl.DataFrame | None:
        """The whole table (its schema's columns), None when the index has no such table."""
        return self._read(name)

    def columns_of(self, name: str, columns: Sequence[str]) -> pl.DataFrame | None:
        """Only ``columns`` of every row of the table, None when the index has no such table."""
        return self._read(name, columns=columns)

    def relationships_touching(self, titles: Sequence[str], columns: Sequence[str] = ()) -> pl.DataFrame | None:
        """The relationships with an end among ``titles``, in stored order (``columns`` only, when given)."""
        wanted = list(dict.fromkeys(titles))
        if not wanted:
            return self._read(RELATIONSHIPS, "where false", columns=columns)
        return self._read(RELATIONSHIPS, f"where rowid in ({_TOUCHING_ROWIDS})", [wanted], columns)

    def ranked_touching(
        self, titles: Sequence[str], vertex_titles: Sequence[str], vertex_scores: Any, cap: int
    ) -> pl.DataFrame | None:
        """The ``cap`` relationships with an end among ``titles`` that score highest by the sum of
        their ends' scores (``vertex_scores[i]`` for ``vertex_titles[i]``, the first of a repeated
        title counting, other ends 0), ties by ``human_readable_id`` then ``id``: ranked by DuckDB,
        which hands over ``cap`` rows instead of a hub's 165,000 (~0.25 s at 15 M relationships)."""
        wanted = list(dict.fromkeys(titles))
        if RELATIONSHIPS not in self._present or not wanted or cap <= 0:
            return None
        scores = pl.DataFrame({"title": list(vertex_titles), "score": vertex_scores}).unique("title", keep="first")
        if not set(RANKED_RELATIONSHIP_COLUMNS) <= self._present[RELATIONSHIPS]:
            return None
        sql = _RANKED_BY_TARGETS if self._search is not None and self._search.targets else _RANKED_BY_SCAN

        def read(conn: Any) -> pl.DataFrame:
            conn.register("_scores", FrameStream(scores))
            try:
                return frame_of(conn.sql(sql, params=[wanted, cap]))
            finally:
                conn.unregister("_scores")

        schema = self.schemas[RELATIONSHIPS]
        return conform(self._on_build(read), {c: schema[c] for c in RANKED_RELATIONSHIP_COLUMNS})

    def relationship_links(self) -> pl.DataFrame | None:
        """Every relationship's ends and weight (the ranking walk's edges), in stored order."""
        return self._read(RELATIONSHIPS, columns=("source", "target", "weight"))

    def walk_graph(self) -> dict[str, Any] | None:
        """The local-search walk's graph stored with this build, as memory-mapped arrays (None: the build has none)."""
        return self._on_build(lambda conn: read_walk(conn, self.path))

    def rows_where(
        self, table: str, column: str, values: Sequence[Any], columns: Sequence[str] = ()
    ) -> pl.DataFrame | None:
        """The rows of ``table`` whose ``column`` is among ``values``, in stored order (``columns`` only, when given)."""
        if column not in self._present.get(table, ()):
            return self._read(table, "where false", columns=columns)
        return self._read(table, f"where {quote(column)} in (select unnest($1))", [list(values)], columns)

    def first_rows(
        self, table: str, column: str, values: Sequence[Any], order: Sequence[str], limit: int, columns: Sequence[str]
    ) -> pl.DataFrame | None:
        """The first ``limit`` rows of ``table`` whose ``column`` is among ``values``, by ``order``."""
        if column not in self._present.get(table, ()):
            return self._read(table, "where false", columns=columns)
        present = [c for c in order if c in self._present[table]]  # a missing column is nulls: no order
        ordered = ", ".join(f"{quote(c)} asc nulls first" for c in present) or "rowid"
        where = f"where {quote(column)} in (select unnest($1)) order by {ordered} limit {int(limit)}"
        return self._read(table, where, [list(values)], columns)

    def row_count(self, table: str) -> int:
        """Rows of ``table`` (0 when the index has no such table)."""
        if table not in self._present:
            return 0
        return int(self._on_build(lambda conn: conn.execute(f"select count(*) from {quote(table)}").fetchall()[0][0]))

    def text_unit_tokens(self) -> int:
        """Tokens of all text units (what decides between in-memory and LanceDB search)."""
        if TEXT_UNITS not in self._present or "n_tokens" not in self._present[TEXT_UNITS]:
            return 0
        with connect(self.path, read_only=True) as conn:
            return int(conn.execute(f"select coalesce(sum(n_tokens), 0) from {quote(TEXT_UNITS)}").fetchall()[0][0])

    @property
    def has_words(self) -> bool:
        """Whether this build stored its search tables (:mod:`graphrag_assets.storage.search_tables`)."""
        return self._search is not None

    def search_words(self, query: str, k: int) -> list[tuple[str, float]]:
        """BM25 search of the text units by their stored words (``[]`` when the build has none)."""
        if self._search is None:
            return []
        stopwords = self._search.stopwords
        return self._on_build(lambda conn: search_words(conn, stopwords, query, k))

    @property
    def stopwords(self) -> list[str]:
        """The stop words of this build's stored words (none without them)."""
        return [] if self._search is None else self._search.stopwords

    def words_megabytes(self) -> float:
        """What the stored words take in memory (:meth:`word_postings`), in MB."""
        return self._on_build(words_megabytes) if self._search is not None else 0.0

    def word_postings(self) -> tuple[list[str], list[str], dict[str, Any], float]:
        """The stored words as arrays (see :func:`graphrag_assets.storage.search_tables.word_postings`)."""
        return self._on_build(word_postings)

    def search_vectors(self, table: str, vector: Sequence[float], k: int) -> list[tuple[str, float]]:
        """Exact cosine search of the embedding ``table`` in DuckDB."""
        return self._on_build(lambda conn: search_vectors(conn, table, vector, k))


class StoredVectors:
    """The query VectorIndex protocol over one embedding table of a :class:`StoredIndex`."""

    def __init__(self, stored: StoredIndex, table: str) -> None:
        self.stored, self.table = stored, table

    def search(self, vector: Sequence[float], k: int) -> list[tuple[str, float]]:
        return self.stored.search_vectors(self.table, vector, k)


class StoredWords:
    """The query LexicalIndex protocol over the stored words of a :class:`StoredIndex`'s text units."""

    def __init__(self, stored: StoredIndex) -> None:
        self.stored = stored

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        return self.stored.search_words(query, k)
