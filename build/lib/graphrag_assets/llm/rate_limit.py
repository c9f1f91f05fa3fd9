"""Sliding-window limits on requests and tokens per minute.

Providers publish limits as requests per minute (RPM) and tokens per minute (TPM). Staying under
them up front avoids 429 storms, which cost a full backoff each. The window slides: a request may
start when the requests started in the last 60 s, and their estimated tokens, leave room for it.
Waiters are served in arrival order, so a large request cannot be starved by small ones.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable


class SlidingWindowLimiter:
    """At most ``requests_per_minute`` starts and ``tokens_per_minute`` tokens in any ``period``.

    A single request larger than the whole token budget is let through once the window is empty,
    rather than waiting forever.
    """

    def __init__(
        self,
        requests_per_minute: int | None = None,
        tokens_per_minute: int | None = None,
        *,
        period: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.requests_per_minute = requests_per_minute
        self.tokens_per_minute = tokens_per_minute
        self.period = period
        self._clock = clock
        self._events: deque[tuple[float, int]] = deque()  # (start time, tokens)
        self._tokens_in_window = 0
        self._lock: asyncio.Lock | None = None
        self._lock_loop: asyncio.AbstractEventLoop | None = None

    @property
    def active(self) -> bool:
        return bool(self.requests_per_minute or self.tokens_per_minute)

    def _loop_lock(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        if self._lock is None or self._lock_loop is not loop:
            self._lock = asyncio.Lock()
            self._lock_loop = loop
        return self._lock

    def _expire(self, now: float) -> None:
        while self._events and self._events[0][0] <= now - self.period:
            _, tokens = self._events.popleft()
            self._tokens_in_window -= tokens

    def wait_time(self, tokens: int, now: float | None = None) -> float:
        """Seconds until a request of ``tokens`` may start (0 when it may start now)."""
        now = self._clock() if now is None else now
        self._expire(now)
        wait = 0.0
        if self.requests_per_minute and len(self._events) >= self.requests_per_minute:
            oldest = self._events[len(self._events) - self.requests_per_minute][0]
            wait = max(wait, oldest + self.period - now)
        if self.tokens_per_minute and self._events and self._tokens_in_window + tokens > self.tokens_per_minute:
            freed = 0
            needed = self._tokens_in_window + tokens - self.tokens_per_minute
            for start, used in self._events:
                freed += used
                if freed >= needed:
                    wait = max(wait, start + self.period - now)
                    break
            else:
                wait = max(wait, self._events[-1][0] + self.period - now)
        return wait

    async def acquire(self, tokens: int = 0) -> None:
        """Wait until a request of ``tokens`` (estimated prompt + completion) fits, then count it."""
        if not self.active:
            return
        async with self._loop_lock():
            while True:
                wait = self.wait_time(tokens)
                if wait <= 0:
                    break
                await asyncio.sleep(wait)
            self._events.append((self._clock(), tokens))
            self._tokens_in_window += tokens
