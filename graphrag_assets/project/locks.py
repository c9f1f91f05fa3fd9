"""The index lock: one writer per project at a time (``data/.index.lock``).

``graphrag-assets index`` holds it for the whole of an update; the sensor and the schedule skip
their tick while it is held. An ``fcntl`` lock belongs to the process holding the file open, so
the kernel releases it when that process dies, however it dies. While held, the file names the
holder (host, pid, start time, when it started); a clean finish empties it, so a file that still
names a holder nobody holds tells that the last update was killed part-way.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from graphrag_assets.core.errors import UserError
from graphrag_assets.core.processes import ProcessId
from graphrag_assets.core.settings import Settings

LOCK_FILE = ".index.lock"
# Which run last continued from the shared build (project/shared_index.py: continue_run).
RUN_ONCE_FILE = ".shared-continue.lock"


def lock_path(settings: Settings) -> Path:
    return settings.database_path.parent / LOCK_FILE


@contextlib.contextmanager
def index_lock(settings: Settings, command: str = "index") -> Iterator[dict[str, Any] | None]:
    """An exclusive lock on the project's index for the whole of an update.

    Yields what the lock file said about an earlier holder that died without finishing (None
    when the last update finished). ``command`` (``index``, ``vacuum``) is written for the
    messages about a holder that died: they name what was killed. Ctrl-C ends the holder in
    order (it says so itself), so it empties the file as a finish does.
    """
    path = lock_path(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+", encoding="utf-8") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UserError(
                f"another 'graphrag-assets index' is updating {settings.root}; wait for it to finish and run again."
            ) from None
        try:
            handle.seek(0)
            previous = _holder(handle.read())
            me = ProcessId.current()
            _rewrite(handle, json.dumps({"command": command, "host": me.host, "pid": me.pid, "started_at": _now()}))
            try:
                yield previous
            except KeyboardInterrupt:
                _rewrite(handle, "")
                raise
            _rewrite(handle, "")
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@contextlib.contextmanager
def first_of_run(settings: Settings, run_id: str) -> Iterator[bool]:
    """Whether this process is the first of run ``run_id`` to get here; held until the body ends.

    A run's steps may each be a process (the multiprocess executor, dask, a pod per step), so the
    others wait on the lock while the first works and then see ``False``. The run id is recorded
    only when the first one's body finished without an error, so a failed attempt is made again.
    """
    path = lock_path(settings).with_name(RUN_ONCE_FILE)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            handle.seek(0)
            first = handle.read().strip() != run_id
            yield first
            if first:
                _rewrite(handle, run_id)
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def index_lock_held(settings: Settings) -> bool:
    """True while some process holds the index lock (the sensor then waits for its next tick)."""
    path = lock_path(settings)
    if not path.exists():
        return False
    with path.open("a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
        return False


def interrupted_update(settings: Settings) -> dict[str, Any] | None:
    """The holder of the last update when it was killed before finishing (and nobody holds it now)."""
    path = lock_path(settings)
    if not path.exists() or index_lock_held(settings):
        return None
    return _holder(path.read_text(encoding="utf-8"))


def _holder(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text) if text.strip() else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _rewrite(handle, text: str) -> None:
    handle.seek(0)
    handle.truncate()
    handle.write(text)
    handle.flush()


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
