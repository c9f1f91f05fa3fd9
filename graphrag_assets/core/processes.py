"""Which process did something, and whether it is still alive.

A run or a lock records the host, the process id and the process's start time (from
``/proc/<pid>/stat``, in clock ticks since boot): a pid alone can be reused by an unrelated
process after a crash, the start time tells them apart.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from pathlib import Path


def _start_ticks(pid: int) -> int | None:
    """The process's start time in clock ticks since boot, None when there is no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: fields start after the last ")".
    fields = stat.rsplit(")", 1)[1].split()
    return int(fields[19])


def seconds_since_start() -> float:
    """How long this process has been running (wall clock), from the kernel's accounting.

    Timings a command reports should include its own start-up (importing libraries is part of
    what the user waits for), which no timer started in our code can see.
    """
    ticks = _start_ticks(os.getpid())
    uptime = float(Path("/proc/uptime").read_text(encoding="ascii").split()[0])
    return max(0.0, uptime - ticks / os.sysconf("SC_CLK_TCK")) if ticks is not None else 0.0


@dataclass(frozen=True)
class ProcessId:
    host: str
    pid: int
    start: int | None

    @classmethod
    def current(cls) -> ProcessId:
        return cls(socket.gethostname(), os.getpid(), _start_ticks(os.getpid()))

    def as_tag(self) -> str:
        return f"{self.host}:{self.pid}:{self.start if self.start is not None else ''}"

    @classmethod
    def from_tag(cls, tag: str) -> ProcessId | None:
        host, _, rest = tag.rpartition(":")
        host, _, pid = host.rpartition(":")
        if not host or not pid.isdigit():
            return None
        return cls(host, int(pid), int(rest) if rest.isdigit() else None)

    def is_dead(self) -> bool:
        """True only when this process is certainly gone (on another host we cannot tell)."""
        if self.host != socket.gethostname():
            return False
        start = _start_ticks(self.pid)
        return start is None or (self.start is not None and start != self.start)
