"""`Leases`: which agents are busy, and until when they may stay so (fast mode).

In fast mode simulated time stands still while an agent holds a lease (it is thinking, or its
tool call is on its way): the driver jumps to the next due item only once no lease is held. A
lease that outlives its deadline (wall seconds) expires, so a crashed agent cannot freeze a
session for good; what then happens is the session's `LeasePolicy`. `Leases` is the pure
bookkeeping (the wall time is passed in); the simulation's part that begins, ends and expires
them is `lease_keeper.LeaseKeeper`.
"""

from __future__ import annotations


class Leases:
    """Busy holders and their wall-clock deadlines."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self._deadlines: dict[str, float] = {}

    def __bool__(self) -> bool:
        return bool(self._deadlines)

    def __len__(self) -> int:
        return len(self._deadlines)

    def begin(self, holder: str, now: float) -> None:
        """`holder` is busy from wall time `now` (a held lease starts over)."""
        self._deadlines[holder] = now + self.timeout

    def end(self, holder: str) -> bool:
        """`holder` is idle; whether it held a lease."""
        return self._deadlines.pop(holder, None) is not None

    def expire(self, now: float) -> list[str]:
        """End every lease whose deadline has passed at `now`; their holders."""
        expired = [holder for holder, deadline in self._deadlines.items() if deadline <= now]
        for holder in expired:
            del self._deadlines[holder]
        return expired

    def next_deadline(self) -> float | None:
        return min(self._deadlines.values(), default=None)

    def clear(self) -> None:
        self._deadlines.clear()

    def deadlines(self) -> dict[str, float]:
        """A copy: holder -> wall deadline."""
        return dict(self._deadlines)
