"""``graphrag-assets serve`` as a real process for tests: started on a free loopback port, ready
when it prints its address, stopped by its PID (SIGTERM, wait, then SIGKILL)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from graphrag_assets_tests.graph_fixtures import free_port, stop_process

START_TIMEOUT_SECONDS = 60.0
READY_TEXT = "serving "


class ServeProcess:
    def __init__(self, process: subprocess.Popen, port: int, log: Path) -> None:
        self.process, self.pid, self.port, self.log = process, process.pid, port, log
        self.url = f"http://127.0.0.1:{port}"

    @classmethod
    def start(cls, *args: str, env: dict[str, str] | None = None) -> ServeProcess:
        port = free_port()
        log = Path(tempfile.mkdtemp(prefix="serve-")) / "serve.log"
        cmd = [sys.executable, "-m", "graphrag_assets.cli.main", "serve", "--port", str(port), *args]
        with open(log, "wb") as out:
            process = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})})
        server = cls(process, port, log)
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while READY_TEXT not in server.output():
            if process.poll() is not None or time.monotonic() > deadline:
                server.stop()
                raise RuntimeError(f"graphrag-assets serve did not start:\n{server.output()}")
            time.sleep(0.05)
        return server

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace") if self.log.exists() else ""

    def stop(self) -> None:
        stop_process(self.process)


@contextlib.contextmanager
def serving_two_projects(standard_index: Path, nlp_index: Path, folder: Path, key: str) -> Iterator[ServeProcess]:
    """``serve`` over the sample indexed with a model ("harbour") and offline ("offline")."""
    (folder / "harbour").symlink_to(standard_index)
    (folder / "offline").symlink_to(nlp_index)
    process = ServeProcess.start("--root", str(folder / "harbour"), "--root", str(folder / "offline"), "--api-key", key)
    try:
        yield process
    finally:
        process.stop()
