"""A real PostgreSQL server for the tests of the Postgres-backed Dagster instance (and bench_scale).

Debian's ``postgresql`` package (``.ci/run`` installs it when missing) provides the binaries under
``/usr/lib/postgresql/<version>/bin``. PostgreSQL refuses to run as root, so when the tests run as
root the cluster is created and started as ``nobody``; it listens on a free loopback port and on a
socket in its own folder, trusts local connections (nothing else can reach it) and is stopped by
its PID at the end of the session.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

START_SECONDS = 30


def postgres_bin() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"), key=lambda p: int(Path(p).parts[-3]))
    if not found:
        pytest.fail("PostgreSQL is not installed: apt-get install postgresql (.ci/run installs it when missing).")
    return Path(found[-1]).parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class PostgresServer:
    process: subprocess.Popen
    port: int
    folder: Path

    def url(self, database: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        """A new empty database; returns its URL."""
        import psycopg2

        conn = psycopg2.connect(self.url("postgres"))
        try:
            conn.autocommit = True  # CREATE DATABASE cannot run in a transaction
            with conn.cursor() as cursor:
                cursor.execute(f'create database "{name}"')
        finally:
            conn.close()
        return self.url(name)

    def query(self, database: str, sql: str) -> list[tuple]:
        import psycopg2

        conn = psycopg2.connect(self.url(database))
        try:
            with conn.cursor() as cursor:
                cursor.execute(sql)
                return cursor.fetchall()
        finally:
            conn.close()

    def stop(self) -> None:
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGTERM)  # "smart" shutdown: waits for clients, then exits
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.kill(self.process.pid, signal.SIGQUIT)
                self.process.wait(timeout=10)
        shutil.rmtree(self.folder, ignore_errors=True)


def _as_user() -> dict:
    """Popen arguments that drop root for PostgreSQL (it refuses to run as root)."""
    if os.geteuid() != 0:
        return {}
    nobody = pwd.getpwnam("nobody")
    return {"user": nobody.pw_uid, "group": nobody.pw_gid, "extra_groups": []}


def start_postgres() -> PostgresServer:
    binaries = postgres_bin()
    folder = Path(tempfile.mkdtemp(prefix="graphrag_pg_"))  # under /tmp: pytest's own folders are root-only
    data, log = folder / "data", folder / "postgres.log"
    user = _as_user()
    if user:
        os.chown(folder, user["user"], user["group"])
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(folder), "LC_ALL": "C"}
    subprocess.run(
        [str(binaries / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-locale"],
        check=True,
        capture_output=True,
        env=env,
        cwd=folder,
        **user,
    )
    port = free_port()
    with log.open("w") as handle:
        process = subprocess.Popen(
            [
                str(binaries / "postgres"),
                "-D",
                str(data),
                "-p",
                str(port),
                "-h",
                "127.0.0.1",
                "-k",
                str(folder),
                "-c",
                "fsync=off",
                "-c",
                "max_connections=200",
            ],
            stdout=handle,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=folder,
            **user,
        )
    server = PostgresServer(process, port, folder)
    deadline = time.monotonic() + START_SECONDS
    while True:
        try:
            server.query("postgres", "select 1")
            return server
        except Exception:  # noqa: BLE001 - not accepting connections yet
            if process.poll() is not None or time.monotonic() > deadline:
                text = log.read_text() if log.exists() else ""
                server.stop()
                pytest.fail(f"PostgreSQL did not start: {text[-2000:]}")
            time.sleep(0.2)
