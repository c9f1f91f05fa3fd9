"""Shared helpers for the end-to-end benchmarks (bench_extraction.py, bench_incremental.py).

- :class:`StandInServer`: the scripted OpenAI-compatible server (graphrag_assets_testkit.openai_server
  with the realistic responder) as a child process, stopped by its PID.
- :func:`measure`: run one CLI command in its own fresh process tree and return its wall time, CPU
  time and peak RSS. ``ru_maxrss`` of RUSAGE_CHILDREN is the maximum over every child a process has
  waited for, so the benchmark process cannot read it per command; instead each command runs under
  a tiny wrapper (this file, ``--exec-measured``) that starts the command, waits for it and reports
  its own RUSAGE_CHILDREN, which then covers that command alone. CPU time includes the command's
  reaped descendants (Dagster starts two ``tail -F`` and two ``watch_orphans.py`` helpers per run
  to capture compute logs); peak RSS is that of the largest single process, the CLI itself.
- project set-up (``graphrag-assets init``), figures from the project's DuckDB file (``llm_usage``,
  table fingerprints) and Dagster instance (step durations), and output (markdown table, JSON).

This module imports only the standard library at import time, so the wrapper starts quickly.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import platform
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
RESULTS_DIR = Path(__file__).resolve().parent / "results"
RESPONDER = "graphrag_assets_testkit.graphrag_responder:respond"
STANDIN_API_KEY = (
    "sk-local-stand-in"  # the stand-in ignores it; the product needs some value to pick the standard method
)
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


# --- machine and output -------------------------------------------------------------------------


def machine_info() -> dict[str, Any]:
    return {
        "date": dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "machine": platform.machine(),
        "system": f"{platform.system()} {platform.release()}",
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
    }


def git_state() -> dict[str, Any]:
    """The commit measured and the files that differed from it (other work may be in progress)."""

    def git(*args: str) -> str:
        try:
            return subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=10).stdout
        except (OSError, subprocess.SubprocessError):
            return ""

    modified = [line[3:] for line in git("status", "--porcelain", "--untracked-files=no").splitlines() if len(line) > 3]
    return {"commit": git("rev-parse", "HEAD").strip(), "modified_tracked_files": modified}


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def markdown_table(headers: list[str], rows: list[list[Any]]) -> str:
    def cell(value: Any) -> str:
        if isinstance(value, float):
            return f"{value:.2f}"
        return str(value)

    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def header_block(
    title: str, command: str, load_start: list[float], load_end: list[float], machine: dict[str, Any]
) -> str:
    return "\n".join(
        [
            f"## {title}",
            "",
            markdown_table(
                ["date", "machine", "CPUs", "python", "load avg at start", "load avg at end"],
                [
                    [
                        machine["date"],
                        f"{machine['machine']} ({machine['system']})",
                        machine["cpus"],
                        machine["python"],
                        " / ".join(f"{x:.2f}" for x in load_start),
                        " / ".join(f"{x:.2f}" for x in load_end),
                    ]
                ],
            ),
            "",
            f"command: `{command}`",
        ]
    )


def results_name(value: str) -> str:
    """argparse type of ``--results``: a file name under bench/results/ or '-' (checked before a long run)."""
    if value != "-" and (Path(value).name != value or value in (".", "..")):
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a file name: results are written under bench/results/; give a name such as scale.json"
        )
    return value


def write_results(name: str, data: dict[str, Any]) -> Path:
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / name
    path.write_text(json.dumps(data, indent=2, default=str) + "\n", encoding="utf-8")
    return path


def invocation() -> str:
    """The command line that started this benchmark, as a user would type it from the repository."""
    script = Path(sys.argv[0]).resolve()
    try:
        shown = script.relative_to(REPO_ROOT)
    except ValueError:
        shown = script
    return " ".join(["python", str(shown), *sys.argv[1:]])


# --- the stand-in model server -----------------------------------------------------------------


class StandInServer:
    """The scripted OpenAI-compatible server as a child process (stop it with :meth:`stop`)."""

    def __init__(self, workdir: Path, latency_ms: float = 0.0, embedding_dim: int = 64) -> None:
        port_file = workdir / "stand_in.port"
        port_file.unlink(missing_ok=True)
        self.log_path = workdir / "stand_in.log"
        self._log = self.log_path.open("w")
        self.command = [
            sys.executable,
            "-m",
            "graphrag_assets_testkit.openai_server",
            "--port",
            "0",
            "--port-file",
            str(port_file),
            "--latency-ms",
            str(latency_ms),
            "--responder",
            RESPONDER,
            "--embedding-dim",
            str(embedding_dim),
        ]
        self.process = subprocess.Popen(self.command, cwd=REPO_ROOT, stdout=self._log, stderr=subprocess.STDOUT)
        self.pid = self.process.pid
        deadline = time.monotonic() + 30
        while not port_file.exists():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the stand-in server did not start; see {self.log_path}")
            time.sleep(0.05)
        self.port = int(port_file.read_text())
        self.base = f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.base}/v1"

    def _request(self, path: str, body: dict[str, Any] | None = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as response:
            return json.loads(response.read())

    def stats(self) -> dict[str, Any]:
        return self._request("/_control/stats")

    def calls(self, endpoint: str | None = None) -> list[dict[str, Any]]:
        return self._request("/_control/calls" + (f"?endpoint={endpoint}" if endpoint else ""))

    def reset(self) -> None:
        self._request("/_control/reset", {})

    def set_latency(self, ms: float) -> None:
        self._request("/_control/latency", {"ms": ms})

    def cpu_seconds(self) -> float:
        """User + system CPU the server has used so far (it shares the machine's two cores)."""
        try:
            fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return float("nan")
        return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS

    def stop(self) -> None:
        if self.process.poll() is None:
            os.kill(self.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.kill(self.pid, signal.SIGKILL)
                self.process.wait()
        self._log.close()

    def __enter__(self) -> StandInServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


# --- measuring one command ---------------------------------------------------------------------


@dataclass
class Measurement:
    command: list[str]
    returncode: int
    wall_s: float
    user_s: float
    system_s: float
    peak_rss_mb: float
    started_at: float  # unix time, to place Dagster's step times within the command
    stdout: str = field(repr=False, default="")
    stderr: str = field(repr=False, default="")

    @property
    def cpu_s(self) -> float:
        return self.user_s + self.system_s

    def figures(self) -> dict[str, Any]:
        data = asdict(self)
        for name in ("stdout", "stderr", "command"):
            data.pop(name)
        data["cpu_s"] = round(self.cpu_s, 3)
        return data


def measure(
    command: list[str], *, env: dict[str, str] | None = None, cwd: Path | None = None, check: bool = True
) -> Measurement:
    """Run ``command`` in a fresh process tree under the measuring wrapper."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as handle:
        report = Path(handle.name)
    try:
        wrapped = [sys.executable, str(Path(__file__).resolve()), "--exec-measured", str(report), "--", *command]
        done = subprocess.run(wrapped, env=env, cwd=cwd, capture_output=True, text=True)
        if not report.stat().st_size:
            raise RuntimeError(f"the measuring wrapper failed: {done.stderr[-2000:]}")
        figures = json.loads(report.read_text())
    finally:
        report.unlink(missing_ok=True)
    result = Measurement(
        command,
        figures["returncode"],
        figures["wall_s"],
        figures["user_s"],
        figures["system_s"],
        figures["peak_rss_mb"],
        figures["started_at"],
        done.stdout,
        done.stderr,
    )
    if check and result.returncode != 0:
        raise RuntimeError(f"command failed ({result.returncode}): {' '.join(command)}\n{result.stderr[-3000:]}")
    return result


def _exec_measured(report: Path, command: list[str]) -> int:
    """The wrapper: run the command, then report wall time and this process's RUSAGE_CHILDREN."""
    started_at = time.time()
    started = time.perf_counter()
    returncode = subprocess.call(command)
    wall = time.perf_counter() - started
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    report.write_text(
        json.dumps(
            {
                "returncode": returncode,
                "started_at": started_at,
                "wall_s": round(wall, 3),
                "user_s": round(usage.ru_utime, 3),
                "system_s": round(usage.ru_stime, 3),
                "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),  # Linux reports KiB
            }
        )
    )
    return returncode


# --- the product ---------------------------------------------------------------------------------


def cli_command(*args: str) -> list[str]:
    """``graphrag-assets ARGS`` through the venv's console script (the way users run it)."""
    script = Path(sys.executable).parent / "graphrag-assets"
    if script.exists():
        return [str(script), *args]
    return [sys.executable, "-m", "graphrag_assets.cli.main", *args]


def shown_command(command: list[str]) -> str:
    return " ".join(Path(command[0]).name if i == 0 else part for i, part in enumerate(command))


def product_env(server: StandInServer) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("GRAPHRAG_ROOT", "OPENAI_BASE_URL", "OPENAI_API_KEY")}
    env.update({"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": STANDIN_API_KEY, "PYTHONUNBUFFERED": "1"})
    return env


def init_project(root: Path, env: dict[str, str]) -> None:
    subprocess.run(cli_command("init", "--root", str(root)), env=env, check=True, capture_output=True, text=True)
    (root / "data" / "input").mkdir(parents=True, exist_ok=True)


def database_path(root: Path) -> Path:
    return root / "data" / "graphrag.duckdb"


def usage_by_step(root: Path, run_ids: list[str]) -> list[dict[str, Any]]:
    """``llm_usage`` rows of the given runs: per step (asset) and purpose."""
    import duckdb

    with duckdb.connect(str(database_path(root)), read_only=True) as conn:
        placeholders = ",".join("?" for _ in run_ids)
        rows = conn.execute(
            f"select asset_key, purpose, sum(requests)::bigint, sum(cache_hits)::bigint, sum(prompt_tokens)::bigint, "
            f"sum(completion_tokens)::bigint, sum(embedding_tokens)::bigint from llm_usage where run_id in ({placeholders}) "
            f"group by all order by all",
            run_ids,
        ).fetchall()
    names = ["step", "purpose", "calls", "cached", "prompt_tokens", "completion_tokens", "embedding_tokens"]
    return [dict(zip(names, row)) for row in rows]


def dagster_timeline(root: Path, run_ids: list[str]) -> dict[str, list[dict[str, Any]]]:
    """Start and end (unix time) of every run and every step of the given runs, from the project's
    Dagster instance (its event log)."""
    from graphrag_assets.core.settings import load_settings
    from graphrag_assets.pipeline.runtime.instance import open_instance

    instance = open_instance(load_settings(root, environ={}))
    runs, steps = [], []
    for run_id in run_ids:
        stats = instance.get_run_stats(run_id)
        runs.append(
            {
                "run_id": run_id,
                "start": stats.start_time,
                "end": stats.end_time,
                "events": len(instance.all_logs(run_id)),
            }
        )
        for step in instance.get_run_step_stats(run_id):
            if step.start_time and step.end_time:
                steps.append({"run_id": run_id, "step": step.step_key, "start": step.start_time, "end": step.end_time})
    instance.dispose()
    return {"runs": runs, "steps": sorted(steps, key=lambda w: w["start"])}


def wall_breakdown(started_at: float, wall_s: float, timeline: dict[str, list[dict[str, Any]]]) -> dict[str, float]:
    """Where the command's wall time went: before the first Dagster run (interpreter start, imports,
    change detection, definitions), inside runs but outside steps (Dagster's run bookkeeping),
    inside steps, and after the last run (usage report, exit)."""
    runs = [r for r in timeline["runs"] if r["start"] and r["end"]]
    if not runs:
        return {
            "before_first_run_s": round(wall_s, 3),
            "run_bookkeeping_s": 0.0,
            "steps_s": 0.0,
            "between_and_after_runs_s": 0.0,
            "dagster_events": 0,
        }
    steps_s = sum(w["end"] - w["start"] for w in timeline["steps"])
    runs_s = sum(r["end"] - r["start"] for r in runs)
    before = min(r["start"] for r in runs) - started_at
    return {
        "before_first_run_s": round(before, 3),
        "run_bookkeeping_s": round(runs_s - steps_s, 3),
        "steps_s": round(steps_s, 3),
        "between_and_after_runs_s": round(wall_s - before - runs_s, 3),
        "dagster_events": sum(r.get("events", 0) for r in timeline["runs"]),
    }


def step_seconds(windows: list[dict[str, Any]]) -> dict[str, float]:
    seconds: dict[str, float] = {}
    for window in windows:
        seconds[window["step"]] = round(seconds.get(window["step"], 0.0) + window["end"] - window["start"], 3)
    return seconds


def calls_by_step(calls: list[dict[str, Any]], windows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The stand-in's recorded calls attributed to the step running when each arrived.

    For each step: chat and embedding calls, and the span from the first arrival to the last answer
    (the time the step spent with model calls outstanding).
    """
    spans: dict[str, dict[str, Any]] = {}
    for call in calls:
        if call.get("endpoint") not in ("chat", "embeddings"):
            continue
        step = next((w["step"] for w in windows if w["start"] <= call["time"] <= w["end"]), "outside any step")
        entry = spans.setdefault(step, {"chat": 0, "embeddings": 0, "first": call["time"], "last": call["time"]})
        entry[call["endpoint"]] += 1
        entry["first"] = min(entry["first"], call["time"])
        entry["last"] = max(entry["last"], call.get("answered_at", call["time"]))
    return {
        step: {"chat": e["chat"], "embeddings": e["embeddings"], "model_span_s": round(e["last"] - e["first"], 3)}
        for step, e in spans.items()
    }


def index_run(
    server: StandInServer, root: Path, env: dict[str, str], *extra: str, with_calls: bool = True
) -> dict[str, Any]:
    """One measured ``graphrag-assets index --root ROOT --json`` and everything it did: model usage
    (the product's report and ``llm_usage``), what the stand-in saw, Dagster step times."""
    server.reset()
    server_cpu = server.cpu_seconds()
    command = cli_command("index", "--root", str(root), "--json", *extra)
    measured = measure(command, env=env)
    server_cpu = server.cpu_seconds() - server_cpu
    report = json.loads(measured.stdout)
    run_ids = [run["run_id"] for run in report["runs"]]
    timeline = dagster_timeline(root, run_ids) if run_ids else {"runs": [], "steps": []}
    stats = server.stats()
    result = {
        "command": shown_command(command),
        **measured.figures(),
        "index_report_seconds": report["seconds"],
        "runs": [(run["job"], run["success"], len(run["partitions"])) for run in report["runs"]],
        "new_documents": len(report["new"]),
        "unchanged_documents": report["unchanged"],
        "usage": report["usage"],
        "reports": report.get("reports", {}),
        "usage_by_step": usage_by_step(root, run_ids) if run_ids else [],
        "server": {
            "chat": stats["counts"].get("chat", 0),
            "embeddings": stats["counts"].get("embeddings", 0),
            "max_in_flight": stats["max_in_flight"],
            "cpu_s": round(server_cpu, 2),
        },
        "step_seconds": step_seconds(timeline["steps"]),
        "wall_breakdown": wall_breakdown(measured.started_at, measured.wall_s, timeline),
    }
    if with_calls:
        result["calls_by_step"] = calls_by_step(server.calls(), timeline["steps"])
    return result


def usage_totals(usage: dict[str, dict[str, int]]) -> dict[str, int]:
    """Sums over purposes of the product's usage report."""
    keys = ("calls", "cached", "prompt_tokens", "completion_tokens")
    return {k: sum(v.get(k, 0) for v in usage.values()) for k in keys}


def report_levels(root: Path) -> dict[int, int]:
    """Communities per level (each gets one report call when built without cache)."""
    import duckdb

    with duckdb.connect(str(database_path(root)), read_only=True) as conn:
        return dict(conn.sql("select level, count(*) from communities group by all order by 1").fetchall())


FINGERPRINTS = {
    "text_units": "id, text",
    "entities": "title, type, description",
    "relationships": "source, target, weight, description",
    "communities": "level, community, list_sort(entity_ids)::varchar",
    "community_reports": "community, full_content",
}


def table_fingerprints(root: Path) -> dict[str, dict[str, Any]]:
    """Rows and an order-independent hash of the main output tables (to compare two builds)."""
    import duckdb

    result: dict[str, dict[str, Any]] = {}
    with duckdb.connect(str(database_path(root)), read_only=True) as conn:
        for table, columns in FINGERPRINTS.items():
            rows, digest = conn.sql(
                f"select count(*), md5(coalesce(string_agg(md5(concat_ws('|', {columns})), ',' order by md5(concat_ws('|', {columns}))), '')) from {table}"
            ).fetchall()[0]
            result[table] = {"rows": rows, "md5": digest}
    return result


def ideal_seconds(calls: int, concurrency: int, latency_s: float) -> float:
    """Wall time of ``calls`` model calls at ``latency_s`` each with ``concurrency`` in flight (whole rounds)."""
    return math.ceil(calls / concurrency) * latency_s if calls else 0.0


def copy_tree(source: Path, target: Path) -> None:
    shutil.copytree(source, target, dirs_exist_ok=True)


def median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The repetition with the median wall time (its details, e.g. step times, stand for the set);
    wall time, CPU time and peak RSS replaced by their medians, every repetition's under ``repeats``."""
    ordered = sorted(runs, key=lambda run: run["wall_s"])
    chosen = dict(ordered[(len(ordered) - 1) // 2])
    chosen["repeats"] = {key: [run[key] for run in runs] for key in ("wall_s", "cpu_s", "peak_rss_mb")}
    chosen["repeats"]["calls"] = [run["server"]["chat"] + run["server"]["embeddings"] for run in runs]
    for key in ("wall_s", "cpu_s", "peak_rss_mb"):
        chosen[key] = round(statistics.median(chosen["repeats"][key]), 3)
    return chosen


def spread(run: dict[str, Any], key: str) -> str:
    """``median (min-max)`` of a figure over the repetitions, or the figure alone."""
    values = run.get("repeats", {}).get(key) or [run[key]]
    if len(values) == 1:
        return f"{values[0]:.2f}"
    return f"{run[key]:.2f} ({min(values):.2f}-{max(values):.2f})"


if __name__ == "__main__" and len(sys.argv) > 3 and sys.argv[1] == "--exec-measured" and sys.argv[3] == "--":
    sys.exit(_exec_measured(Path(sys.argv[2]), sys.argv[4:]))
