"""Progress of long CLI commands, fed by :mod:`graphrag_assets.core.progress`.

On a terminal each stage gets a live bar (rich). Without one (piped, ``nohup``, CI logs) a bar
would print nothing readable, so progress comes as plain lines instead: one when a stage starts,
one every :data:`LINE_INTERVAL_SECONDS` or every :data:`LINE_STEP_FRACTION` of the stage, and one
when it is done (``extract graph 40/400``). ``index -v`` uses the plain lines too, between
Dagster's own log lines.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from graphrag_assets.core import progress

LINE_INTERVAL_SECONDS = 10.0
LINE_STEP_FRACTION = 0.1


@dataclass
class _Printed:
    """What the last line of a stage said, and when."""

    at: float
    done: int


class ProgressLines:
    """A progress listener that writes plain lines, few enough for a log file."""

    def __init__(self, write: Callable[[str], None], clock: Callable[[], float] = time.monotonic) -> None:
        self._write = write
        self._clock = clock
        self._stages: dict[str, _Printed] = {}
        self._lock = threading.Lock()  # steps may report from worker threads

    def __call__(self, stage: str, done: int, total: int) -> None:
        with self._lock:
            self._report(stage, done, total)

    def _report(self, stage: str, done: int, total: int) -> None:
        now = self._clock()
        last = self._stages.get(stage)
        if last is None or done < last.done:  # a stage starts (again, in the next run)
            self._stages[stage] = _Printed(now, done)
            self._write(f"{stage} {done:,}/{total:,}" + (" done" if done >= total else ""))
            return
        if done == last.done:
            return
        if done >= total:
            self._stages[stage] = _Printed(now, done)
            self._write(f"{stage} {done:,}/{total:,} done")
        elif done - last.done >= max(1, total * LINE_STEP_FRACTION) or now - last.at >= LINE_INTERVAL_SECONDS:
            self._stages[stage] = _Printed(now, done)
            self._write(f"{stage} {done:,}/{total:,}")


@contextlib.contextmanager
def live_progress(bars: bool = True) -> Iterator[Callable[[str], None]]:
    """Show progress while the block runs; yields a function for status lines.

    ``bars``: live bars when stderr is a terminal; plain lines otherwise (or when False).
    """
    if not bars or not sys.stderr.isatty():

        def announce(message: str) -> None:
            print(message, file=sys.stderr, flush=True)

        progress.set_listener(ProgressLines(announce))
        progress.set_warning_listener(lambda message: announce(f"warning: {message}"))
        try:
            yield announce
        finally:
            progress.set_listener(None)
            progress.set_warning_listener(None)
        return

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    display = Progress(
        TextColumn("{task.description:<24}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    )
    tasks: dict[str, int] = {}

    def on_progress(stage: str, done: int, total: int) -> None:
        if stage not in tasks:
            tasks[stage] = display.add_task(stage, total=total)
        display.update(tasks[stage], completed=done, total=total)

    progress.set_listener(on_progress)
    progress.set_warning_listener(
        lambda message: display.console.print(f"[yellow]warning:[/yellow] {message}", markup=True, highlight=False)
    )
    try:
        with display:
            yield lambda message: display.console.print(message, markup=False, highlight=False)
    finally:
        progress.set_listener(None)
        progress.set_warning_listener(None)
