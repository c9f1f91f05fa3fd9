"""The endpoint's limits hold across workers: `llm.concurrency` is a limit of the model endpoint, not
of a process, so two workers together never have more requests in flight than it allows.

The scripted server answers after 200 ms and counts the requests it holds at once; the sample
corpus is indexed with the standard method on 2 workers (Dagster's multiprocess executor: each
shard in its own process) at `llm.concurrency: 4`.
"""

from __future__ import annotations

from pathlib import Path

from graphrag_assets.core.settings import load_settings
from graphrag_assets.pipeline.runtime.instance import open_instance
from graphrag_assets.pipeline.workers import WORKERS_JOB
from graphrag_assets_testkit.builds import run_index
from graphrag_assets_tests.conftest import RESPONDER, make_llm_project

LATENCY_MS = 200
CONCURRENCY = 4
WORKERS = 2


def _workers_run_window(root: Path) -> tuple[float, float]:
    """Start and end (unix time) of the project's workers run: while the shards called the model."""
    instance = open_instance(load_settings(root, environ={}))
    try:
        (run,) = [run for run in instance.get_runs() if run.job_name == WORKERS_JOB]
        stats = instance.get_run_stats(run.run_id)
        return stats.start_time, stats.end_time
    finally:
        instance.dispose()


def _most_at_once(calls: list[dict]) -> int:
    """The most of these calls that were outstanding at the same moment (arrival to answer)."""
    edges = sorted([(c["time"], 1) for c in calls] + [(c["answered_at"], -1) for c in calls])
    most = current = 0
    for _, step in edges:
        current += step
        most = max(most, current)
    return most


def test_two_workers_never_exceed_the_concurrency_of_the_endpoint(openai_server_factory, tmp_path: Path) -> None:
    server = openai_server_factory(responder=RESPONDER, latency_ms=LATENCY_MS)
    extra = f"  concurrency: {CONCURRENCY}\nworkers:\n  count: {WORKERS}\n"
    root = make_llm_project(tmp_path / "project", server.base_url, extra=extra)
    done = run_index(root)
    assert done.returncode == 0, done.stderr
    assert server.stats()["max_in_flight"] <= CONCURRENCY
    # the shards did call the model at the same time (one worker alone holds at most CONCURRENCY / WORKERS),
    # so a limit that did not hold across workers would have shown above
    start, end = _workers_run_window(root)
    answered = [c for c in server.calls() if c["outcome"] == "answered" and start <= c["time"] <= end]
    assert _most_at_once(answered) > CONCURRENCY // WORKERS
