"""Progress and warnings of steps that run in other processes, shown by the process that started the run.

:mod:`graphrag_assets.core.progress` hands a step's progress to a listener the CLI installs in its
own process. A step in a process of its own (the corpus job on a big corpus) has no such listener:
:func:`forward_progress` installs one there that sends each report as a datagram to a Unix socket,
and :func:`progress_relay`, in the process that started the run, receives them and reports them to
its own listener, so the lines and bars look as they do when the step runs in the CLI's process.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from graphrag_assets.core import progress

POLL_SECONDS = 0.1  # how often the relay looks whether the run ended (it drains what was sent first)
SEND_INTERVAL_SECONDS = 0.2  # a stage's reports are sent at most this often (its first and last always)
MAX_DATAGRAM = 60_000


@contextlib.contextmanager
def progress_relay() -> Iterator[str]:
    """Report here what step processes send to the yielded socket address, until the block ends."""
    folder = Path(tempfile.mkdtemp(prefix="graphrag-progress-"))
    address = str(folder / "socket")
    receiver = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    receiver.bind(address)
    receiver.settimeout(POLL_SECONDS)
    ended = threading.Event()
    thread = threading.Thread(target=_relay, args=(receiver, ended), name="progress-relay", daemon=True)
    thread.start()
    try:
        yield address
    finally:
        ended.set()
        thread.join()
        receiver.close()
        shutil.rmtree(folder, ignore_errors=True)


def _relay(receiver: socket.socket, ended: threading.Event) -> None:
    while True:
        try:
            message = json.loads(receiver.recv(MAX_DATAGRAM))
        except TimeoutError:
            if ended.is_set():
                return  # nothing was left to read
            continue
        except (OSError, ValueError):
            continue  # a datagram cut short: one report less
        if message[0] == "progress":
            progress.report(message[1], message[2], message[3])
        else:
            progress.warn(message[1])


class _Sender:
    """The listener of a step process: its reports as datagrams to the relay, a stage's at most
    every :data:`SEND_INTERVAL_SECONDS` (the CLI shows a few lines per stage, not every unit)."""

    def __init__(self, address: str) -> None:
        self._address = address
        self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._sent: dict[str, tuple[float, int]] = {}
        self._lock = threading.Lock()

    def progress(self, stage: str, done: int, total: int) -> None:
        now = time.monotonic()
        with self._lock:
            last = self._sent.get(stage)
            if last is not None and 0 < done < total and done >= last[1] and now - last[0] < SEND_INTERVAL_SECONDS:
                return
            self._sent[stage] = (now, done)
            self._send(["progress", stage, done, total])

    def warning(self, message: str) -> None:
        with self._lock:
            self._send(["warning", message[: MAX_DATAGRAM // 4]])

    def _send(self, message: list[object]) -> None:
        with contextlib.suppress(OSError):  # the run's process is gone (Ctrl-C): the step goes on without it
            self._socket.sendto(json.dumps(message, ensure_ascii=False).encode(), self._address)


def forward_progress(address: str) -> None:
    """In a step process: send this process's progress and warnings to the relay at ``address``."""
    sender = _Sender(address)
    progress.set_listener(sender.progress)
    progress.set_warning_listener(sender.warning)
