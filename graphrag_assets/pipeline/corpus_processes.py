"""The corpus job with each step in a process of its own, for big corpora (``index.corpus_processes``).

Python, polars, Arrow and DuckDB keep the memory they freed, so in one process every corpus step
starts with what the steps before it left: at 100,000 documents the communities step peaked at
9.4 GB in the indexing process but needs about 5.5 GB on its own. Here the steps run on Dagster's
multiprocess executor, one at a time and in order (``max_concurrent`` 1), each forked from the step
server (:mod:`graphrag_assets.pipeline.runtime.step_server`, the imports paid once), so each
starts empty and its memory goes back to the system when it ends. The steps hand each other
their tables through the DuckDB file as they do in one process, one process holds the file at a
time, and ``corpus_manifest`` still publishes the build last, all at once.

Progress and warnings reach the CLI through :mod:`graphrag_assets.pipeline.runtime.progress_relay`.
A small corpus keeps the in-process run: starting the processes costs a few seconds, more than a
small corpus's steps.
"""

from __future__ import annotations

import json
import multiprocessing.util
import os
import select
import signal
import threading
from collections.abc import Callable
from typing import Any

from dagster import (
    DagsterInstance,
    Definitions,
    ExecutorDefinition,
    JobDefinition,
    build_reconstructable_job,
    multiprocess_executor,
)

from graphrag_assets.core.settings import Settings
from graphrag_assets.pipeline.definitions import build_definitions
from graphrag_assets.pipeline.partitions import CORPUS_JOB
from graphrag_assets.pipeline.runtime.progress_relay import forward_progress, progress_relay
from graphrag_assets.pipeline.runtime.runner import RunOutcome, console_log_level, run_job, run_reconstructable_job
from graphrag_assets.pipeline.runtime.step_server import START_METHOD, start_step_server
from graphrag_assets.storage.database import let_go

# ``auto`` runs the steps in their own processes from this many document files, or when the
# published graph has this many relationships (docs/SCALING.md gives the measurements).
PROCESSES_FROM_DOCUMENTS = 10_000
PROCESSES_FROM_RELATIONSHIPS = 1_000_000
STEP_MODULES = ("graphrag_assets.pipeline.corpus_processes",)  # what the step server imports once

_in_step_process = False


def corpus_processes_executor() -> ExecutorDefinition:
    """Dagster's multiprocess executor, one step at a time, steps forked from the step server."""
    start = {START_METHOD: {"preload_modules": list(STEP_MODULES)}}
    return multiprocess_executor.configured({"max_concurrent": 1, "start_method": start}, name="corpus_step_processes")


def corpus_job_of(root: str, overrides_json: str, run_pid: int, progress_address: str) -> JobDefinition:
    """The corpus job of the project at ``root`` with a process per step (the reconstructable job's factory).

    Called by the process that starts the run (``run_pid``) and by each step process; a step
    process sends its progress to ``progress_address``, checkpoints and closes the database when
    it ends (a process started by multiprocessing exits without running ``atexit``), and is killed
    when the run's process dies (as it would be were it that process). It leaves the terminal's
    process group: Ctrl-C reaches the run's process, whose executor stops the step, once, as the
    in-process run is stopped (the terminal's signal as well made a second interrupt land in the
    step's clean-up, and a traceback on the screen).
    """
    global _in_step_process
    if os.getpid() != run_pid and not _in_step_process:
        _in_step_process = True
        os.setpgid(0, 0)
        end_with_process(run_pid)
        forward_progress(progress_address)
        multiprocessing.util.Finalize(None, let_go, exitpriority=10)
    defs = build_definitions(root, json.loads(overrides_json) or None, corpus_executor=corpus_processes_executor())
    return defs.resolve_job_def(CORPUS_JOB)


def end_with_process(run_pid: int) -> None:
    """Kill this process once ``run_pid`` has ended: a step whose ``index`` was killed (kill -9, the
    OOM killer) must not go on writing the index, which the next ``index`` finishes instead."""
    try:
        handle = os.pidfd_open(run_pid)
    except ProcessLookupError:
        os.kill(os.getpid(), signal.SIGKILL)
        return
    except OSError:  # a kernel without pidfd (before Linux 5.3): the step runs to its end
        return

    def watch() -> None:
        select.select([handle], [], [])  # readable once the process has ended
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, name="run-process-watch", daemon=True).start()


def wants_processes(settings: Settings, documents: int, relationships: Callable[[], int]) -> bool:
    """Whether the corpus steps run in processes of their own: ``index.corpus_processes``, and for
    ``auto`` the corpus's document files, else the relationships of its published graph (counted
    only when the documents did not decide)."""
    mode = settings.index.corpus_processes
    if mode != "auto":
        return mode == "always"
    return documents >= PROCESSES_FROM_DOCUMENTS or relationships() >= PROCESSES_FROM_RELATIONSHIPS


def run_corpus_job(
    settings: Settings,
    instance: DagsterInstance,
    defs: Definitions,
    overrides: dict[str, Any] | None,
    tags: dict[str, str] | None,
    separate: bool,
) -> RunOutcome:
    """Run the corpus job: in this process, or (``separate``) each step in a process of its own."""
    if not separate:
        return run_job(defs, instance, CORPUS_JOB, tags=tags)
    start_step_server(STEP_MODULES)  # imports the pipeline while the run is set up
    with progress_relay() as address:
        job = build_reconstructable_job(
            __name__,
            corpus_job_of.__name__,
            reconstructable_args=(str(settings.root), json.dumps(overrides or {}), os.getpid(), address),
        )
        return run_reconstructable_job(job, instance, CORPUS_JOB, [], console_log_level(), tags)
