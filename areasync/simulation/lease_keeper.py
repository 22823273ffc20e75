"""`LeaseKeeper`: the part of a simulation that begins, ends and expires its agents' busy
leases (fast mode: `leases.Leases` is the bookkeeping), logging each (a replay begins and ends
them again) and waking the driver; a lease that expires under `LeasePolicy.END` ends the run.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from areasync.engine.clock import VirtualClock
from areasync.policies import LeasePolicy
from areasync.simulation.ending import Ending, EndState
from areasync.simulation.input_records import LeaseBegin, LeaseEnd, LeaseExpired
from areasync.simulation.leases import Leases
from areasync.simulation.record_book import RecordBook
from areasync.simulation.wakeup import Wakeup


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
