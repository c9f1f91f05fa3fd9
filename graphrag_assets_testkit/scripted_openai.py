"""The scripted OpenAI-compatible server (:mod:`.openai_server`) in its own process, and the handle
that drives it through its control endpoints (rules, faults, latency, recorded calls).

Every process is stopped by its PID: SIGTERM, wait, then SIGKILL if it is still alive.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from graphrag_assets_testkit.server_profiles import ProfileSpec

REPO_ROOT = Path(__file__).resolve().parents[1]
START_TIMEOUT_SECONDS = 10.0


class ScriptedOpenAIServer:
    """Handle on a running scripted server process, driven through its control endpoints."""

    def __init__(self, process: subprocess.Popen[bytes], host: str, port: int, log_path: Path) -> None:
        self.process = process
        self.pid = process.pid
        self.host = host
        self.port = port
        self.root_url = f"http://{host}:{port}"
        self.base_url = f"{self.root_url}/v1"
        self.log_path = log_path

    @classmethod
    def start(
        cls,
        *,
        responder: str | None = None,
        latency_ms: float = 0.0,
        embedding_dim: int = 64,
        host: str = "127.0.0.1",
        timeout: float = START_TIMEOUT_SECONDS,
        profile: ProfileSpec | None = None,
    ) -> ScriptedOpenAIServer:
        workdir = Path(tempfile.mkdtemp(prefix="scripted-openai-"))
        port_file = workdir / "port"
        log_path = workdir / "server.log"
        cmd = [
            sys.executable,
            "-m",
            "graphrag_assets_testkit.openai_server",
            "--host",
            host,
            "--port",
            "0",
            "--port-file",
            str(port_file),
            "--latency-ms",
            str(latency_ms),
            "--embedding-dim",
            str(embedding_dim),
        ]
        if responder:
            cmd += ["--responder", responder]
        if profile is not None:
            cmd += profile.arguments()
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p)
        with open(log_path, "wb") as log:
            process = subprocess.Popen(cmd, cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while True:
            if port_file.exists():
                text = port_file.read_text(encoding="utf-8").strip()
                if text:
                    return cls(process, host, int(text), log_path)
            if process.poll() is not None:
                raise RuntimeError(
                    f"scripted OpenAI server exited with code {process.returncode} before listening:\n"
                    + log_path.read_text(encoding="utf-8", errors="replace")
                )
            if time.monotonic() > deadline:
                _stop_pid(process)
                raise RuntimeError(
                    f"scripted OpenAI server did not start within {timeout:.0f} s:\n"
                    + log_path.read_text(encoding="utf-8", errors="replace")
                )
            time.sleep(0.02)

    # -- control ---------------------------------------------------------------------------------
    def _request(self, method: str, path: str, payload: Any = None) -> Any:
        data = None if payload is None else json.dumps(payload).encode("utf-8")
        request = urllib.request.Request(
            self.root_url + path, data=data, method=method, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read() or b"null")

    def reset(self, settle_seconds: float = 5.0) -> None:
        """Forget rules, faults, recorded calls and counters; latency back to 0.

        Waits (up to ``settle_seconds``) for requests still being served, e.g. a delayed answer
        its client gave up on, so they cannot leak into the next test's figures.
        """
        self.set_latency(0)
        deadline = time.monotonic() + settle_seconds
        while self.stats()["in_flight"] and time.monotonic() < deadline:
            time.sleep(0.02)
        self._request("POST", "/_control/reset", {})

    def add_rule(self, pattern: str, reply: str, times: int | None = None) -> None:
        """Answer chat requests whose message text matches ``pattern`` (regex) with ``reply``."""
        self._request("POST", "/_control/rule", {"pattern": pattern, "reply": reply, "times": times})

    def add_fault(
        self,
        kind: str,
        *,
        status: int | None = None,
        message: str | None = None,
        body: Any = None,
        retry_after: float | str | None = None,
        retry_after_ms: float | str | None = None,
        seconds: float | None = None,
        times: int = 1,
        match: str | None = None,
        endpoint: str | None = None,
        keep_chars: int | None = None,
        finish_reason: str | None = None,
    ) -> None:
        """Queue a fault: ``status`` (HTTP error), ``delay`` (``seconds`` before answering),
        ``malformed`` (invalid JSON, status 200), ``truncate`` (the answer's first ``keep_chars``
        characters with ``finish_reason: length``, or ``finish_reason`` if given) or ``drop`` (connection closed without a response)."""
        spec = {
            "kind": kind,
            "status": status,
            "message": message,
            "body": body,
            "retry_after": retry_after,
            "retry_after_ms": retry_after_ms,
            "seconds": seconds,
            "times": times,
            "match": match,
            "endpoint": endpoint,
            "keep_chars": keep_chars,
            "finish_reason": finish_reason,
        }
        self._request("POST", "/_control/fault", {k: v for k, v in spec.items() if v is not None})

    def set_latency(self, ms: float) -> None:
        self._request("POST", "/_control/latency", {"ms": ms})

    def set_chunk_delay(self, ms: float) -> None:
        """Wait ``ms`` before each streamed piece of an answer (reset() sets it back to 0)."""
        self._request("POST", "/_control/chunk_delay", {"ms": ms})

    def calls(self, endpoint: str | None = None) -> list[dict[str, Any]]:
        """Recorded model requests (oldest first): endpoint, time, body, headers, outcome."""
        query = f"?endpoint={endpoint}" if endpoint else ""
        return self._request("GET", f"/_control/calls{query}")

    def stats(self) -> dict[str, Any]:
        """``counts`` per endpoint, ``in_flight``, ``max_in_flight`` and pending rules / faults."""
        return self._request("GET", "/_control/stats")

    def stop(self) -> None:
        """Stop the process (by PID) and remove its port file and log."""
        _stop_pid(self.process)
        shutil.rmtree(self.log_path.parent, ignore_errors=True)


def _stop_pid(process: subprocess.Popen[bytes]) -> None:
    """Terminate exactly this process: SIGTERM, wait, then SIGKILL."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=5)
