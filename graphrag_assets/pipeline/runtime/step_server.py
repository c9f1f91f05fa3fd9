"""Step processes forked from a server that imported the pipeline once (multiprocessing's forkserver).

Dagster's multiprocess executor starts every step in a new process, and a spawned process imports
Dagster and the pipeline before it runs anything: 2.6 s of CPU each, 10-20 s of wall on a loaded
machine, paid three times in a row by the workers job (plan, the shards, collect). With the
``forkserver`` start method the imports are paid once, by a server process started here as the
run begins (while the coordinator sets the run up), and every step is a fork of it.

A forked step inherits the server's environment and working directory from when the server
started, not this process's current ones, and the settings are read from the environment (API
keys, ``AWS_*``, the model endpoint). So the server is restarted whenever they changed since it
started: a long-lived process (the test suite, ``serve``) never runs a step with stale values.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.forkserver
import os
import sys
import threading
from collections.abc import Sequence

START_METHOD = "forkserver"
FIRST_MODULE = "graphrag_assets.pipeline.runtime.step_server_first"  # before the libraries (see there)
LAST_MODULE = "graphrag_assets.pipeline.runtime.step_server_last"  # after them (see there)

_lock = threading.Lock()
_started_in: tuple | None = None  # (environment, working directory, sys.path) the running server inherited


def _current_state() -> tuple:
    return (tuple(sorted(os.environ.items())), os.getcwd(), tuple(sys.path))


def start_step_server(preload: Sequence[str]) -> None:
    """Start the fork server with ``preload`` imported (restarted when this process's environment
    changed since it started); returns at once, the server imports in the background."""
    global _started_in
    state = _current_state()
    with _lock:
        server = multiprocessing.forkserver._forkserver  # noqa: SLF001 - the module's one server; stdlib exposes no stop
        if _started_in is not None and _started_in != state:
            server._stop()  # noqa: SLF001 - the only way to stop it (CPython's own tests use it)
        multiprocessing.get_context(START_METHOD).set_forkserver_preload([FIRST_MODULE, *preload, LAST_MODULE])
        multiprocessing.forkserver.ensure_running()
        _started_in = state
