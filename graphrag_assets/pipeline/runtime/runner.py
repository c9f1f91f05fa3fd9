"""Running the pipeline through the project's Dagster instance (used by the CLI).

Runs go through the project's instance (:mod:`graphrag_assets.pipeline.runtime.instance`) so they show up
in the Dagster UI exactly as if they had been launched there; execution is in-process, one job at
a time.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from dagster import DagsterInstance, Definitions, execute_job

from graphrag_assets.core.errors import ConfigError, LLMError, UserError
from graphrag_assets.core.processes import ProcessId
from graphrag_assets.pipeline.runtime.dagster_private import (
    ASSET_PARTITION_RANGE_END_TAG,
    ASSET_PARTITION_RANGE_START_TAG,
    REPOSITORY_LABEL_TAG,
    SINGLETON_REPOSITORY_NAME,
    set_defs_state_storage,
)
from graphrag_assets.pipeline.runtime.instance import LOCATION_NAME, PROCESS_TAG, TRIGGER_TAG
from graphrag_assets.pipeline.runtime.memory import give_back_memory
from graphrag_assets.pipeline.runtime.uncaptured import execute_without_capture
from graphrag_assets.storage.database import let_go

# our errors' class names: their message is the sentence for the user, whatever they were raised from
USER_ERRORS = frozenset(cls.__name__ for cls in (UserError, ConfigError, LLMError))
CHILD_CRASH = "ChildProcessCrashException"  # Dagster's error for a step whose own process died

log = logging.getLogger(__name__)

QUIET_CONSOLE_LEVEL = "CRITICAL"  # Dagster's console logger stays silent unless `index -v` asks for it
_console_log_level = QUIET_CONSOLE_LEVEL


@contextlib.contextmanager
def dagster_console_logs(level: str = "DEBUG") -> Iterator[None]:
    """Let Dagster's console logger print its own lines (to stderr) for the runs started inside."""
    global _console_log_level
    previous, _console_log_level = _console_log_level, level
    try:
        yield
    finally:
        _console_log_level = previous


def console_log_level() -> str:
    """The level Dagster's console logger prints at in runs started now (``index -v``: DEBUG)."""
    return _console_log_level


@dataclass
class RunOutcome:
    job: str
    run_id: str
    success: bool
    partitions: list[str] = field(default_factory=list)
    error: str | None = None

    def as_dict(self) -> dict[str, object]:
        return {
            "job": self.job,
            "run_id": self.run_id,
            "success": self.success,
            "partitions": self.partitions,
            "error": self.error,
        }


def _first_error(result) -> str | None:
    """The first step failure as one line: our own sentence for the user where the chain holds one
    (a full disk raised from DuckDB's error), else the root cause (Dagster wraps it in its own errors)."""
    for event in result.all_events:
        if event.is_step_failure and event.event_specific_data is not None:
            error = getattr(event.event_specific_data, "error", None)
            if error is not None and error.cls_name == CHILD_CRASH:
                return _crash_sentence(result, event.step_key)
            while error is not None and error.cause is not None and error.cls_name not in USER_ERRORS:
                error = error.cause
            if error is not None:
                lines = [line for line in (error.message or "").strip().splitlines() if line.strip()]
                return _without_class_name(lines[0], error.cls_name) if lines else error.cls_name
    return None


def _crash_sentence(result, step_key: str | None) -> str:
    """Why a step's own process ended before its step did, from the executor's note of its exit."""
    how = "ended"
    for event in result.all_events:
        if event.step_key == step_key and event.is_engine_event and event.message:
            killed = re.search(r"terminated by signal \d+ \((\w+)\)", event.message)
            code = re.search(r"exit(?:ed)? (?:with )?code (-?\d+)", event.message)
            if killed:
                how = f"was killed ({killed.group(1)}" + (
                    ", perhaps for lack of memory)" if killed.group(1) == "SIGKILL" else ")"
                )
            elif code:
                how = f"exited with code {code.group(1)}"
    return f"the process of step {step_key} {how} before the step finished; run 'graphrag-assets index' again."


def _without_class_name(line: str, cls_name: str | None) -> str:
    """The message of our own errors (one sentence for the user) without "package.ClassName: ";
    a short class name is kept for anything else, since it says what kind of bug it is."""
    head, sep, rest = line.partition(": ")
    if not sep or not cls_name or head.rsplit(".", 1)[-1] != cls_name:
        return line
    return rest if head.startswith(("graphrag_assets.", "dagster.")) else f"{cls_name}: {rest}"


def run_job(
    defs: Definitions,
    instance: DagsterInstance,
    job_name: str,
    partition_keys: Sequence[str] | None = None,
    tags: dict[str, str] | None = None,
    console_log_level: str | None = None,
) -> RunOutcome:
    """Execute a job in this process; a list of partitions runs as one range run.

    The keys must be contiguous in the dynamic partition order (new documents are added together,
    so they are); a single key runs as a single-partition run.
    """
    # Make this instance the "current" one for Dagster's definitions-state lookup while we resolve
    # and run: a context created elsewhere in the process (e.g. a sensor evaluation context that
    # was never closed) may otherwise point it at an instance that no longer exists.
    with set_defs_state_storage(instance.defs_state_storage):
        return _run_job(defs, instance, job_name, partition_keys, tags, console_log_level or _console_log_level)


def _run_job(defs, instance, job_name, partition_keys, tags, console_log_level) -> RunOutcome:
    job = defs.resolve_job_def(job_name)
    keys = list(partition_keys or [])
    partition_key, run_tags = _run_tags(keys, tags)
    run_config = {"loggers": {"console": {"config": {"log_level": console_log_level}}}}
    with ctrl_c_watch() as ctrl_c_seen:
        result = execute_without_capture(
            job, run_config=run_config, instance=instance, partition_key=partition_key, tags=run_tags
        )
    if ctrl_c_seen():
        raise KeyboardInterrupt  # Dagster turned it into a failed (or, between steps, an ignored) run
    return RunOutcome(job_name, result.run_id, result.success, keys, None if result.success else _first_error(result))


def _run_tags(keys: list[str], tags: dict[str, str] | None) -> tuple[str | None, dict[str, str]]:
    """The partition key of a single-partition run, and the tags of a run the CLI starts."""
    # The UI lists a job's runs by the repository label runs launched from the UI carry; without
    # it the CLI's runs would be missing from the job's page and the timeline.
    run_tags = {
        REPOSITORY_LABEL_TAG: f"{SINGLETON_REPOSITORY_NAME}@{LOCATION_NAME}",
        TRIGGER_TAG: "graphrag-assets index",
        **(tags or {}),
        PROCESS_TAG: ProcessId.current().as_tag(),
    }
    partition_key = None
    if len(keys) == 1:
        partition_key = keys[0]
    elif keys:
        run_tags[ASSET_PARTITION_RANGE_START_TAG] = keys[0]
        run_tags[ASSET_PARTITION_RANGE_END_TAG] = keys[-1]
    return partition_key, run_tags


def run_reconstructable_job(
    job: object,
    instance: DagsterInstance,
    job_name: str,
    partition_keys: Sequence[str],
    console_log_level: str = QUIET_CONSOLE_LEVEL,
    tags: dict[str, str] | None = None,
) -> RunOutcome:
    """Execute a job whose steps run in other processes (a multiprocess or distributed executor).

    ``job`` is what ``dagster.reconstructable`` returned for a module-level factory: each step
    process rebuilds the job from it. The run still
    goes through the project's instance, and this process waits for it to end.
    """
    keys = list(partition_keys)
    _, run_tags = _run_tags(keys, tags)
    if len(keys) == 1:  # a range of one: the run needs no partition-specific config
        run_tags[ASSET_PARTITION_RANGE_START_TAG] = run_tags[ASSET_PARTITION_RANGE_END_TAG] = keys[0]
    run_config = {"loggers": {"console": {"config": {"log_level": console_log_level}}}}
    let_go()  # the steps open the database from their own processes
    give_back_memory()  # this process only waits for the steps now
    # A step process logs its start through the instance's Python log level, not the run's console
    # logger: the same instance, at the console's level, keeps those lines off the user's terminal.
    ref = instance.get_ref()
    python_logs = ref.settings.get("python_logs") or {}
    quiet = DagsterInstance.from_ref(
        ref._replace(settings={**ref.settings, "python_logs": {**python_logs, "python_log_level": console_log_level}})
    )
    try:
        with set_defs_state_storage(quiet.defs_state_storage), ctrl_c_watch() as ctrl_c_seen:
            with execute_job(job, instance=quiet, run_config=run_config, tags=run_tags) as result:
                outcome = RunOutcome(
                    job_name, result.run_id, result.success, keys, None if result.success else _first_error(result)
                )
    finally:
        quiet.dispose()
    if ctrl_c_seen():
        raise KeyboardInterrupt
    return outcome


@contextlib.contextmanager
def ctrl_c_watch() -> Iterator[Callable[[], bool]]:
    """Tell whether SIGINT arrived while Dagster ran a job.

    Dagster catches Ctrl-C during a run: inside a step it fails the step with its own error, between
    steps it notes it and may even finish the run. Either way the caller must stop instead of going
    on with the next job, so the signal is also noted here: Python writes the number of every
    signal it handles to the wakeup descriptor, whichever handler Dagster has installed.
    """
    if threading.current_thread() is not threading.main_thread():
        yield lambda: False  # signals are only delivered to the main thread
        return
    reader, writer = os.pipe()
    os.set_blocking(reader, False)
    os.set_blocking(writer, False)
    previous = signal.set_wakeup_fd(writer, warn_on_full_buffer=False)
    seen: list[bool] = []
    try:
        yield lambda: bool(seen)
    finally:
        signal.set_wakeup_fd(previous)
        with contextlib.suppress(BlockingIOError):
            seen.extend(True for number in os.read(reader, 512) if number == signal.SIGINT)
        os.close(reader)
        os.close(writer)
