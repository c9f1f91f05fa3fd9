"""Finding input files and naming their partitions.

A document partition key is derived from the file's path relative to the input folder, so it is
stable across runs and machines. Dagster's partition syntax reserves ``,``, ``[``, ``]`` and
``...`` (ranges) and rejects control characters; paths using anything outside a safe set are
sanitized and given a short hash suffix of the real path, so two paths never share a key.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import stat as stat_kind
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

_UNSAFE = re.compile(r"[^\w.\-/]+", re.UNICODE)
_DOTS = re.compile(r"\.{2,}")
HASH_BLOCK = 1 << 20
# Opening a named pipe for reading waits for a writer; O_NONBLOCK makes it return at once, so the
# opened thing can be checked before anything is read (Windows has no pipes in folders, nor the flag).
_OPEN_WITHOUT_WAITING = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
_KINDS = (
    (stat_kind.S_ISFIFO, "a named pipe"),
    (stat_kind.S_ISSOCK, "a socket"),
    (stat_kind.S_ISCHR, "a device"),
    (stat_kind.S_ISBLK, "a device"),
)


@dataclass(frozen=True)
class InputFile:
    path: str  # relative to the input folder, with forward slashes
    key: str  # partition key
    size: int
    mtime_ns: int  # as stored in source_files, so a change check needs no second stat


class NotARegularFile(OSError):
    """The path names a pipe, socket or device: reading it could wait forever or never end."""


def kind_of(mode: int) -> str:
    """What a non-regular file is, in words ("a named pipe", ...)."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


@contextmanager
def open_regular(path: Path) -> Iterator[io.BufferedReader]:
    """``path`` opened for binary reading, refusing anything but a regular file (NotARegularFile).

    Checked on the opened descriptor, so a file swapped for a pipe after the folder was scanned
    cannot make a reader (or the sensor's hashing) wait for a writer that never comes.
    """
    descriptor = os.open(path, _OPEN_WITHOUT_WAITING)
    try:
        mode = os.fstat(descriptor).st_mode
        if not stat_kind.S_ISREG(mode):
            raise NotARegularFile(f"{path.name} is {kind_of(mode)}")
        if hasattr(os, "set_blocking"):
            os.set_blocking(descriptor, True)
        handle = os.fdopen(descriptor, "rb")
    except BaseException:
        os.close(descriptor)
        raise
    with handle:
        yield handle


def escaped_name(name: str) -> str | None:
    """A printable form of a name that is not valid UTF-8 (its bad bytes as ``\\xe9``), else None.

    Python hands such names over with each bad byte as a lone surrogate (PEP 383); such text
    cannot be stored in the database, shown, or sent anywhere, so these files are passed over.
    """
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return os.fsencode(name).decode("utf-8", "backslashreplace")
    return None


def _not_utf8(relative: str, what: str) -> str:
    shown = escaped_name(relative)
    return (
        f"{shown}: skipped, the {what} name is not valid UTF-8 (shown here with its bad bytes as \\x..); "
        "rename it to a UTF-8 name to index it"
    )


def partition_key_for(relative_path: str) -> str:
    """A Dagster-safe, stable partition key for a relative path."""
    posix = relative_path.replace(os.sep, "/").strip("/")
    key = _DOTS.sub(".", _UNSAFE.sub("_", posix))
    if key != posix or not key:
        digest = hashlib.sha256(posix.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        key = f"{key}~{digest}"
    return key


@dataclass
class InputScan:
    """The input files found, and what was passed over with the reason (shown by index and status)."""

    files: list[InputFile] = field(default_factory=list)
    passed_over: list[str] = field(default_factory=list)


def scan_input_files(input_dir: Path, file_types: list[str]) -> InputScan:
    """Every file under ``input_dir`` (recursively) with one of ``file_types``, sorted by path.

    Hidden files and folders (starting with '.') are ignored, like editors' swap files. Linked
    folders are followed, except a link to a folder already visited (a loop, or a second way into
    the same files); links to nothing cannot be read. Both are passed over and named, never silently,
    as are names that are not valid UTF-8 (one bad name must not stop the other files) and named
    pipes, sockets and devices (reading one waits forever or never ends).
    """
    scan = InputScan()
    if not input_dir.is_dir():
        return scan
    wanted = {t.lower() for t in file_types}
    visited = {input_dir.resolve()}
    root = os.fspath(input_dir)
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        here = Path(dirpath)
        keep = []
        for name in sorted(d for d in dirnames if not d.startswith(".")):
            if escaped_name(name) is not None:
                scan.passed_over.append(_not_utf8((here / name).relative_to(input_dir).as_posix(), "folder"))
                continue
            target = (here / name).resolve()
            if target in visited:
                scan.passed_over.append(
                    f"{(here / name).relative_to(input_dir).as_posix()}: a link to a folder already read, not followed again"
                )
                continue
            visited.add(target)
            keep.append(name)
        dirnames[:] = keep
        # Strings, not Path objects, for each file: at 100,000 files pathlib's parsing was most
        # of the scan (10.7 of 16.8 s of a profiled `status`), which index and status pay each time.
        folder = here.relative_to(input_dir).as_posix()
        prefix = "" if folder == "." else folder + "/"
        for name in filenames:
            if name.startswith(".") or os.path.splitext(name)[1].lower() not in wanted:
                continue
            full = os.path.join(dirpath, name)
            relative = prefix + name
            if escaped_name(name) is not None:
                scan.passed_over.append(_not_utf8(relative, "file"))
                continue
            try:
                stat = os.stat(full)
            except OSError as exc:
                reason = (
                    "a link to a file that does not exist"
                    if os.path.islink(full)
                    else f"it cannot be read ({exc.strerror})"
                )
                scan.passed_over.append(f"{relative}: skipped, {reason}")
                continue
            if not stat_kind.S_ISREG(stat.st_mode):
                scan.passed_over.append(f"{relative}: skipped, it is {kind_of(stat.st_mode)}, not a regular file")
                continue
            scan.files.append(InputFile(relative, partition_key_for(relative), stat.st_size, stat.st_mtime_ns))
    scan.files.sort(key=lambda f: f.path)
    return scan


def discover_input_files(input_dir: Path, file_types: list[str]) -> list[InputFile]:
    """The input files of :func:`scan_input_files`."""
    return scan_input_files(input_dir, file_types).files


def file_hash(path: Path) -> str:
    """SHA-256 of the file's bytes, read in blocks so large files are never held in memory."""
    digest = hashlib.sha256()
    with open_regular(path) as handle:
        while block := handle.read(HASH_BLOCK):
            digest.update(block)
    return digest.hexdigest()
