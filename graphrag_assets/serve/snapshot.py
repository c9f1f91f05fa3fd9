"""One published build of a project's index, loaded once, for many requests.

A :class:`Snapshot` holds the tables and vector indexes the query engines read
(:class:`~graphrag_assets.query.query_data.QueryData`, with the ranking graph built in advance) and
the identity of the build they came from (:class:`BuildId`, from the one-row ``corpus_build``
table that every corpus run commits together with its tables). A request still in flight when a
newer build is published must finish on its own build, whose rows are gone from the database by
then, so a snapshot reads nothing from the database after it loaded. A small build is held in
memory whole. A build of more than ``serve.in_memory_relationships_max`` relationships (15 M at
100,000 documents made a 12 GB server) keeps them in files of its own, copied once when it loads
(:class:`~graphrag_assets.storage.relationship_files.RelationshipFiles`): no later publish touches
them, a request reads the rows it needs, and the files go with the snapshot. A snapshot never
changes: a newer build is loaded into a new snapshot while requests go on being answered from the
old one, and the project swaps the reference when the new one is complete (:mod:`.projects`).

Loading reads the build identity before and after the tables: DuckDB publishes a build in one
transaction, but the tables and the LanceDB versions are read through separate connections, so a
build committed in between is noticed and the load is repeated rather than mixing two builds.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import polars as pl

from graphrag_assets.core.errors import UserError
from graphrag_assets.core.settings import Settings
from graphrag_assets.interop.graph_view.data import view_data
from graphrag_assets.project.query_data import load_query_data, search_in_memory
from graphrag_assets.query.graph_ranking import ranking_graph
from graphrag_assets.query.query_data import SCHEMAS, IndexReader, QueryData
from graphrag_assets.storage import table_names as tables
from graphrag_assets.storage.corpus import published_build
from graphrag_assets.storage.index_reads import has_table
from graphrag_assets.storage.snapshot import in_turn

if TYPE_CHECKING:  # pyarrow: imported by the first big build, not by a server of small ones
    from graphrag_assets.storage.relationship_files import RelationshipFiles

LOAD_ATTEMPTS = 3
POLL_LOCK_WAIT_SECONDS = 1.0  # a poll gives up quickly while an indexing run holds the database
VIEW_COLUMNS = ("id", "human_readable_id", "source", "target", "weight")  # what the graph view reads of a relationship


@dataclass(frozen=True)
class BuildId:
    """Which published build a snapshot holds (empty strings: an index without a build record)."""

    run_id: str = ""
    published_at: str = ""
    vector_versions: str = ""

    @property
    def label(self) -> str:
        return self.run_id or self.published_at or "unversioned"

    def as_dict(self) -> dict[str, str]:
        return {"run_id": self.run_id, "published_at": self.published_at}


def read_build(settings: Settings, wait_seconds: float = POLL_LOCK_WAIT_SECONDS) -> BuildId | None:
    """The published build's identity; None when nothing is published yet."""
    row = in_turn(lambda: published_build(settings.database_path, wait_seconds=wait_seconds))
    return None if row is None else BuildId(row["run_id"], row["published_at"], row["vector_versions"])


def _has_graph(settings: Settings) -> bool:
    return in_turn(lambda: has_table(settings.database_path, tables.ENTITIES))


class RelationshipsOnDisk:
    """The reader of a snapshot whose relationships are in files of its own: the other tables are
    read from the database once, while the snapshot loads; the relationships, per request, from the files."""

    def __init__(self, stored: IndexReader, files: RelationshipFiles) -> None:
        self.stored = stored
        self.files = files

    def table(self, name: str) -> pl.DataFrame | None:
        return self.files.columns_of() if name == tables.RELATIONSHIPS else self.stored.table(name)

    def columns_of(self, name: str, columns: Sequence[str]) -> pl.DataFrame | None:
        if name == tables.RELATIONSHIPS:
            return self.files.columns_of(columns)
        return self.stored.columns_of(name, columns)

    def relationships_touching(self, titles: Sequence[str], columns: Sequence[str] = ()) -> pl.DataFrame | None:
        return self.files.touching(titles, columns)

    def relationship_links(self) -> pl.DataFrame | None:
        return self.files.columns_of(("source", "target", "weight"))

    def ranked_touching(
        self, titles: Sequence[str], vertex_titles: Sequence[str], vertex_scores: Any, cap: int
    ) -> pl.DataFrame | None:
        return self.files.ranked_touching(titles, vertex_titles, vertex_scores, cap)

    def walk_graph(self) -> dict[str, Any] | None:
        return self.stored.walk_graph()

    def rows_where(
        self, table: str, column: str, values: Sequence[Any], columns: Sequence[str] = ()
    ) -> pl.DataFrame | None:
        if table == tables.RELATIONSHIPS:
            return self.files.rows_where(column, values, columns)
        return self.stored.rows_where(table, column, values, columns)

    def row_count(self, table: str) -> int:
        return self.files.rows if table == tables.RELATIONSHIPS else self.stored.row_count(table)


def _files_of(data: QueryData) -> RelationshipFiles | None:
    return data.reader.files if isinstance(data.reader, RelationshipsOnDisk) else None


@dataclass
class Snapshot:
    """A loaded build. ``data`` is shared by every request that started while it was current."""

    build: BuildId
    data: QueryData
    loaded_at: float
    load_seconds: float
    _view: dict[str, Any] | None = field(default=None, repr=False)
    _view_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def counts(self) -> dict[str, int]:
        d = self.data
        levels = d.communities["level"].n_unique() if not d.communities.is_empty() else 0
        return {
            "entities": d.entities.height,
            "relationships": d.row_count("relationships"),
            "communities": d.communities.height,
            "levels": levels,
            "reports": d.community_reports.height,
            "text_units": d.text_units.height,
            "documents": d.documents.height,
            "claims": d.covariates.height,
        }

    def community_map(self, title: str) -> dict[str, Any]:
        """The graph view's data (what ``export --format html`` draws), computed once per build."""
        with self._view_lock:
            if self._view is None:
                frames = {
                    tables.ENTITIES: self.data.entities,
                    tables.RELATIONSHIPS: self.data.columns_of(tables.RELATIONSHIPS, VIEW_COLUMNS),
                    tables.COMMUNITIES: self.data.communities,
                    tables.COMMUNITY_REPORTS: self.data.community_reports,
                }
                self._view = view_data(frames, title)
            return self._view

    @property
    def relationship_files(self) -> RelationshipFiles | None:
        """The files holding this build's relationships (None: they are in memory)."""
        return _files_of(self.data)

    def release(self) -> None:
        """Delete the snapshot's files now (the server stops); otherwise they go when the snapshot
        is no longer referenced by the project or any request."""
        files = self.relationship_files
        if files is not None:
            files.remove()


def _load(settings: Settings) -> QueryData:
    """The build's tables: every one in memory, except the relationships of a big build, which are
    copied to files of the snapshot's own."""
    data = load_query_data(settings)
    search_in_memory(settings, data)
    if data.reader is not None and data.row_count("relationships") > settings.serve.in_memory_relationships_max:
        from graphrag_assets.storage.relationship_files import RelationshipFiles

        data.reader = RelationshipsOnDisk(data.reader, RelationshipFiles.export(settings.database_path))
    try:
        for name in SCHEMAS:
            if name != "relationships" or _files_of(data) is None:
                getattr(data, name)
        if settings.query.local.ranking == "graph":
            ranking_graph(data)  # built now, so the first local query after a switch does not pay for it
    except BaseException:
        _discard(data)
        raise
    return data


def _discard(data: QueryData) -> None:
    files = _files_of(data)
    if files is not None:
        files.remove()


def load_snapshot(settings: Settings) -> Snapshot | None:
    """The published build, loaded (None: the project has no index yet)."""
    for _ in range(LOAD_ATTEMPTS):
        started = time.perf_counter()
        before = read_build(settings, wait_seconds=30.0)
        if before is None and not _has_graph(settings):
            return None
        data = in_turn(lambda: _load(settings))  # all of one build, read now
        if read_build(settings, wait_seconds=30.0) == before:
            return Snapshot(before or BuildId(), data, time.time(), time.perf_counter() - started)
        _discard(data)
    raise UserError(
        f"the index of {settings.root} changed {LOAD_ATTEMPTS} times while it was being loaded; "
        "the server keeps the build it has and tries again later."
    )
