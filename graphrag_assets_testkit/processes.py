"""Finding a command's child processes by PID through /proc (Linux), to stop one of them on purpose."""

from __future__ import annotations

from pathlib import Path


def child_pids(parent: int, command_contains: str = "") -> list[int]:
    """The live direct children of ``parent`` whose command line contains ``command_contains``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # gone meanwhile
            continue
        fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (name) ": state, ppid, ...
        if int(fields[1]) == parent and fields[0] != "Z" and command_contains in command:
            found.append(int(entry.name))
    return sorted(found)
