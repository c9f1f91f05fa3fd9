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
from dataclasses import dataclass
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


def discover_input_files(input_dir: Path, file_types: list[str]) -> list[InputFile]:
    """Every file under ``input_dir`` (recursively) with one of ``file_types``, sorted by path.

    Hidden files and folders (starting with '.') are ignored, like editors' swap files.
    """
    if not input_dir.is_dir():
        return []
    wanted = {t.lower() for t in file_types}
    found: list[InputFile] = []
    for dirpath, dirnames, filenames in os.walk(input_dir):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in filenames:
            if name.startswith(".") or Path(name).suffix.lower() not in wanted:
                continue
            full = Path(dirpath) / name
            try:
                stat = full.stat()
            except OSError:
                continue
            relative = full.relative_to(input_dir).as_posix()
            found.append(InputFile(relative, partition_key_for(relative), stat.st_size, stat.st_mtime))
    found.sort(key=lambda f: f.path)
    return found


def file_hash(path: Path) -> str:
    """SHA-256 of the file's bytes, read in blocks so large files are never held in memory."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(HASH_BLOCK):
            digest.update(block)
    return digest.hexdigest()
