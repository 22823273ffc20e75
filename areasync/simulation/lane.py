"""`CommandLane`: the FIFO lock that orders one session's commands.

Every mutating method of a `Simulation` (tool calls, user messages, controls) and each batch of
the driver's steps holds the lane while it runs, so commands apply atomically and in the order
they arrive, never inside a tick or inside one another, even when one of them yields.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from types import TracebackType

import anyio

from areasync.bridge.sandbox.audit import Sandbox
from areasync.engine.clock import VirtualClock


class CommandLane:
    """A FIFO lock for one session's commands: `async with lane:` runs a command in turn.

    Free, it is taken with no await at all (no checkpoint, no task switch): the common case of
    one command at a time costs a flag. Held, a taker waits in line; leaving it hands the lane
    straight to the longest waiter, so nobody can overtake in between and commands run in the
    order they asked. (anyio's `Lock(fast_acquire=True)` behaves the same, FIFO with hand-off,
    but costs several times more per uncontended round trip: it tracks the owner task and
    checks for cancellation.) Not re-entrant: a command must not await another command.
    """

    __slots__ = (
        "_busy",
        "_clock",
        "_entered_at",
        "_sandbox",
        "_scope",
        "_started",
        "_waiters",
        "charges_time",
        "on_release",
        "work_s",
    )

    def __init__(self, sandbox: Sandbox | None = None, clock: VirtualClock | None = None) -> None:
        self._busy = False
        self._waiters: collections.deque[anyio.Event] = collections.deque()
        # Whoever holds the lane runs the session's code: inside the session's sandbox.
        self._sandbox = sandbox
        self._scope: AbstractContextManager[None] | None = None
        # A command takes no simulated time: the clock stands still while the lane is held, so
        # every reading a command (or a batch of steps) takes is the same, and the one its
        # record logs is all a replay needs to reproduce them (`areasync.simulation.replay`).
        self._clock = clock
        # Whether the wall time a command takes becomes simulated time once it is done
        # (`LagPolicy.CATCH_UP`: time flows through ticks, as ARE's does).
        self.charges_time = False
        self._entered_at = 0.0
        # Wall seconds spent holding the lane, all told (less the snapshots' copies, which
        # take theirs back out), and a hook called each time it is left (what a session's
        # snapshots are paced by: `areasync.simulation.snapshots`).
        self.work_s = 0.0
        self._started = 0.0
        self.on_release: Callable[[], None] | None = None

    def copy_reduction(self) -> tuple[object, ...]:
        """How a copy of its session stores the lane (`areasync.bridge.state_copy.freeze`):
        as a new, free lane over the copy's sandbox and clock, with no waiter, no work done
        and no hook (a lane held while its session is copied is the copier's, not the
        copy's)."""
        return _free_lane, (self._sandbox, self._clock, self.charges_time)

    def locked(self) -> bool:
        return self._busy

    @property
    def waiting(self) -> int:
        """How many commands wait for the lane."""
        return len(self._waiters)

    async def __aenter__(self) -> None:
        if not self._busy:
            self._busy = True
            self._enter_sandbox()
            return
        turn = anyio.Event()
        self._waiters.append(turn)
        try:
            await turn.wait()
        except BaseException:
            if turn.is_set():
                self._pass_on()  # handed the lane, but cancelled before running: pass it on
            else:
                self._waiters.remove(turn)
            raise
        self._enter_sandbox()

    def _enter_sandbox(self) -> None:
        self._started = time.perf_counter()
        if self._clock is not None:
            self._clock.hold(bind=False)
            self._entered_at = self._clock.wall()
        if self._sandbox is not None:
            self._scope = self._sandbox.entered()
            self._scope.__enter__()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        scope, self._scope = self._scope, None
        if scope is not None:
            scope.__exit__(None, None, None)
        if self._clock is not None:
            self._clock.unhold(since=self._entered_at if self.charges_time else None)
        self.work_s += time.perf_counter() - self._started
        self._pass_on()
        if self.on_release is not None:
            self.on_release()

    def _pass_on(self) -> None:
        if self._waiters:
            self._waiters.popleft().set()  # still busy: it is the next command's now
        else:
            self._busy = False


def _free_lane(
    sandbox: Sandbox | None, clock: VirtualClock | None, charges_time: bool
) -> CommandLane:
    """A free lane (a copy's: `CommandLane.copy_reduction`)."""
    lane = CommandLane(sandbox, clock)
    lane.charges_time = charges_time
    return lane
