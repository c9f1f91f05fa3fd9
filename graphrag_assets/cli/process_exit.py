"""Ending the ``graphrag-assets`` process without the interpreter's teardown.

After an index run the process holds Dagster, LanceDB (its Rust runtime), DuckDB, polars and
the ``openai`` client; tearing all that down (module cleanup, native destructors) took 2.8 s of a
26 s cold index of A Christmas Carol here (issue 14), after the answer was already printed and
every file written and closed. :func:`exit_now` does what the normal shutdown does for us —
flushes output, waits for non-daemon threads, runs the ``atexit`` handlers (logging among them) —
and then ends the process at once. It acts only in the console script's own process: a command
invoked in-process (tests, ``CliRunner``) returns normally.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from pathlib import Path

CONSOLE_SCRIPT = "graphrag-assets"


def exit_now(code: int = 0) -> None:
    """End the console script's process with ``code`` without tearing the interpreter down."""
    if Path(sys.argv[0]).name != CONSOLE_SCRIPT:
        if code:
            sys.exit(code)
        return
    for thread in threading.enumerate():
        if thread is not threading.main_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
