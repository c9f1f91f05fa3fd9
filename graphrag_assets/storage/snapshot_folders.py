"""Where a server keeps the files of the builds it serves, and removing those a killed server left.

Apart from :mod:`.relationship_files`, which imports pyarrow: a server of small indexes, which
never writes such files, still removes left-over ones when it starts, without that import (30 MB).
"""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

FOLDER = ".serve-snapshots"  # beside the database: <data>/.serve-snapshots/<pid>-<random>/


def snapshots_folder(database: Path) -> Path:
    """Where the servers of the project at ``database`` keep their snapshots' files."""
    return database.parent / FOLDER


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def remove_left_over(database: Path) -> list[Path]:
    """Remove the snapshot folders of servers that are no longer running (killed, so they could
    not clean up); the folders removed."""
    removed = []
    root = snapshots_folder(database)
    for folder in sorted(root.glob("*")) if root.is_dir() else []:
        pid = folder.name.split("-", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


def remove_if_empty(database: Path) -> None:
    """Remove the project's snapshots folder when no server keeps anything in it (a stopping server)."""
    with contextlib.suppress(OSError):  # missing, or another server's files are in it
        snapshots_folder(database).rmdir()
