"""What a search reads: the index tables as polars frames and the search indexes over them.

The frames are either given whole (tests, the server, which keeps one build loaded for many
requests) or read on first use from an :class:`IndexReader` (a command-line query): global search
never reads the relationships table, basic search reads neither the graph nor the reports, and
local search reads only the relationships touching the entities it selected
(:meth:`QueryData.relationships_touching`) plus, for its ranking walk, the edges without their
descriptions (:meth:`QueryData.relationship_links`) — or, when the build stored it, the walk's
graph as integer arrays (:meth:`QueryData.stored_walk`), which needs no relationship at all. Of
the entities, text units and communities the walk keeps only the columns it reads
(:meth:`QueryData.key_columns`) and the answer reads the rows it quotes by id
(:meth:`QueryData.rows_where`). The engines call the same attributes and methods either way, so
they stay free of I/O.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import polars as pl

from graphrag_assets.core.schemas import (
    COMMUNITIES,
    COMMUNITY_REPORTS,
    COVARIATES,
    DOCUMENTS,
    ENTITIES,
    RELATIONSHIPS,
    TEXT_UNITS,
    empty_frame,
)
from graphrag_assets.query.array_index import empty_index
from graphrag_assets.query.search_indexes import LexicalIndex, VectorIndex

if TYPE_CHECKING:  # numpy: imported by a walk's first use, not by the commands that only read tables
    from graphrag_assets.index.walk_graph import WalkMatrix

SCHEMAS: dict[str, dict[str, pl.DataType]] = {  # attribute of QueryData (= table name) -> its schema
    "entities": ENTITIES,
    "relationships": RELATIONSHIPS,
    "communities": COMMUNITIES,
    "community_reports": COMMUNITY_REPORTS,
    "text_units": TEXT_UNITS,
    "covariates": COVARIATES,
    "documents": DOCUMENTS,
}
LINK_COLUMNS = ("source", "target", "weight")
WALK_FRAMES = frozenset({"entities", "relationships", "text_units"})  # what the stored walk graph describes


@runtime_checkable
class RankingReader(Protocol):
    """A reader that ranks the relationships touching some titles itself, handing over only the best
    (the database by SQL; a served big build's files through their end indexes)."""

    def ranked_touching(
        self, titles: Sequence[str], vertex_titles: Sequence[str], vertex_scores: Any, cap: int
    ) -> pl.DataFrame | None:
        """The ``cap`` best by their ends' summed scores, ties by number; None: it cannot here."""
        ...


@runtime_checkable
class FirstRowsReader(Protocol):
    """A reader that orders some rows itself and hands over only the first (the database by SQL)."""

    def first_rows(
        self, table: str, column: str, values: Sequence[Any], order: Sequence[str], limit: int, columns: Sequence[str]
    ) -> pl.DataFrame | None:
        """The first ``limit`` rows of ``table`` whose ``column`` is among ``values``, by ``order``
        (ascending, nulls first), ``columns`` only."""
        ...


class IndexReader(Protocol):
    """Where the frames of a lazily read :class:`QueryData` come from (storage supplies it).

    Each method returns None when the index has no such table; frames follow :data:`SCHEMAS`
    (a reader may leave columns no query reads out of the schema, e.g. the documents' text).
    """

    def table(self, name: str) -> pl.DataFrame | None:
        """The whole table."""
        ...

    def columns_of(self, name: str, columns: Sequence[str]) -> pl.DataFrame | None:
        """Only ``columns`` of every row of the table, in stored order."""
        ...

    def relationships_touching(self, titles: Sequence[str], columns: Sequence[str] = ()) -> pl.DataFrame | None:
        """The relationships with an end among ``titles``, in stored order (``columns`` only, when given)."""
        ...

    def relationship_links(self) -> pl.DataFrame | None:
        """``source``, ``target`` and ``weight`` of every relationship, in stored order."""
        ...

    def walk_graph(self) -> dict[str, Any] | None:
        """The walk graph the build stored (arrays of :func:`~graphrag_assets.index.walk_graph.stored_walk`)."""
        ...

    def rows_where(
        self, table: str, column: str, values: Sequence[Any], columns: Sequence[str] = ()
    ) -> pl.DataFrame | None:
        """The rows of ``table`` whose ``column`` is among ``values``, in stored order (``columns`` only, when given)."""
        ...

    def row_count(self, table: str) -> int:
        """Rows of ``table``."""
        ...


class _Table:
    """A frame attribute of :class:`QueryData`: read from its reader on first use, then kept."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, data: QueryData | None, owner: type | None = None) -> Any:
        if data is None:
            return self
        frame = data._frames.get(self.name)
        if frame is None:
            with data._lock:
                frame = data._frames.get(self.name)
                if frame is None:
                    frame = data._read(lambda reader: reader.table(self.name), SCHEMAS[self.name])
                    data._frames[self.name] = frame
        return frame

    def __set__(self, data: QueryData, frame: pl.DataFrame) -> None:
        data._frames[self.name] = frame
        data._given.add(self.name)
        for derived in [key for key in data._frames if key.startswith(f"_{self.name}:")]:
            del data._frames[derived]
        if self.name == "relationships":
            data._frames.pop("_links", None)


class QueryData:
    """The index as the query engines see it. Frames follow :mod:`graphrag_assets.core.schemas`."""

    entities = _Table()
    relationships = _Table()
    communities = _Table()
    community_reports = _Table()
    text_units = _Table()
    covariates = _Table()
    documents = _Table()

    def __init__(
        self,
        entities: pl.DataFrame | None = None,
        relationships: pl.DataFrame | None = None,
        communities: pl.DataFrame | None = None,
        community_reports: pl.DataFrame | None = None,
        text_units: pl.DataFrame | None = None,
        covariates: pl.DataFrame | None = None,
        documents: pl.DataFrame | None = None,
        *,
        entity_description: VectorIndex | None = None,  # ids: entity ids
        text_unit_text: VectorIndex | None = None,  # ids: text unit ids
        community_full_content: VectorIndex | None = None,  # ids: report ids
        text_unit_lexical: LexicalIndex | None = None,  # ids: text unit ids; None: no full-text index
        reader: IndexReader | None = None,  # where frames not given are read from (None: they are empty)
    ) -> None:
        given = dict(
            entities=entities,
            relationships=relationships,
            communities=communities,
            community_reports=community_reports,
            text_units=text_units,
            covariates=covariates,
            documents=documents,
        )
        self._frames: dict[str, pl.DataFrame] = {name: frame for name, frame in given.items() if frame is not None}
        self._given = set(self._frames)  # frames not read from the reader: a stored walk graph does not describe them
        self._walk: list[WalkMatrix | None] = []  # the stored walk graph once read (holding None when there is none)
        self._lock = threading.Lock()
        self.reader = reader
        self.entity_description: VectorIndex = entity_description or empty_index()
        self.text_unit_text: VectorIndex = text_unit_text or empty_index()
        self.community_full_content: VectorIndex = community_full_content or empty_index()
        self.text_unit_lexical = text_unit_lexical
        # Structures derived from the frames above (the local-ranking graph), built on first use and
        # reused by every query in the process.
        self.derived: dict[str, Any] = {}

    def _read(self, read: Any, schema: dict[str, pl.DataType]) -> pl.DataFrame:
        frame = read(self.reader) if self.reader is not None else None
        return empty_frame(schema) if frame is None else frame

    def holds(self, name: str) -> bool:
        """Whether the table ``name`` is in memory whole (given, or read already)."""
        return self._holds(name)

    def _holds(self, name: str) -> bool:
        """Whether the frame is in memory (given, or read already), so a slice of it costs no read."""
        return self.reader is None or name in self._frames

    def load_all(self) -> QueryData:
        """Read every frame now (a server keeps one build for many requests)."""
        for name in SCHEMAS:
            getattr(self, name)
        return self

    def row_count(self, name: str) -> int:
        """Rows of the table ``name``, counted without reading it when it is not in memory."""
        if self._holds(name) or self.reader is None:
            return getattr(self, name).height
        return self.reader.row_count(name)

    def columns_of(self, name: str, columns: Sequence[str]) -> pl.DataFrame:
        """Only ``columns`` of the table ``name``, every row in table order: read alone (not kept)
        when the table is not in memory, e.g. the titles of 50,000 entities without their descriptions."""
        if self._holds(name):
            return getattr(self, name).select(columns)
        schema = {c: t for c, t in SCHEMAS[name].items() if c in columns}
        return self._read(lambda reader: reader.columns_of(name, list(columns)), schema).select(columns)

    def key_columns(self, name: str, columns: Sequence[str]) -> pl.DataFrame:
        """The table ``name`` when it is in memory; otherwise only its ``columns``, every row in
        table order, read once and kept (local search's walk needs every entity's id and title,
        not the 150 MB of descriptions of a 100,000-document index)."""
        if self._holds(name):
            return getattr(self, name)
        key = f"_{name}:{','.join(columns)}"
        frame = self._frames.get(key)
        if frame is None:
            with self._lock:
                frame = self._frames.get(key)
                if frame is None:
                    frame = self.columns_of(name, columns)
                    self._frames[key] = frame
        return frame

    def rows_where(self, name: str, column: str, values: Sequence[Any], columns: Sequence[str] = ()) -> pl.DataFrame:
        """The rows of the table ``name`` whose ``column`` is among ``values``, in table order; only
        ``columns`` when given (the sort keys of thousands of text units, not their text)."""
        if self._holds(name):
            rows = getattr(self, name).filter(pl.col(column).is_in(list(values)))
            return rows.select(columns) if columns else rows
        schema = {c: t for c, t in SCHEMAS[name].items() if not columns or c in columns}
        rows = self._read(lambda reader: reader.rows_where(name, column, list(values), list(columns)), schema)
        return rows.select(columns) if columns else rows

    def first_rows(
        self, name: str, column: str, values: Sequence[Any], order: Sequence[str], limit: int, columns: Sequence[str]
    ) -> pl.DataFrame:
        """:meth:`rows_where`, ordered by ``order`` (ascending, nulls first) and cut to the first ``limit``:
        by the reader when it orders rows itself (the first 40 of a common name's 62,882 text units)."""
        if not self._holds(name) and isinstance(self.reader, FirstRowsReader):
            schema = {c: t for c, t in SCHEMAS[name].items() if c in columns}
            read = self._read(lambda r: r.first_rows(name, column, list(values), order, limit, columns), schema)
            return read.select(columns)
        read = self.rows_where(name, column, values, list(dict.fromkeys([*columns, *order])))
        return read.sort(order).head(limit).select(columns)

    def relationships_touching(self, titles: Sequence[str], columns: Sequence[str] = ()) -> pl.DataFrame:
        """The relationships with an end among ``titles``, in table order; only ``columns`` when
        given (a hub's 100,000 relationships are ranked by their ends before any description is read)."""
        if self._holds("relationships"):
            wanted = list(titles)
            touching = self.relationships.filter(pl.col("source").is_in(wanted) | pl.col("target").is_in(wanted))
            return touching.select(columns) if columns else touching
        schema = {c: t for c, t in RELATIONSHIPS.items() if not columns or c in columns}
        return self._read(lambda reader: reader.relationships_touching(list(titles), list(columns)), schema)

    def ranked_relationships(
        self, titles: Sequence[str], vertex_titles: Sequence[str], vertex_scores: Any, cap: int
    ) -> pl.DataFrame | None:
        """The reader's ranking of the relationships touching ``titles`` (see :class:`RankingReader`);
        None when the relationships are in memory or the reader does not rank."""
        if self._holds("relationships") or not isinstance(self.reader, RankingReader):
            return None
        return self.reader.ranked_touching(titles, vertex_titles, vertex_scores, cap)

    def relationship_links(self) -> pl.DataFrame:
        """``source``, ``target`` and ``weight`` of every relationship (the ranking walk's edges), in
        table order; read once and kept, as the relationships table is when it is in memory."""
        if self._holds("relationships"):
            return self.relationships
        links = self._frames.get("_links")
        if links is None:
            with self._lock:
                links = self._frames.get("_links")
                if links is None:
                    schema = {c: RELATIONSHIPS[c] for c in LINK_COLUMNS}
                    links = self._read(lambda reader: reader.relationship_links(), schema)
                    self._frames["_links"] = links
        return links

    def stored_walk(self) -> WalkMatrix | None:
        """The ranking walk's graph as the build stored it, read once and kept; None when the index
        has none (a build by older code) or a frame it describes was given instead of read."""
        if self.reader is None or self._given & WALK_FRAMES:
            return None
        if not self._walk:
            with self._lock:
                if not self._walk:
                    from graphrag_assets.index.walk_graph import stored_walk

                    arrays = self.reader.walk_graph()
                    self._walk.append(None if arrays is None else stored_walk(**arrays))
        return self._walk[0]
