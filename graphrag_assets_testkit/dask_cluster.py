"""A real dask.distributed cluster on loopback for the tests and benchmarks of the dask engine.

One ``dask scheduler`` and N ``dask worker`` processes (one process, one thread each: Dagster's
steps are not thread-safe), all started with this environment's Python, so the workers import the
package and the testkit like the test process does. Each process gets its own session (process
group), so stopping it by its PID also stops the worker process its nanny started; the nanny is
kept because it is how a real deployment restarts a worker that dies mid-task.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
START_SECONDS = 60.0
STOP_SECONDS = 10.0


@dataclass
class DaskCluster:
    """Handle on the running scheduler and workers; ``address`` is what ``workers.dask_scheduler`` takes."""

    scheduler: subprocess.Popen
    workers: list[subprocess.Popen]
    address: str
    folder: Path
    logs: list[Path] = field(default_factory=list)

    def worker_pids(self) -> set[int]:
        """PIDs of the processes that run tasks (the nannies' children), as the scheduler reports them."""
        from distributed import Client

        with Client(self.address, timeout=30) as client:
            return set(client.run(os.getpid).values())

    def log_text(self) -> str:
        """Every process's output, for an assertion message when a run on the cluster fails."""
        return "\n".join(f"== {log.name}\n{log.read_text(errors='replace')[-4000:]}" for log in self.logs)

    def stop(self) -> None:
        for process in [*self.workers, self.scheduler]:
            _stop_group(process)
        shutil.rmtree(self.folder, ignore_errors=True)


def _stop_group(process: subprocess.Popen) -> None:
    """SIGTERM to the process's group (it leads its own session), then SIGKILL if it lingers."""
    if process.poll() is not None:
        return
    for sig, wait in ((signal.SIGTERM, STOP_SECONDS), (signal.SIGKILL, STOP_SECONDS)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    # the OpenAI endpoint comes from each project's settings, never from the developer's shell
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "GRAPHRAG_ROOT"):
        env.pop(name, None)
    return env


def _spawn(arguments: list[str], log: Path) -> subprocess.Popen:
    with log.open("wb") as handle:
        return subprocess.Popen(
            [sys.executable, "-m", "dask", *arguments],
            cwd=REPO,
            env=_environment(),
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def _wait_for_address(scheduler_file: Path, scheduler: subprocess.Popen, log: Path) -> str:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if scheduler.poll() is not None:
            raise RuntimeError(f"the dask scheduler exited: {log.read_text(errors='replace')[-2000:]}")
        try:
            return json.loads(scheduler_file.read_text())["address"]
        except (FileNotFoundError, ValueError, KeyError):
            time.sleep(0.1)
    raise RuntimeError("the dask scheduler did not write its address in time")


def start_dask_cluster(workers: int = 2) -> DaskCluster:
    """A scheduler on a free loopback port and ``workers`` workers connected to it."""
    from distributed import Client

    folder = Path(tempfile.mkdtemp(prefix="graphrag_dask_"))
    scheduler_file = folder / "scheduler.json"
    scheduler_log = folder / "scheduler.log"
    scheduler = _spawn(
        ["scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard", "--scheduler-file", str(scheduler_file)],
        scheduler_log,
    )
    cluster = DaskCluster(scheduler, [], "", folder, [scheduler_log])
    try:
        cluster.address = _wait_for_address(scheduler_file, scheduler, scheduler_log)
        for index in range(workers):
            log = folder / f"worker-{index}.log"
            cluster.logs.append(log)
            cluster.workers.append(
                _spawn(
                    [
                        "worker",
                        cluster.address,
                        *("--name", f"worker-{index}", "--nworkers", "1", "--nthreads", "1"),
                        *("--host", "127.0.0.1", "--no-dashboard", "--memory-limit", "0"),
                        *("--local-directory", str(folder / f"worker-{index}")),
                    ],
                    log,
                )
            )
        with Client(cluster.address, timeout=30) as client:
            client.wait_for_workers(workers, timeout=START_SECONDS)
    except BaseException:
        cluster.stop()
        raise
    return cluster


@pytest.fixture(scope="session")
def dask_cluster() -> Iterator[DaskCluster]:
    """A scheduler and two single-threaded workers for the whole test session, stopped by PID."""
    cluster = start_dask_cluster(workers=2)
    try:
        yield cluster
    finally:
        cluster.stop()
