"""Published builds of an index on shared storage: copy-on-publish and one pointer object.

The index stays one DuckDB file (and a LanceDB folder), written by one process at a time. To
share it between machines, each successful ``index`` copies the checkpointed file and the LanceDB
folder to ``<shared_url>/index/<build id>/``, then replaces ``<shared_url>/index/current.json``,
a small object naming that build. Replacing one object is one PUT on an object store (a rename in
a folder), so a reader that reads the pointer and then the files it names sees the old build or the
new one, never a mix: files of a build are never changed after the pointer names them. The
replacement is a compare-and-swap (:func:`swap_pointer`: a conditional PUT on S3, a locked check
and rename in a folder), so of two publishers racing, the later never hides the other's build. The two
newest builds are kept (a reader that read the pointer just before a publish still finds its
files); older copies are deleted.

A build is fetched into a local folder under its id (written beside it, then renamed), so a
folder of that name is always complete and a second reader of the same build copies nothing.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import shutil
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from graphrag_assets.core.errors import UserError
from graphrag_assets.storage.database import connect, let_go
from graphrag_assets.storage.object_store import SharedLocation, describe_store_error

INDEX_FOLDER = "index"
POINTER = "current.json"
DATABASE_FILE = "graphrag.duckdb"
LANCEDB_FOLDER = "lancedb"
KEEP_BUILDS = 2


@dataclass(frozen=True)
class Pointer:
    """What ``current.json`` holds: the current build, when it was published, and its files."""

    build_id: str
    published_at: str
    files: dict[str, int] = field(default_factory=dict)  # path inside the build -> size in bytes
    previous: str | None = None  # the build before it (kept, for readers that started on it)

    @classmethod
    def parse(cls, data: bytes) -> Pointer:
        raw = json.loads(data)
        return cls(raw["build_id"], raw["published_at"], dict(raw.get("files") or {}), raw.get("previous"))

    def dumps(self) -> bytes:
        return json.dumps(asdict(self), indent=1, sort_keys=True).encode()


def read_pointer(location: SharedLocation) -> Pointer | None:
    """The current build (None: nothing was published there yet).

    On S3 the pointer is read in one GET (:func:`read_versioned_pointer`): pyarrow's stream asks
    the object's size first and then reads that many bytes, so a pointer replaced in between came
    back cut off (``test_a_reader_during_publishes_sees_one_whole_build`` failed so once, under load).
    """
    if location.is_s3:
        return read_versioned_pointer(location)[0]
    from pyarrow import fs as pafs

    try:
        filesystem = location.filesystem()
        path = location.path(INDEX_FOLDER, POINTER)
        if filesystem.get_file_info(path).type == pafs.FileType.NotFound:
            return None
        with filesystem.open_input_stream(path) as stream:
            return _parsed(location, stream.read())
    except OSError as exc:
        raise describe_store_error(location, exc) from None


def _parsed(location: SharedLocation, data: bytes) -> Pointer:
    try:
        return Pointer.parse(data)
    except (ValueError, KeyError) as exc:
        raise UserError(
            f"{location.url_of(INDEX_FOLDER, POINTER)} is not a build pointer ({exc}); "
            "delete it and run 'graphrag-assets index' to publish again."
        ) from None


def new_build_id() -> str:
    """Sortable by time, unique across machines."""
    return f"{datetime.now(UTC):%Y%m%dT%H%M%S%fZ}-{secrets.token_hex(3)}"


def checkpoint(database: Path) -> None:
    """Fold the write-ahead log into the file and close it, so the file alone is the whole index."""
    let_go(database)
    with connect(database) as conn:
        conn.execute("checkpoint")
    let_go(database)


def publish_build(location: SharedLocation, database: Path, lancedb: Path, expected: str | None) -> Pointer:
    """Copy the index to a new build on ``location`` and point ``current.json`` at it.

    ``expected``: the build this index continued from (None: none); when another machine has
    published since, this one refuses rather than hide that build's work (one writer at a time).
    """
    from pyarrow import fs as pafs

    checkpoint(database)
    build_id = new_build_id()
    local = pafs.LocalFileSystem()
    try:
        current, seen = read_versioned_pointer(location)
        if current is not None and current.build_id != expected:
            raise _published_meanwhile(location, current.build_id)
        filesystem = location.filesystem()
        target = location.path(INDEX_FOLDER, build_id)
        filesystem.create_dir(target, recursive=True)
        files = {DATABASE_FILE: database.stat().st_size}
        pafs.copy_files(
            str(database), f"{target}/{DATABASE_FILE}", source_filesystem=local, destination_filesystem=filesystem
        )
        if lancedb.is_dir() and any(lancedb.iterdir()):
            files.update(_folder_sizes(lancedb, LANCEDB_FOLDER))
            pafs.copy_files(
                str(lancedb),
                f"{target}/{LANCEDB_FOLDER}",
                source_filesystem=local,
                destination_filesystem=filesystem,
                use_threads=True,
            )
        pointer = Pointer(build_id, datetime.now(UTC).isoformat(), files, current.build_id if current else None)
        try:
            swap_pointer(location, pointer, seen)
        except UserError:
            with contextlib.suppress(OSError):  # the refused build's copy: nobody will read it
                filesystem.delete_dir(target)
            raise
        _delete_old_builds(location, filesystem, pointer)
        return pointer
    except OSError as exc:
        raise describe_store_error(location, exc) from None


def _published_meanwhile(location: SharedLocation, build_id: str | None) -> UserError:
    named = f"build {build_id}" if build_id else "a build"
    return UserError(
        f"another index run published {named} to {location.url} while this one ran; "
        "run 'graphrag-assets index' again to continue from it (one writer at a time)."
    )


def _folder_sizes(folder: Path, prefix: str) -> dict[str, int]:
    return {
        f"{prefix}/{path.relative_to(folder).as_posix()}": path.stat().st_size
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def read_versioned_pointer(location: SharedLocation) -> tuple[Pointer | None, str | None]:
    """The current pointer and the version a compare-and-swap expects: the object's ETag on S3, the
    file's text in a folder (None: nothing published yet)."""
    if not location.is_s3:
        path = Path(location.path(INDEX_FOLDER, POINTER))
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return read_pointer(location), None  # read_pointer checks the folder
        return _parsed(location, data), data.decode("utf-8")
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        answer = location.s3_client().get_object(Bucket=location.bucket, Key=_pointer_key(location))
        return _parsed(location, answer["Body"].read()), answer["ETag"]
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
            return None, None
        raise describe_store_error(location, exc) from None
    except BotoCoreError as exc:
        raise describe_store_error(location, exc) from None


def _pointer_key(location: SharedLocation) -> str:
    return "/".join(part for part in (location.prefix, INDEX_FOLDER, POINTER) if part)


def swap_pointer(location: SharedLocation, pointer: Pointer, seen: str | None) -> None:
    """Point ``current.json`` at ``pointer`` only if it is still the version ``seen`` (None: absent),
    else raise: of two publishers racing, the later never replaces the earlier's newer build.

    On S3 this is one conditional PUT (If-Match on the ETag read, If-None-Match: * for the first
    build), which the store decides atomically. In a folder, the check and the rename happen under
    an exclusive lock on a file beside the pointer (fcntl; on NFS that needs its lock service).
    """
    if location.is_s3:
        _swap_object(location, pointer, seen)
        return
    folder = Path(location.path(INDEX_FOLDER))
    path = folder / POINTER
    with (folder / f".{POINTER}.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            now = path.read_text(encoding="utf-8") if path.exists() else None
            if now != seen:
                raise _published_meanwhile(location, _parsed(location, now.encode()).build_id if now else None)
            fresh = folder / f".{POINTER}.{pointer.build_id}"
            fresh.write_bytes(pointer.dumps())
            os.replace(fresh, path)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _swap_object(location: SharedLocation, pointer: Pointer, seen: str | None) -> None:
    from botocore.exceptions import BotoCoreError, ClientError

    condition = {"IfMatch": seen} if seen else {"IfNoneMatch": "*"}
    try:
        location.s3_client().put_object(
            Bucket=location.bucket,
            Key=_pointer_key(location),
            Body=pointer.dumps(),
            ContentType="application/json",
            **condition,
        )
    except ClientError as exc:
        # 412: the pointer changed since it was read; 409: another conditional PUT of it is under way
        if exc.response.get("Error", {}).get("Code") in ("PreconditionFailed", "ConditionalRequestConflict"):
            raise _published_meanwhile(location, None) from None
        raise describe_store_error(location, exc) from None
    except BotoCoreError as exc:
        raise describe_store_error(location, exc) from None


def _delete_old_builds(location: SharedLocation, filesystem: Any, pointer: Pointer) -> None:
    """Delete builds older than the two newest (a build newer than the pointer is another writer's
    upload in progress: left alone)."""
    from pyarrow import fs as pafs

    keep = {pointer.build_id, pointer.previous}
    listing = filesystem.get_file_info(pafs.FileSelector(location.path(INDEX_FOLDER), recursive=False))
    for info in listing:
        if info.type == pafs.FileType.Directory and info.base_name not in keep and info.base_name < pointer.build_id:
            with contextlib.suppress(OSError):  # a reader may be copying it on a folder that refuses: next time
                filesystem.delete_dir(info.path)


def fetch_build(location: SharedLocation, pointer: Pointer, cache: Path) -> Path:
    """The folder ``cache/<build id>`` holding the build, copied now unless it is there already."""
    from pyarrow import fs as pafs

    folder = cache / pointer.build_id
    if folder.is_dir():
        return folder
    cache.mkdir(parents=True, exist_ok=True)
    partial = cache / f".{pointer.build_id}.{os.getpid()}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir()
    try:
        pafs.copy_files(
            location.path(INDEX_FOLDER, pointer.build_id),
            str(partial),
            source_filesystem=location.filesystem(),
            destination_filesystem=pafs.LocalFileSystem(),
            use_threads=True,
        )
        missing = [path for path, size in pointer.files.items() if _size(partial / path) != size]
        if missing:
            raise UserError(
                f"build {pointer.build_id} on {location.url} lacks {missing[0]} (or it has another size); "
                "it was deleted while being read: run the command again to read the current build."
            )
        try:
            partial.rename(folder)
        except OSError:
            if not folder.is_dir():  # another process finished the same copy first: theirs is as good
                raise
        return folder
    except OSError as exc:
        raise describe_store_error(location, exc) from None
    finally:
        shutil.rmtree(partial, ignore_errors=True)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return -1


def install_build(folder: Path, database: Path, lancedb: Path) -> None:
    """Make a fetched build the local index: the database file and the LanceDB folder are replaced
    (each by a rename; the old LanceDB folder is moved aside first, then deleted)."""
    let_go(database)
    database.parent.mkdir(parents=True, exist_ok=True)
    database.with_name(database.name + ".wal").unlink(missing_ok=True)
    os.replace(folder / DATABASE_FILE, database)
    aside = lancedb.with_name(lancedb.name + ".replaced")
    shutil.rmtree(aside, ignore_errors=True)
    if lancedb.exists():
        lancedb.rename(aside)
    if (folder / LANCEDB_FOLDER).is_dir():
        lancedb.parent.mkdir(parents=True, exist_ok=True)
        (folder / LANCEDB_FOLDER).rename(lancedb)
    shutil.rmtree(aside, ignore_errors=True)
    shutil.rmtree(folder, ignore_errors=True)


def forget_cached_builds(cache: Path, keep: set[str]) -> None:
    """Delete fetched builds other than ``keep`` (the current one and the one before it)."""
    if not cache.is_dir():
        return
    for entry in cache.iterdir():
        if entry.is_dir() and entry.name not in keep and not entry.name.startswith("."):
            shutil.rmtree(entry, ignore_errors=True)
