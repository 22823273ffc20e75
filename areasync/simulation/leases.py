"""`Leases`: which agents are busy, and until when they may stay so (fast mode).

In fast mode simulated time stands still while an agent holds a lease (it is thinking, or its
tool call is on its way): the driver jumps to the next due item only once no lease is held. A
lease that outlives its deadline (wall seconds) expires, so a crashed agent cannot freeze a
session for good; what then happens is the session's `LeasePolicy`. `Leases` is the pure
bookkeeping (the wall time is passed in); `LeaseKeeper`, the simulation's part that begins, ends
and expires them, logging each and waking the driver.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from areasync.loop.clock import VirtualClock
from areasync.policies import LeasePolicy
from areasync.simulation.ending import Ending, EndState
from areasync.simulation.input_records import LeaseBegin, LeaseEnd, LeaseExpired
from areasync.simulation.record_book import RecordBook
from areasync.simulation.wakeup import Wakeup


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


class LeaseKeeper:
    """A simulation's leases: begun, ended and expired as its agents and its driver ask, each
    logged (a replay begins and ends them again) and waking the driver."""

    def __init__(
        self,
        leases: Leases,
        clock: VirtualClock,
        *,
        book: RecordBook,
        wakeup: Wakeup,
        policy: LeasePolicy,
        ending: Ending,
    ) -> None:
        self.leases = leases
        self._clock = clock
        self._book = book
        self._wakeup = wakeup
        self.policy = policy
        self._ending = ending

    def begin(self, holder: str) -> None:
        """`holder` is busy: in fast mode, time stands still until it ends its lease (or the
        lease times out)."""
        if self._ending.ended:
            return
        self._book.record(LeaseBegin, internal=True, holder=holder)
        self.leases.begin(holder, self._clock.wall())
        self._wakeup.wake()

    def end(self, holder: str) -> None:
        """`holder` is idle; once no lease is held, a fast session jumps to the next due item."""
        if holder not in self.leases.deadlines():
            return
        self._book.record(LeaseEnd, internal=True, holder=holder)
        self.leases.end(holder)
        self._wakeup.wake()

    @asynccontextmanager
    async def busy(self, holder: str = "agent") -> AsyncIterator[None]:
        """A lease for the duration of the block."""
        self.begin(holder)
        try:
            yield
        finally:
            self.end(holder)

    def expire(self, holder: str) -> bool:
        """`holder`'s lease has expired (and is no longer held); whether the run ended."""
        self._book.record(LeaseExpired, expired=holder, policy=self.policy.value)
        if self.policy is LeasePolicy.END:
            self._ending.end_now(
                EndState.LEASE_EXPIRED, f"agent {holder!r} held its busy lease past the deadline"
            )
            return True
        return False

    def revive(self) -> None:
        """A thawed copy's leases: the ones held, held again with deadlines counted from now."""
        wall = self._clock.wall()
        for holder in self.leases.deadlines():
            self.leases.begin(holder, wall)
