"""An index shared between machines through ``storage.shared_url`` (see storage/shared_build.py).

Three moments use it:

- before ``index`` plans, and before the first step of a run of the indexing jobs that the UI, the
  sensor or the schedule launched (:func:`continue_run`): when the shared build is newer than the
  local index (or there is no local index: a fresh pod, another disk), it is fetched and becomes the
  local index, so the run continues from it (documents already extracted are not extracted again;
  the response cache travels inside the DuckDB file);
- after a successful ``index`` — the corpus job's ``shared_build`` step, whoever launched the run
  (CLI, UI, sensor), and the CLI again when no corpus run was needed: the local index is published
  as the new shared build;
- a reading command (``query``, ``status``, ``sql``, ``show``, ``export``, ``serve``) in a project
  that has no local index reads the current shared build from a local cache folder keyed by its
  build id: the first command of a build copies it, later ones copy nothing.

The local index remembers which shared build it is (``<database>.shared.json``), which is how
"the shared build is newer" is told without comparing clocks across machines.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from graphrag_assets.core.errors import UserError
from graphrag_assets.core.settings import Settings
from graphrag_assets.project.locks import first_of_run, index_lock_held
from graphrag_assets.storage.object_store import SharedLocation, shared_location
from graphrag_assets.storage.shared_build import (
    Pointer,
    checkpoint,
    fetch_build,
    forget_cached_builds,
    install_build,
    publish_build,
    read_pointer,
)

CACHE_FOLDER = "shared-builds"
Announce = Callable[[str], None]


def marker_path(settings: Settings) -> Path:
    return settings.database_path.with_name(settings.database_path.name + ".shared.json")


def local_build(settings: Settings) -> str | None:
    """The shared build the local index was fetched as or published as (None: neither)."""
    try:
        return json.loads(marker_path(settings).read_text(encoding="utf-8"))["build_id"]
    except (FileNotFoundError, ValueError, KeyError):
        return None


def _remember(settings: Settings, pointer: Pointer) -> None:
    path = marker_path(settings)
    fresh = path.with_name(path.name + ".tmp")
    fresh.write_text(json.dumps({"build_id": pointer.build_id, "published_at": pointer.published_at}), "utf-8")
    fresh.replace(path)


def cache_folder(settings: Settings) -> Path:
    """Where reading commands keep fetched builds: beside where the local index would be."""
    return settings.database_path.parent / CACHE_FOLDER


def reads_shared_build(settings: Settings) -> bool:
    """A reading command reads the shared build: one is configured and there is no local index."""
    return bool(settings.storage.shared_url) and not settings.database_path.exists()


def cached_build(settings: Settings) -> str | None:
    """The shared build these (reader's) settings point at, when they point at a fetched one."""
    folder = settings.database_path.parent
    return folder.name if settings.storage.shared_url and folder.parent.name == CACHE_FOLDER else None


def readable_settings(settings: Settings) -> Settings:
    """The settings a reading command reads the index with: as given when the index is local,
    else pointing at the current shared build in the local cache (fetched now when new)."""
    if not reads_shared_build(settings):
        return settings
    location = _location(settings)
    pointer = read_pointer(location)
    if pointer is None:
        raise UserError(
            f"no index has been published to {location.url} yet; run 'graphrag-assets index' "
            "on a machine that has the input documents."
        )
    cache = cache_folder(settings)
    folder = fetch_build(location, pointer, cache)
    forget_cached_builds(cache, {pointer.build_id, pointer.previous or ""})
    storage = settings.storage.model_copy(
        update={"database": str(folder / "graphrag.duckdb"), "lancedb": str(folder / "lancedb")}
    )
    return answers_uncached(settings).model_copy(update={"storage": storage})


def answers_uncached(settings: Settings) -> Settings:
    """A reader of a shared build does not write: the model's answers to its queries are not cached
    (the cache lives in the index database, which is the publisher's copy)."""
    return settings.model_copy(update={"llm": settings.llm.model_copy(update={"cache": False})})


def continue_from_shared(settings: Settings, announce: Announce = lambda message: None) -> Pointer | None:
    """Before ``index`` plans: make the newest shared build the local index when it is newer.

    Returns the current shared build (None: nothing published yet). A local index that no marker
    ties to a build (indexed before shared_url was set) is kept when it is newer than the shared one.
    """
    location = shared_location(settings)
    if location is None:
        return None
    pointer = read_pointer(location)
    if pointer is None or not _shared_is_newer(settings, pointer):
        return pointer
    announce(f"continuing from build {pointer.build_id} of {location.url}")
    folder = fetch_build(location, pointer, cache_folder(settings))
    install_build(folder, settings.database_path, settings.lancedb_path)
    _remember(settings, pointer)
    return pointer


def continue_run(settings: Settings, run_id: str, announce: Announce = lambda message: None) -> None:
    """Before a run of the indexing jobs opens the index: :func:`continue_from_shared`, once per run
    however many processes run its steps (the first fetches, the others wait for it and find it done).

    Nothing is done while ``graphrag-assets index`` holds the index lock: it continued before it took
    the lock and runs the jobs inside it, and a build fetched halfway through its update would drop
    the documents its earlier runs wrote (its publish is refused instead, and says to run again).
    """
    if index_lock_held(settings):
        return
    with first_of_run(settings, run_id) as first:
        if first:
            continue_from_shared(settings, announce)


def _shared_is_newer(settings: Settings, pointer: Pointer) -> bool:
    if not settings.database_path.exists():
        return True
    known = local_build(settings)
    if known is not None:
        return known != pointer.build_id
    published = datetime.fromisoformat(pointer.published_at).timestamp()
    return published > settings.database_path.stat().st_mtime


def publish_to_shared(settings: Settings, current: Pointer | None) -> str | None:
    """Publish the local index unless it is a shared build already; the id of the build it now is.

    ``current``: the shared build the local index descends from (None: none); another machine's
    newer build is refused in one sentence.
    """
    location = shared_location(settings)
    if location is None or not settings.database_path.exists():
        return None
    known = local_build(settings)
    if known is not None and not _changed_since(settings):
        return known  # the local index is that shared build, unchanged since it was published or fetched
    pointer = publish_build(
        location, settings.database_path, settings.lancedb_path, current.build_id if current else None
    )
    _remember(settings, pointer)
    return pointer.build_id


def publish_after_index(
    settings: Settings, current: Pointer | None, started_as: str | None, announce: Announce
) -> None:
    """After a successful ``index``: publish what the run left, unless its corpus job's ``shared_build``
    step did (the local index's marker changed during the run); either way say which build it published.

    ``current``: the shared build when the run started (what :func:`continue_from_shared` returned);
    ``started_as``: the shared build the local index was then (its marker). The bookkeeping the CLI
    writes into the index after the corpus job is not worth a second build.
    """
    known = local_build(settings)
    build = known if known != started_as else publish_to_shared(settings, current)
    if build is not None and build != started_as:
        announce(f"published build {build} to {_location(settings).url}")


def publish_after_run(settings: Settings, announce: Announce = lambda message: None) -> str | None:
    """From inside a run (the UI's, the sensor's or the CLI's): publish the local index as the new
    shared build, expecting the build it descends from — the one it was fetched or published as, or,
    for an index that was never shared, the current one when the local index is newer (what
    :func:`continue_from_shared` keeps). A newer build from another machine is refused in one sentence."""
    location = shared_location(settings)
    if location is None:
        return None
    pointer = read_pointer(location)
    descends = pointer if pointer is not None and not _shared_is_newer(settings, pointer) else None
    build = publish_to_shared(settings, descends)
    if build is not None and (pointer is None or build != pointer.build_id):
        announce(f"published build {build} to {location.url}")
    return build


def _changed_since(settings: Settings) -> bool:
    """Whether the local index was written after the marker (the marker is written after the file).

    The write-ahead log is folded into the file first: writes a warm connection of this process
    still holds there (a run's steps right after a fetch) have not changed the file's time yet."""
    checkpoint(settings.database_path)
    return settings.database_path.stat().st_mtime_ns > marker_path(settings).stat().st_mtime_ns


def _location(settings: Settings) -> SharedLocation:
    location = shared_location(settings)
    assert location is not None  # callers checked storage.shared_url
    return location
