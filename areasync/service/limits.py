"""The request-rate limit of one connection: a token bucket on the wall clock.

A bucket holds at most `burst` tokens and refills at `rate` tokens per second; each request
takes one. Bursts up to `burst` pass untouched (an agent replaying a batch of tool calls), while
a sustained flood is cut to `rate`. The wall clock (`time.monotonic`), never the simulation's:
a paused or fast-forwarded session must not change how fast a client may talk.
"""

from __future__ import annotations

import time
from collections.abc import Callable


class TokenBucket:
    """`take()` is True while the client stays within `rate` requests/s (bursts up to `burst`)."""

    __slots__ = ("_clock", "_last", "_tokens", "burst", "rate")

    def __init__(
        self, rate: float, burst: int, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.rate = rate
        self.burst = burst
        self._clock = clock
        self._tokens = float(burst)
        self._last = clock()

    def take(self) -> bool:
        now = self._clock()
        self._tokens = min(self.burst, self._tokens + (now - self._last) * self.rate)
        self._last = now
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return True
        return False
