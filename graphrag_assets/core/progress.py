"""Progress of long steps, for the Dagster run log and the CLI's live display.

Steps call :func:`report`; it logs through Dagster's logger at most every few seconds (so the
event log stays small) and always notifies the listener the CLI installs, which runs in the same
process because we use the in-process executor.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

Listener = Callable[[str, int, int], None]
WarningListener = Callable[[str], None]

_listener: Listener | None = None
_warning_listener: WarningListener | None = None
_last_logged: dict[str, float] = {}
LOG_INTERVAL_SECONDS = 5.0


def set_listener(listener: Listener | None) -> None:
    """Install (or remove with None) the callback that receives ``(stage, done, total)``."""
    global _listener
    _listener = listener


def set_warning_listener(listener: WarningListener | None) -> None:
    """Install (or remove) the callback that receives warnings meant for the user."""
    global _warning_listener
    _warning_listener = listener


def warn(message: str, log: logging.Logger | None = None) -> None:
    """A warning for the user: logged in the run and shown by the CLI."""
    if log is not None:
        log.warning(message)
    if _warning_listener is not None:
        _warning_listener(message)


def report(stage: str, done: int, total: int, log: logging.Logger | None = None) -> None:
    """Record that ``done`` of ``total`` units of ``stage`` are finished."""
    if _listener is not None:
        _listener(stage, done, total)
    if log is None:
        return
    now = time.monotonic()
    if done >= total or now - _last_logged.get(stage, 0.0) >= LOG_INTERVAL_SECONDS:
        _last_logged[stage] = now
        log.info(f"{stage}: {done}/{total}")


@dataclass
class Counter:
    """Counts completions of a stage and reports each one."""

    stage: str
    total: int
    log: logging.Logger | None = None
    done: int = 0

    def start(self) -> Counter:
        report(self.stage, 0, self.total, self.log)
        return self

    def step(self, n: int = 1) -> None:
        self.done += n
        report(self.stage, self.done, self.total, self.log)
