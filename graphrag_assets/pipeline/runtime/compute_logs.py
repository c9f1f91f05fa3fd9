"""Dagster's local compute logs, mirrored to the terminal by a thread instead of four processes.

Dagster's ``LocalComputeLogManager`` sends a run's stdout and stderr to files (the UI's raw
logs) and shows them on the terminal too by starting, for each stream, a ``tail -F`` process and
a second Python interpreter that watches it: four processes per run, three runs per cold index.
Counted with the index they raised the peak resident memory of its process tree by ~25 MB
(``bench/msgraphrag_compare.py``: 352.7 MB for the tree, 328.1 MB for the index process alone),
and ``tail`` polls once a second, so output reached the terminal up to a second late.

``MirroredComputeLogManager`` writes the same files in the same places (the UI reads them as
before) and copies what lands in them to the terminal from a thread every 0.1 s. Writers never
wait for the thread: they write to a file, not a pipe.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Generator, Sequence
from contextlib import contextmanager
from typing import IO

from graphrag_assets.pipeline.runtime.dagster_private import (
    IO_TYPE_EXTENSION,
    CapturedLogContext,
    ComputeIOType,
    ConfigurableClassData,
    LocalComputeLogManager,
    ensure_file,
    redirect_to_file,
    touch_file,
)

MIRROR_INTERVAL_SECONDS = 0.1


class MirroredComputeLogManager(LocalComputeLogManager):
    """``LocalComputeLogManager`` whose capture is mirrored to the terminal by a thread."""

    @classmethod
    def from_config_value(cls, inst_data: ConfigurableClassData | None, config_value) -> MirroredComputeLogManager:
        return cls(inst_data=inst_data, **config_value)

    @contextmanager
    def capture_logs(self, log_key: Sequence[str]) -> Generator[CapturedLogContext, None, None]:
        stdout_path = self.get_captured_local_path(log_key, IO_TYPE_EXTENSION[ComputeIOType.STDOUT])
        stderr_path = self.get_captured_local_path(log_key, IO_TYPE_EXTENSION[ComputeIOType.STDERR])
        with _mirrored(sys.stdout, stdout_path), _mirrored(sys.stderr, stderr_path):
            yield CapturedLogContext(log_key)
        touch_file(self.complete_artifact_path(log_key))  # Dagster's mark of a finished capture


@contextmanager
def _mirrored(stream: IO[str], path: str) -> Generator[None, None, None]:
    """Send ``stream`` (its file descriptor: Python and native writes alike) to ``path`` for the
    block, copying what arrives there to where the stream went before."""
    ensure_file(path)
    try:
        terminal = os.dup(stream.fileno())
    except (AttributeError, OSError, ValueError):  # no descriptor (a test runner's capture): Dagster skips it too
        with redirect_to_file(stream, path):
            yield
        return
    mirror = _Mirror(path, terminal)
    mirror.start()
    try:
        with redirect_to_file(stream, path):
            yield
    finally:
        mirror.finish()


class _Mirror(threading.Thread):
    """Copies what is appended to a file after it started to a descriptor, until ``finish``."""

    def __init__(self, path: str, target: int) -> None:
        super().__init__(name="compute-log-mirror", daemon=True)
        self._source = open(path, "rb", buffering=0)  # noqa: SIM115 - closed by finish()
        self._source.seek(0, os.SEEK_END)
        self._target = target
        self._done = threading.Event()

    def run(self) -> None:
        while not self._done.wait(MIRROR_INTERVAL_SECONDS):
            self._copy()

    def finish(self) -> None:
        """Stop, copy what is left and close both ends."""
        self._done.set()
        self.join()
        self._copy()
        self._source.close()
        if self._target >= 0:
            os.close(self._target)

    def _copy(self) -> None:
        while self._target >= 0 and (chunk := self._source.read(1 << 16)):
            try:
                while chunk:
                    chunk = chunk[os.write(self._target, chunk) :]
            except OSError:  # the terminal went away (a closed pipe): keep capturing, stop mirroring
                os.close(self._target)
                self._target = -1
