"""The projects a server answers for: each with its loaded build, its model clients and its prompts.

A :class:`Project` keeps one :class:`~.snapshot.Snapshot` current. :meth:`Project.refresh` reads
the published build's identity (after a cheap look at the database file's size and time, so an
unchanged file costs no connection) and, when it is newer, loads the new build completely in a
worker thread while requests go on being answered from the old one; then it replaces the
reference in one assignment. A request takes the snapshot once, when it starts, and uses it to the
end: requests in flight finish on the build they began with, and no request ever sees a
half-loaded one. A failed load keeps the previous build and is reported by ``/api/status``.
The files a replaced build kept on disk go when its last request lets go of it; those of the
current builds when the server stops, and those a killed server left when the next one starts.

The model clients (``ModelSet``) stay open for the server's life: the HTTP connections, the
concurrency bound and the response cache are shared by every request, as they are by the calls of
one indexing step.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from graphrag_assets.core.settings import Settings
from graphrag_assets.core.tokens import token_counter
from graphrag_assets.llm.factory import ModelSet
from graphrag_assets.llm.usage import UsageMeter
from graphrag_assets.project.querying import uses_llm
from graphrag_assets.project.shared_index import answers_uncached, readable_settings, reads_shared_build
from graphrag_assets.query.engine import load_query_prompts
from graphrag_assets.serve.errors import ServeError, describe
from graphrag_assets.serve.snapshot import Snapshot, load_snapshot, read_build
from graphrag_assets.storage.snapshot_folders import remove_if_empty, remove_left_over

log = logging.getLogger("graphrag_assets.serve")


def file_stamp(database: Path) -> tuple[tuple[int, int], ...]:
    """Size and modification time of the database file and its write-ahead log (zeros: missing)."""
    stamps = []
    for path in (database, database.with_name(database.name + ".wal")):
        try:
            stat = os.stat(path)
            stamps.append((stat.st_size, stat.st_mtime_ns))
        except FileNotFoundError:
            stamps.append((0, 0))
    return tuple(stamps)


class Project:
    """One project: its settings, current build, model clients, prompts and token counter."""

    def __init__(self, name: str, settings: Settings) -> None:
        self.shared = reads_shared_build(settings)
        if self.shared:
            settings = answers_uncached(settings)
        self.name = name
        self.settings = settings
        self.declared = settings  # as configured: a shared index's settings are pointed at each new build
        self.llm = uses_llm(settings)
        self.models = ModelSet(settings, UsageMeter())
        self.prompts = load_query_prompts(settings.query.prompts, settings.root)
        self.count = token_counter(settings.chunking.encoding)
        self.snapshot: Snapshot | None = None
        self.error: str | None = None
        self._stamp: tuple[tuple[int, int], ...] | None = None
        self._lock = asyncio.Lock()

    def current(self) -> Snapshot:
        """The build to answer from (taken once per request)."""
        snapshot = self.snapshot
        if snapshot is None:
            detail = f" (last attempt: {self.error})" if self.error else ""
            raise ServeError(
                503,
                f"project {self.name!r} has no index yet{detail}; run 'graphrag-assets index --root {self.shown_root}' "
                "and the server picks it up.",
                "index_not_ready",
            )
        return snapshot

    async def refresh(self, *, force: bool = False) -> bool:
        """Load a newer published build if there is one; True when the current build changed."""
        async with self._lock:
            if self.shared:
                try:  # one small read of the shared pointer; a newer build is fetched once, beside the old
                    self.settings = await asyncio.to_thread(readable_settings, self.declared)
                except Exception as exc:  # keep serving the build we have; say why in /api/status
                    self.error = describe(exc)[1]
                    return False
            stamp = file_stamp(self.settings.database_path)
            if stamp == self._stamp and not force:
                return False
            try:
                build = await asyncio.to_thread(read_build, self.settings)
                if self.snapshot is not None and build == self.snapshot.build:
                    self._stamp = stamp
                    return False
                loaded = await asyncio.to_thread(load_snapshot, self.settings)
            except Exception as exc:  # keep serving the build we have; say why in /api/status
                self.error = describe(exc)[1]
                log.warning("project %s: the index could not be loaded: %s", self.name, self.error)
                return False
            self._stamp = stamp
            self.error = None
            if loaded is None:
                return False
            self.snapshot = loaded
            log.info("project %s: serving build %s", self.name, loaded.build.label)
            return True

    @property
    def shown_root(self) -> str:
        """The project folder as clients are told it: relative to where the server was started, or
        just its name; never the absolute path, which says more about the machine than they need."""
        root = Path(os.path.abspath(self.settings.root))
        try:
            return root.relative_to(Path.cwd()).as_posix() or "."
        except ValueError:
            return root.name

    def status(self) -> dict[str, Any]:
        snapshot = self.snapshot
        return {
            "name": self.name,
            "root": self.shown_root,
            "state": "ready" if snapshot is not None else "no_index",
            "build": snapshot.build.as_dict() if snapshot else None,
            "loaded_at": snapshot.loaded_at if snapshot else None,
            "load_seconds": round(snapshot.load_seconds, 3) if snapshot else None,
            "counts": snapshot.counts() if snapshot else None,
            "llm": self.llm,
            "error": self.error,
        }

    async def aclose(self) -> None:
        """Close the model clients' connections, write their pending cache entries and delete the
        build's files."""
        await self.models.aclose()
        if self.snapshot is not None:
            self.snapshot.release()


class Projects:
    """Every project of the server, by name, and the task that watches for newer builds."""

    def __init__(self, projects: Sequence[Project], interval: float) -> None:
        self.by_name = {p.name: p for p in projects}
        self.default = projects[0].name
        self.interval = interval
        self._watcher: asyncio.Task[None] | None = None

    def get(self, name: str | None) -> Project:
        project = self.by_name.get(name or self.default)
        if project is None:
            raise ServeError(
                404,
                f"there is no project named {name!r}; this server has: {', '.join(self.by_name)}.",
                "project_not_found",
            )
        return project

    async def start(self) -> None:
        """Load every project's index (concurrently), then watch for newer builds."""
        for project in self.by_name.values():
            remove_left_over(project.settings.database_path)
        await asyncio.gather(*(p.refresh(force=True) for p in self.by_name.values()))
        self._watcher = asyncio.create_task(self._watch())

    async def refresh_all(self) -> list[str]:
        """Look for newer builds now; the names of the projects whose build changed."""
        changed = await asyncio.gather(*(p.refresh() for p in self.by_name.values()))
        return [name for name, did in zip(self.by_name, changed) if did]

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            await self.refresh_all()

    async def stop(self) -> None:
        if self._watcher is not None:
            self._watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watcher
        for project in self.by_name.values():
            await project.aclose()
            remove_if_empty(project.settings.database_path)
