"""The exchange: Parquet files passed between the process that writes the index and its workers.

A location is a local folder or an object-store URL (``s3://bucket/prefix``); both go through
``pyarrow.fs`` (:meth:`pyarrow.fs.FileSystem.from_uri`), so the code that writes a shard's files
does not know which it is. The API is deliberately tiny — write a frame, read one, list, delete a
tree — so another store only needs a file system, not another code path.

Every write is atomic for a reader: on a local folder the file is written under a temporary name
in the same folder and moved into place (a rename); on an object store an object appears whole
with its one PUT. A reader therefore sees a file complete or not at all, and a killed writer
leaves at most a temporary file that no name a reader asks for points at.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import polars as pl

from graphrag_assets.storage.object_store import SharedLocation

TEMPORARY_SUFFIX = ".partial"


class Exchange:
    """Files under one base location (a folder path or a URL), named by paths relative to it."""

    def __init__(self, location: str | Path, filesystem: Any = None, base: str | None = None) -> None:
        """``filesystem`` and ``base``: a file system already set up for the location (an object
        store with its endpoint and credentials) and the location's path on it."""
        text = str(location)
        if "://" not in text:  # a plain path: absolute, so every process resolves it alike
            Path(text).mkdir(parents=True, exist_ok=True)
            text = Path(text).resolve().as_uri()
        self.location = text
        from pyarrow import fs as pafs  # here: the index's definitions load this module, and pyarrow costs 25 MB

        self._pafs = pafs
        self.fs, self.base = (filesystem, str(base)) if filesystem is not None else pafs.FileSystem.from_uri(text)
        self.local = isinstance(self.fs, pafs.LocalFileSystem)

    def _path(self, relative: str) -> str:
        return f"{self.base.rstrip('/')}/{relative.strip('/')}" if relative else self.base

    def write(self, relative: str, frame: pl.DataFrame) -> None:
        """Write ``frame`` as Parquet at ``relative``, replacing any file there, atomically."""
        target = self._path(relative)
        if not self.local:
            with self.fs.open_output_stream(target) as stream:
                frame.write_parquet(stream)
            return
        self.fs.create_dir(target.rsplit("/", 1)[0], recursive=True)
        temporary = f"{target}.{uuid.uuid4().hex}{TEMPORARY_SUFFIX}"
        try:
            with self.fs.open_output_stream(temporary) as stream:
                frame.write_parquet(stream)
            self.fs.move(temporary, target)
        except BaseException:
            self._delete_file(temporary)
            raise

    def read(self, relative: str) -> pl.DataFrame | None:
        """The frame at ``relative``, or None when there is no such file."""
        try:
            with self.fs.open_input_file(self._path(relative)) as handle:
                return pl.read_parquet(handle)
        except FileNotFoundError:
            return None

    def exists(self, relative: str) -> bool:
        return self.fs.get_file_info(self._path(relative)).type != self._pafs.FileType.NotFound

    def list(self, relative: str = "") -> list[str]:
        """The files under ``relative`` (recursively, temporary files left out), relative to it, sorted."""
        root = self._path(relative)
        selector = self._pafs.FileSelector(root, allow_not_found=True, recursive=True)
        names = [
            info.path[len(root) :].lstrip("/")
            for info in self.fs.get_file_info(selector)
            if info.type == self._pafs.FileType.File and not info.path.endswith(TEMPORARY_SUFFIX)
        ]
        return sorted(names)

    def delete_tree(self, relative: str) -> None:
        """Delete ``relative`` and everything under it (nothing when it is not there)."""
        path = self._path(relative)
        if self.fs.get_file_info(path).type == self._pafs.FileType.NotFound:
            return
        self.fs.delete_dir(path)

    def _delete_file(self, path: str) -> None:
        try:
            self.fs.delete_file(path)
        except (FileNotFoundError, OSError):
            pass


def open_exchange(location: str, shared: SharedLocation | None = None) -> Exchange:
    """The exchange at ``location``; under the project's shared object store, with that store's
    endpoint and credentials (``storage.object_store`` or the AWS_* variables), as every worker
    resolves them from the same settings."""
    if shared is not None and shared.is_s3 and location.startswith(shared.url):
        relative = location[len(shared.url) :].strip("/")
        return Exchange(location, shared.filesystem(), shared.path(*([relative] if relative else [])))
    return Exchange(location)
