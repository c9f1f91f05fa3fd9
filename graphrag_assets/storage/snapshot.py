"""Reads that share a process with the response cache's writer (the server's snapshot loads).

DuckDB refuses, within one process, a read-only connection to a file that has a read-write one
open (the cache writer's), and the other way round; both are short-lived, so waiting a few
milliseconds is enough.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import duckdb

T = TypeVar("T")
SAME_PROCESS_RETRIES = 8


def in_turn(read: Callable[[], T]) -> T:
    """``read()``, retried briefly while this process's response cache holds a read-write connection."""
    delay = 0.005
    for attempt in range(SAME_PROCESS_RETRIES):
        try:
            return read()
        except duckdb.ConnectionException as exc:
            if "different configuration" not in str(exc) or attempt == SAME_PROCESS_RETRIES - 1:
                raise
            time.sleep(delay)
            delay *= 2
    raise AssertionError("unreachable")
