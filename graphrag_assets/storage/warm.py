"""A warm DuckDB instance per database file, so short-lived connections cost microseconds.

Opening a DuckDB file starts a database instance: ~11-16 ms (more under load) however small the
file, and again for every short-lived connection once the previous one has closed. While another
connection to the same file is open in the process, ``duckdb.connect`` reuses that instance and
costs ~0.02 ms. So while a process keeps using a file, an *anchor* connection holds its instance
open and every connection handed out is a cheap one on it.

Connections stay short-lived on purpose (see :mod:`graphrag_assets.storage.database`): other
processes (the CLI's ``sql``/``status``/``query``, ``serve``, the Dagster UI's code) read the file
between an indexing run's writes. The anchor therefore lets go of the file:

- once nothing in the process has used it for ``IDLE_SECONDS`` (0.3 s: a process waiting for the
  file is served by the rule below, so this only ends a pause in the holder's own work; at 75 ms,
  the gaps of a cold index of *A Christmas Carol* closed and reopened its anchor 13 times, at
  0.3 s 5-6 times, CPU 4.36 -> 4.04 s, medians of four A/B pairs at load ~1);
- when another process waits for the file: at the first moment no connection is in use after the
  anchor has been held ``HOLD_SECONDS``, the process closes it and *rests*: for ``REST_SECONDS`` it
  opens no connection to the file (a request waits), so the waiting process (it retries more often
  than that) gets in. Without that rest an indexing run that uses the file every few milliseconds
  would leave readers almost no gap;
- when :func:`release` is called (the end of a Dagster run, before the file is replaced) and at
  process exit, so the file is checkpointed and closed.

A process waits for the file in :func:`graphrag_assets.storage.database.connect`, which retries
while another process holds the file's lock; on every retry it touches a *wait signal* beside the
file (``<database>.wait``, see :func:`signal_waiting`) and removes it once it got in or gave up.
The holder looks at the signal once per hold: a signal changed since the hold began means someone
waits, so it closes the anchor, removes the signal and rests; otherwise it keeps the anchor and
begins a new hold. Resting whenever a hold ended gave a cold index of *A Christmas Carol*, where
no one waits, 2-3 rests: 7-8 anchor opens instead of 5-6 (each a close with its checkpoint and an
open), and 0.09-0.16 s of its threads asleep in rests (py-spy, three runs at load 3.4-4.4). Where
the signal cannot be written (a read-only folder) the waiter still retries, and gets in when the
holder goes idle or lets go at the end of its run or command; so does a program that opens the
file without this module (the DuckDB CLI, say).

Within one process DuckDB refuses a second configuration of an open file (read-only beside
read-write, or other settings). The rules here:

- a read-only request while a read-write anchor is open gets a connection on that instance (it
  only reads; a read-only instance beside it cannot exist);
- a read-write request while a read-only anchor is open closes the anchor when it is idle, and
  otherwise waits, like a lock, for the other threads to finish with it;
- a request with ``config`` (e.g. no file access for the ``sql`` command) closes an idle anchor
  first and opens a plain connection with its settings;
- a request that can only be served once this same thread has closed a connection it holds is a
  programming error and raises :class:`ConnectionConflict` at once instead of waiting for itself.
"""

from __future__ import annotations

import atexit
import dataclasses
import os
import threading
import time
from pathlib import Path

import duckdb

IDLE_SECONDS = 0.3
HOLD_SECONDS = 1.0
REST_SECONDS = 0.15
WAIT_SIGNAL_SUFFIX = ".wait"


class ConnectionConflict(RuntimeError):
    """This thread asked for a connection that conflicts with one it still holds on the same file."""


class InstanceBusy(Exception):
    """Another thread of this process holds the file with a configuration this request cannot share."""


@dataclasses.dataclass
class WarmStats:
    """Counts since the process started: real instance opens (anchors, plain), cheap connections,
    and rests given to a process waiting for the file."""

    anchor_opens: int = 0
    plain_opens: int = 0
    warm_connections: int = 0
    rests: int = 0


Stamp = tuple[int, int] | None  # the wait signal's inode and modification time; None: no signal


@dataclasses.dataclass
class _Anchor:
    conn: duckdb.DuckDBPyConnection
    read_only: bool
    hold_began: float
    signal_then: Stamp  # the wait signal when the hold began
    last_used: float
    active: int = 0
    closing: bool = False


@dataclasses.dataclass
class Lease:
    """One connection handed out, and the anchor whose use it counts in (None: a plain one)."""

    conn: duckdb.DuckDBPyConnection
    key: str
    anchor: _Anchor | None
    holder: dict[str, int]  # the acquiring thread's count of connections per file


class WarmInstances:
    """The process's anchors, by resolved database path; every method is thread-safe."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.wake = threading.Condition(self.lock)
        self.anchors: dict[str, _Anchor] = {}
        self.rest_until: dict[str, float] = {}
        self.held = threading.local()  # key -> connections this thread holds
        self.closer: threading.Thread | None = None
        self.exiting = False
        self.stats = WarmStats()

    def acquire(self, key: str, *, read_only: bool, config: dict[str, object] | None) -> Lease:
        """A connection to ``key``; raises DuckDB's lock errors, :class:`InstanceBusy` or :class:`ConnectionConflict`.

        While the file rests (see the module docstring) this waits for the rest to end.
        """
        while (rest := self._rest_left(key)) > 0:
            time.sleep(rest)
        with self.lock:
            anchor = self.anchors.get(key)
            if anchor is not None and (config or (anchor.read_only and not read_only)):
                self._make_way(key, anchor)
                anchor = None
            now = time.monotonic()
            if config or (anchor is None and self.exiting):
                self.stats.plain_opens += 1
                return self._hold(duckdb.connect(key, read_only=read_only, config=config or {}), key, None)
            if anchor is None:
                anchor = _Anchor(duckdb.connect(key, read_only=read_only), read_only, now, _signal_stamp(key), now)
                self.anchors[key] = anchor
                self.stats.anchor_opens += 1
                self._start_closer()
            conn = duckdb.connect(key, read_only=anchor.read_only)
            anchor.active += 1
            anchor.last_used = now
            self.stats.warm_connections += 1
            return self._hold(conn, key, anchor)

    def _rest_left(self, key: str) -> float:
        with self.lock:
            if self.held.__dict__.get(key, 0):
                return 0.0  # a thread that holds a connection must not wait for the others' rest
            return self.rest_until.get(key, 0.0) - time.monotonic()

    def give_back(self, lease: Lease) -> None:
        """Close the leased connection; the anchor closes here if its hold time is up."""
        lease.conn.close()
        with self.lock:
            lease.holder[lease.key] -= 1
            anchor = lease.anchor
            if anchor is None or self.anchors.get(lease.key) is not anchor:
                return  # a plain connection, or its anchor was closed (at exit) while it was in use
            anchor.active -= 1
            now = time.monotonic()
            anchor.last_used = now
            if anchor.active == 0:
                if anchor.closing:
                    self._close(lease.key)
                elif now - anchor.hold_began >= HOLD_SECONDS:
                    self._end_hold(lease.key, anchor, now)
                else:
                    self.wake.notify()

    def release(self, key: str | None = None) -> None:
        """Close the anchor of ``key`` (every anchor when None) now, or when its last connection closes."""
        with self.lock:
            for name in [key] if key is not None else list(self.anchors):
                anchor = self.anchors.get(name)
                if anchor is None:
                    continue
                if anchor.active:
                    anchor.closing = True
                else:
                    self._close(name)

    def close_all(self) -> None:
        """At process exit: close every anchor (connections still in use keep their instance)."""
        with self.lock:
            self.exiting = True  # a write from a later exit handler opens and closes its own
            for name in list(self.anchors):
                self._close(name)

    # -- under self.lock --------------------------------------------------------------------------
    def _end_hold(self, key: str, anchor: _Anchor, now: float) -> None:
        """Rest if another process signalled that it waits since the hold began; else hold again."""
        stamp = _signal_stamp(key)
        if stamp is not None and stamp != anchor.signal_then:
            self._close(key)
            self.rest_until[key] = now + REST_SECONDS
            self.stats.rests += 1
            _remove_signal(key)
            return
        anchor.hold_began, anchor.signal_then = now, stamp
        self.wake.notify()

    def _make_way(self, key: str, anchor: _Anchor) -> None:
        if anchor.active == 0:
            self._close(key)
            return
        if self.held.__dict__.get(key, 0):
            raise ConnectionConflict(
                f"this thread still holds a connection to {key} that DuckDB cannot share with the new one; "
                f"close it before opening the other."
            )
        raise InstanceBusy(key)

    def _hold(self, conn: duckdb.DuckDBPyConnection, key: str, anchor: _Anchor | None) -> Lease:
        holder = self.held.__dict__
        holder[key] = holder.get(key, 0) + 1
        return Lease(conn, key, anchor, holder)

    def _close(self, key: str) -> None:
        self.anchors.pop(key).conn.close()

    def _start_closer(self) -> None:
        if self.closer is None:
            self.closer = threading.Thread(target=self._close_idle, name="duckdb-warm-closer", daemon=True)
            self.closer.start()

    def _close_idle(self) -> None:
        """Closer thread: close each anchor nothing has used for ``IDLE_SECONDS``."""
        with self.lock:
            while True:
                now = time.monotonic()
                next_due: float | None = None
                for key, anchor in list(self.anchors.items()):
                    if anchor.active:
                        continue
                    due = anchor.last_used + IDLE_SECONDS
                    if now >= due:
                        self._close(key)
                    else:
                        next_due = due if next_due is None else min(next_due, due)
                self.wake.wait(None if next_due is None else next_due - now)


def _signal_path(key: str) -> str:
    return key + WAIT_SIGNAL_SUFFIX


def _signal_stamp(key: str) -> Stamp:
    try:
        stat = os.stat(_signal_path(key))
    except OSError:
        return None
    return stat.st_ino, stat.st_mtime_ns


def _remove_signal(key: str) -> None:
    try:
        os.unlink(_signal_path(key))
    except OSError:
        pass  # gone already (another waiter got in), or the folder is read-only


def signal_waiting(key: str) -> None:
    """Tell the process holding the file ``key`` (resolved) that this one waits for it, by touching
    the wait signal; where it cannot be written the holder lets go only when idle or done."""
    try:
        Path(_signal_path(key)).touch()
    except OSError:
        pass


def stop_waiting(key: str) -> None:
    """Remove the wait signal this process touched, once it got the file or gave up waiting (another
    process still waiting touches it again at its next retry)."""
    _remove_signal(key)


_WARM = WarmInstances()


def warm_instances() -> WarmInstances:
    return _WARM


def release(path: str | None = None) -> None:
    """Let go of the warm instance of the resolved ``path`` (every one when None)."""
    _WARM.release(path)


def _forget_after_fork() -> None:
    """In a forked child: start with no anchors, and never close (checkpoint) the parent's."""
    global _WARM
    _INHERITED.append(_WARM)
    _WARM = WarmInstances()


_INHERITED: list[WarmInstances] = []
os.register_at_fork(after_in_child=_forget_after_fork)
atexit.register(lambda: _WARM.close_all())
