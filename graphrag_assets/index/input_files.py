"""Finding input files and naming their partitions.

A document partition key is derived from the file's path relative to the input folder, so it is
stable across runs and machines. Dagster's partition syntax reserves ``,``, ``[``, ``]`` and
``...`` (ranges) and rejects control characters; paths using anything outside a safe set are
sanitized and given a short hash suffix of the real path, so two paths never share a key.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

_UNSAFE = re.compile(r"[^\w.\-/]+", re.UNICODE)
_DOTS = re.compile(r"\.{2,}")
HASH_BLOCK = 1 << 20


@dataclass(frozen=True)
class InputFile:
    path: str  # relative to the input folder, with forward slashes
    key: str  # partition key
    size: int
    mtime: float


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
    the same files); links to nothing cannot be read. Both are passed over and named, never silently.
    """
    scan = InputScan()
    if not input_dir.is_dir():
        return scan
    wanted = {t.lower() for t in file_types}
    visited = {input_dir.resolve()}
    for dirpath, dirnames, filenames in os.walk(input_dir, followlinks=True):
        here = Path(dirpath)
        keep = []
        for name in sorted(d for d in dirnames if not d.startswith(".")):
            target = (here / name).resolve()
            if target in visited:
                scan.passed_over.append(
                    f"{(here / name).relative_to(input_dir).as_posix()}: a link to a folder already read, not followed again"
                )
                continue
            visited.add(target)
            keep.append(name)
        dirnames[:] = keep
        for name in filenames:
            if name.startswith(".") or Path(name).suffix.lower() not in wanted:
                continue
            full = here / name
            relative = full.relative_to(input_dir).as_posix()
            try:
                stat = full.stat()
            except OSError as exc:
                reason = (
                    "a link to a file that does not exist"
                    if full.is_symlink()
                    else f"it cannot be read ({exc.strerror})"
                )
                scan.passed_over.append(f"{relative}: skipped, {reason}")
                continue
            scan.files.append(InputFile(relative, partition_key_for(relative), stat.st_size, stat.st_mtime))
    scan.files.sort(key=lambda f: f.path)
    return scan


def discover_input_files(input_dir: Path, file_types: list[str]) -> list[InputFile]:
    """The input files of :func:`scan_input_files`."""
    return scan_input_files(input_dir, file_types).files


def file_hash(path: Path) -> str:
    """SHA-256 of the file's bytes, read in blocks so large files are never held in memory."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(HASH_BLOCK):
            digest.update(block)
    return digest.hexdigest()
