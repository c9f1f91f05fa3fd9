"""An S3-compatible server on loopback for the tests and benchmarks of shared storage: moto's.

``moto[server]`` (a test dependency in pyproject.toml) serves the S3 API over HTTP; it is started
as its own process on 127.0.0.1 and a free port, and stopped by its PID. By default it accepts any
credentials; ``strict_auth=True`` starts one that checks them (moto's IAM, which knows no keys),
to test what a user with wrong credentials is told.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

START_SECONDS = 30
ACCESS_KEY = "testing-key"
SECRET_KEY = "testing-secret"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class S3Server:
    process: subprocess.Popen
    port: int
    log: Path

    @property
    def endpoint_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        """The AWS_* variables a process needs to use this server."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint_url,
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_REGION": "us-east-1",
        }

    def create_bucket(self, name: str) -> str:
        """A new bucket (moto accepts unsigned requests); returns its s3:// URL."""
        request = urllib.request.Request(f"{self.endpoint_url}/{name}", method="PUT")
        with urllib.request.urlopen(request, timeout=10):
            pass
        return f"s3://{name}"

    def stop(self) -> None:
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.kill(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
        self.log.unlink(missing_ok=True)


def start_s3_server(strict_auth: bool = False) -> S3Server:
    """moto's server on a free loopback port, answering once this returns."""
    port = free_port()
    log = Path(tempfile.mkstemp(prefix="graphrag_moto_", suffix=".log")[1])
    env = {**os.environ, **({"INITIAL_NO_AUTH_ACTION_COUNT": "0"} if strict_auth else {})}
    with log.open("w") as handle:
        process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=handle,
            stderr=subprocess.STDOUT,
            env=env,
        )
    server = S3Server(process, port, log)
    deadline = time.monotonic() + START_SECONDS
    while True:
        try:
            with urllib.request.urlopen(f"{server.endpoint_url}/moto-api/", timeout=2):
                return server
        except urllib.error.HTTPError:
            return server  # it answers
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                text = log.read_text() if log.exists() else ""
                server.stop()
                pytest.fail(f"the moto S3 server did not start: {text[-2000:]}")
            time.sleep(0.2)


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """One moto server for the session (import the fixture into a test module to use it)."""
    server = start_s3_server()
    try:
        yield server
    finally:
        server.stop()
