"""Stopping what a long-running command started, whichever way the command is stopped.

``dev`` runs ``dagster dev``, which starts a webserver, a daemon and code servers of its own. They
run in a process group of their own (``start_new_session``), so the command can stop all of them
at once: on Ctrl-C, and on SIGTERM (``kill PID``, a service manager, a container stop), which by
default would end only our process and leave the others holding the port.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator

GRACE_SECONDS = 30.0  # for dagster dev to stop its webserver, daemon and code servers itself
POLL_SECONDS = 0.1


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Inside the block, SIGTERM stops the command as Ctrl-C does (``KeyboardInterrupt``)."""

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def stop_group(process: subprocess.Popen, grace: float = GRACE_SECONDS) -> None:
    """Ask ``process``'s group to stop (SIGINT, as Ctrl-C would), wait until every member has
    exited, and kill what is left after ``grace`` seconds. A second Ctrl-C or SIGTERM meanwhile
    is ignored: stopping half-way would leave processes behind."""
    previous = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        _signal_group(process.pid, signal.SIGINT)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            process.poll()  # reaps the leader, so an exited leader does not keep the group alive
            if not _group_alive(process.pid):
                return
            time.sleep(POLL_SECONDS)
        _signal_group(process.pid, signal.SIGKILL)
        process.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _signal_group(group: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, sig)


def _group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    return True
