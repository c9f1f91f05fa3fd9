"""Live progress for long CLI commands (rich), fed by :mod:`graphrag_assets.core.progress`."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator

from graphrag_assets.core import progress


@contextlib.contextmanager
def live_progress(enabled: bool = True) -> Iterator[Callable[[str], None]]:
    """Show one progress bar per stage while the block runs; yields a function for status lines."""
    if not enabled or not sys.stderr.isatty():

        def announce(message: str) -> None:
            print(message, file=sys.stderr, flush=True)

        progress.set_listener(None)
        progress.set_warning_listener(lambda message: announce(f"warning: {message}"))
        try:
            yield announce
        finally:
            progress.set_warning_listener(None)
        return

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    bars = Progress(
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
            tasks[stage] = bars.add_task(stage, total=total)
        bars.update(tasks[stage], completed=done, total=total)

    progress.set_listener(on_progress)
    progress.set_warning_listener(
        lambda message: bars.console.print(f"[yellow]warning:[/yellow] {message}", markup=True, highlight=False)
    )
    try:
        with bars:
            yield lambda message: bars.console.print(message, markup=False, highlight=False)
    finally:
        progress.set_listener(None)
        progress.set_warning_listener(None)
