"""Slowing down API key guesses: wrong keys in a row from one client address, then a wait.

After ``serve.key_failures`` wrong keys (a header, a session cookie or the login form) from one
address within ``serve.key_failure_window_seconds``, that address is answered 429 with
``Retry-After`` until the oldest of those failures leaves the window; its keys are not even compared
meanwhile, so a guess cannot succeed there either. A right key resets the address's count (only
someone holding the key can do that). Other addresses are not affected. Behind a reverse proxy
every client has the proxy's address, so they share one count.
"""

from __future__ import annotations

import math
import time
from collections import deque

MAX_ADDRESSES = 10_000  # addresses remembered at once; the least recent are forgotten past it


class KeyThrottle:
    """Recent wrong-key times per client address."""

    def __init__(self, failures: int, window_seconds: float) -> None:
        self.failures = failures
        self.window = window_seconds
        self._recent: dict[str, deque[float]] = {}

    def _current(self, address: str, now: float) -> deque[float]:
        times = self._recent.get(address, deque())
        while times and times[0] <= now - self.window:
            times.popleft()
        return times

    def wait_seconds(self, address: str) -> int:
        """Seconds ``address`` must wait before its key is checked again (0: no wait)."""
        now = time.monotonic()
        times = self._current(address, now)
        if len(times) < self.failures:
            return 0
        return max(1, math.ceil(times[-self.failures] + self.window - now))

    def failed(self, address: str) -> None:
        now = time.monotonic()
        times = self._current(address, now)
        times.append(now)
        self._recent.pop(address, None)  # re-inserted last: the dict's order is least recent first
        self._recent[address] = times
        while len(self._recent) > MAX_ADDRESSES:
            del self._recent[next(iter(self._recent))]

    def succeeded(self, address: str) -> None:
        self._recent.pop(address, None)

    def message(self, wait: int) -> str:
        return (
            f"too many wrong API keys came from this address ({self.failures} within {self.window:g} seconds); "
            f"wait {wait} seconds, then send the server's key."
        )


def client_address(scope: dict) -> str:
    """The address a request came from (what failures are counted by)."""
    client = scope.get("client")
    return str(client[0]) if client else "unknown"
