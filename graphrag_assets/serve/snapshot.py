"""One published build of a project's index, loaded completely, for many requests.

A :class:`Snapshot` holds the tables and vector indexes the query engines read
(:class:`~graphrag_assets.query.query_data.QueryData`, with the ranking graph built in advance) —
the relationships included, although they are most of its memory on a big index (15 M at 100,000
documents: a 12 GB server): a request still in flight when a newer build is published must finish
on its own build, whose rows are gone from the database by then — and the
identity of the build they came from (:class:`BuildId`, from the one-row ``corpus_build`` table
that every corpus run commits together with its tables). A snapshot never changes: a newer build
is loaded into a new snapshot while requests go on being answered from the old one, and the
project swaps the reference when the new one is complete (:mod:`.projects`).

Loading reads the build identity before and after the tables: DuckDB publishes a build in one
transaction, but the tables and the LanceDB versions are read through separate connections, so a
build committed in between is noticed and the load is repeated rather than mixing two builds.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from graphrag_assets.core.errors import UserError
from graphrag_assets.core.settings import Settings
from graphrag_assets.interop.graph_view.data import view_data
from graphrag_assets.project.query_data import load_query_data
from graphrag_assets.query.graph_ranking import ranking_graph
from graphrag_assets.query.query_data import QueryData
from graphrag_assets.storage import table_names as tables
from graphrag_assets.storage.corpus import published_build
from graphrag_assets.storage.index_reads import has_table
from graphrag_assets.storage.snapshot import in_turn

LOAD_ATTEMPTS = 3
POLL_LOCK_WAIT_SECONDS = 1.0  # a poll gives up quickly while an indexing run holds the database


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
                    tables.RELATIONSHIPS: self.data.relationships,
                    tables.COMMUNITIES: self.data.communities,
                    tables.COMMUNITY_REPORTS: self.data.community_reports,
                }
                self._view = view_data(frames, title)
            return self._view


def load_snapshot(settings: Settings) -> Snapshot | None:
    """The published build, loaded completely (None: the project has no index yet)."""
    for _ in range(LOAD_ATTEMPTS):
        started = time.perf_counter()
        before = read_build(settings, wait_seconds=30.0)
        if before is None and not _has_graph(settings):
            return None
        data = in_turn(lambda: load_query_data(settings).load_all())  # all of one build, read now
        if settings.query.local.ranking == "graph":
            ranking_graph(data)  # built now, so the first local query after a switch does not pay for it
        if read_build(settings, wait_seconds=30.0) == before:
            return Snapshot(before or BuildId(), data, time.time(), time.perf_counter() - started)
    raise UserError(
        f"the index of {settings.root} changed {LOAD_ATTEMPTS} times while it was being loaded; "
        "the server keeps the build it has and tries again later."
    )
