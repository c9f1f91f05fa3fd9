"""`kill PID` of `graphrag-assets dev` stops everything it started and frees the port."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from graphrag_assets_testkit.projects import make_project

STARTUP_SECONDS = 120
STOP_SECONDS = 60


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def descendants(pid: int) -> set[int]:
    """Every process below ``pid``, from /proc (children of children too)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parents[int(entry.name)] = int(fields[1])
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie has exited; only its parent's wait is missing


def port_free(port: int) -> bool:
    """Nothing listens on ``port`` and a new server can (as the next `dev` would: with SO_REUSEADDR,
    since the connections the test made linger in TIME_WAIT)."""
    with socket.socket() as probe:
        if probe.connect_ex(("127.0.0.1", port)) == 0:
            return False
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
            sock.listen()
        except OSError:
            return False
    return True


@pytest.mark.slow
def test_sigterm_stops_the_webserver_daemon_and_code_servers(tmp_path: Path) -> None:
    root = make_project(tmp_path / "project", with_sample=False)
    port = free_port()
    log = tmp_path / "dev.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "graphrag_assets.cli.main", "dev", "--root", str(root), "--port", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    started: set[int] = set()
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/server_info", timeout=2) as response:
                    assert response.status == 200
                    break
            except OSError:
                assert process.poll() is None, log.read_text(errors="replace")
                assert time.monotonic() < deadline, "the UI did not answer in time:\n" + log.read_text(errors="replace")
                time.sleep(0.5)
        started = descendants(process.pid)
        assert len(started) >= 3, started  # dagster dev, its webserver and its daemon at least
        process.send_signal(signal.SIGTERM)  # what `kill PID` sends: to this process only
        code = process.wait(timeout=STOP_SECONDS)
        left = {pid for pid in started if running(pid)}
    finally:
        for pid in started:  # whatever the outcome, nothing of this test keeps running
            if running(pid):
                os.kill(pid, signal.SIGKILL)
        if process.poll() is None:
            process.kill()
            process.wait()
    text = log.read_text(errors="replace")
    assert code == 0, text
    assert not left, f"still running after dev stopped: {sorted(left)}"
    assert port_free(port)
    assert text.rstrip().splitlines()[-1] == "stopped" and "Traceback" not in text
