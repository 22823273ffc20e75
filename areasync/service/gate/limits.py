"""The request-rate limit of one connection: a token bucket on the wall clock, and its strikes.

A bucket holds at most `burst` tokens and refills at `rate` tokens per second; each request
takes one. Bursts up to `burst` pass untouched (an agent replaying a batch of tool calls), while
a sustained flood is cut to `rate`. The wall clock (`time.monotonic`, or the service's wall
a test moves by hand), never the simulation's: a paused or fast-forwarded session must not
change how fast a client may talk.

A request that finds the bucket empty is refused (`rate_limited`, retryable) and costs the
connection a *strike*: a second bucket of `rate_strikes` strikes that refills slowly, at
`STRIKE_REFILL` x `rate` per second (one strike forgiven per ten requests' worth of time). A
client that bursts over now and then is only refused; one that keeps sending faster than its
rate runs out of strikes and is closed with 4029. With the defaults (rate 2,000/s, burst 4,000,
1,000 strikes refilled at 200/s) a flood at 5x the rate is closed about 0.13 s after its first
refusal, one at 2x about 0.56 s after, one at 1.1x is never closed (it is held to the rate).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Final

# Strikes refill at this fraction of the request rate.
STRIKE_REFILL: Final = 0.1


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


def strike_bucket(
    rate: float, strikes: int, *, clock: Callable[[], float] = time.monotonic
) -> TokenBucket:
    """The strikes of a connection limited to `rate` requests/s: `take()` is False once a
    refused client has used up `strikes` refusals faster than they are forgiven (close it)."""
    return TokenBucket(rate * STRIKE_REFILL, strikes, clock=clock)
