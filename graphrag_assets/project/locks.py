"""The index lock: one writer per project at a time (``data/.index.lock``).

``graphrag-assets index`` holds it for the whole of an update; the sensor and the schedule skip
their tick while it is held. An ``fcntl`` lock belongs to the process holding the file open, so
it is released by the kernel when that process dies, however it dies.
"""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator
from pathlib import Path

from graphrag_assets.core.errors import UserError
from graphrag_assets.core.settings import Settings

LOCK_FILE = ".index.lock"


def lock_path(settings: Settings) -> Path:
    return settings.database_path.parent / LOCK_FILE


@contextlib.contextmanager
def index_lock(settings: Settings) -> Iterator[None]:
    """An exclusive lock on the project's index for the whole of an update."""
    path = lock_path(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UserError(
                f"another 'graphrag-assets index' is updating {settings.root}; wait for it to finish and run again."
            ) from None
        try:
            yield
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
