"""`graphrag-assets dev` serves the Dagster UI for the project, quietly."""

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

STARTUP_SECONDS = 90


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.slow
def test_dev_serves_the_ui_without_the_superseded_warning(tmp_path: Path) -> None:
    root = make_project(tmp_path / "project")
    port = free_port()
    log = tmp_path / "dev.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "graphrag_assets.cli.main", "dev", "--root", str(root), "--port", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
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
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    text = log.read_text(errors="replace")
    assert "superseded" not in text and "SupersessionWarning" not in text
