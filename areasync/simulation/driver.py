"""`Driver`: the asyncio task that runs a simulation's engine on the wall clock.

It plans (how long until the next step: now in fast mode when no agent is busy, the next grid
time in realtime, never in manual), sleeps until then or until something wakes it (a command,
a lease ended, a stop), and runs engine steps back to back for at most `step_budget` wall
seconds, each batch holding the session's command lane.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial
from time import perf_counter
from types import TracebackType
from typing import Any, Self

import anyio
import anyio.abc

from areasync.policies import LagPolicy, LeasePolicy
from areasync.protocol.frames import Mode
from areasync.simulation.core import SimulationCore
from areasync.simulation.ending import EndState
from areasync.simulation.options import CLOCK_PUBLISH_INTERVAL_S
from areasync.simulation.records import Exit, LeaseExpired, RealtimeTick


class Driver(SimulationCore):
    """Runs the simulation: `await sim.run()`, or `async with sim:` for a background task."""

    async def run(self) -> dict[str, Any] | None:
        """Run to the scenario's end (or wait for it, inside `async with`). Returns validation."""
        if self._driving:
            await self._ended.wait()
        else:
            self._driving = True
            await self._drive()
        return self.validation

    async def __aenter__(self) -> Self:
        self._task_group = anyio.create_task_group()
        await self._task_group.__aenter__()
        # Marked before the task starts, so that a `run()` right after entering waits for it.
        self._driving = True
        self._task_group.start_soon(self._drive)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        assert self._task_group is not None
        self.leave()
        self._wake()
        return await self._task_group.__aexit__(exc_type, exc, tb)

    async def _drive(self) -> None:
        if self._held_until_driven:
            self._held_until_driven = False
            self.clock.unhold()
        if self.engine.started and self.env.tick_count == 0 and self.clock.flowing:
            # The first tick is due now: the clock rests at it, or at a later time if one was
            # read meanwhile (time never goes back).
            first_tick_us = max(self.engine.next_grid_us(), self.clock.reported_us)
            self.clock.anchor(first_tick_us, self.clock.wall())
        try:
            while not self.ended:
                # Planning may end the session (a lease policy): it is a command like any other.
                async with self._lane:
                    if self.ended:
                        break
                    delay = self._plan()
                    if delay is not None and delay <= 0:
                        self._run_steps()
                if delay is None or delay > 0:
                    await self._sleep(delay)
                    continue
                await anyio.lowlevel.checkpoint()
        finally:
            self._driving = False

    def leave(self) -> None:
        """End the run because its `async with` block exited while it still ran."""
        if self.ended:
            return
        self._record(Exit, internal=True)
        self._end_now(EndState.LEFT, "the simulation context exited")

    def _plan(self) -> float | None:
        """Wall seconds until the next step (0: now; None: only when woken)."""
        engine = self.engine
        if engine.finished or engine.stopping:
            return 0.0
        if self.clock.paused:
            return None
        mode = self.clock.mode
        if mode is Mode.FAST:
            if self._leases:
                return self._lease_delay()
            if engine.next_due_us() is None and not self.env.exit_when_no_events:
                return 0.0 if engine.end_us is not None else None
            return 0.0
        if mode is Mode.REALTIME:
            # Planned holding the lane, whose hold of the clock ends before the driver waits.
            delay = self.clock.wall_delay_until(engine.next_grid_us(), holds=1)
            return 0.0 if delay is None else delay
        return None  # manual: only controls move time

    def _lease_delay(self) -> float | None:
        """Expire the leases past their deadline; wall seconds until the next one expires."""
        now = self.clock.wall()
        for holder in self._leases.expire(now):
            if self._expire_lease(holder):
                return 0.0
        deadline = self._leases.next_deadline()
        return 0.0 if deadline is None else max(0.0, deadline - now)

    def _expire_lease(self, holder: str) -> bool:
        """`holder`'s lease has expired (and is no longer held); whether the run ended."""
        self._record(LeaseExpired, expired=holder, policy=self.lease_policy.value)
        if self.lease_policy is LeasePolicy.END:
            self._end_now(
                EndState.LEASE_EXPIRED, f"agent {holder!r} held its busy lease past the deadline"
            )
            return True
        return False

    def _run_steps(self) -> None:
        """Engine steps back to back until the budget is spent or the driver must re-plan."""
        # `out_of_time(self.step_budget)`, written out: it is asked after every step.
        deadline = perf_counter() + self.step_budget
        clock, engine = self.clock, self.engine
        while True:
            if clock.mode is Mode.FAST and not self._leases and not clock.paused:
                # `_step`'s first branch and `_fast_step`, written out: once per event time.
                self._pending_steps += 1
                more = engine.step_fast() or self._idle_after_fast_step()
            else:
                more = self._step()
            self._after_step()
            if not more or perf_counter() > deadline:
                return

    def _step(self) -> bool:
        """One engine step. False when the driver should plan again (wait, or done)."""
        clock = self.clock
        if clock.mode is Mode.FAST and not self._leases and not clock.paused:
            return self._fast_step()  # which ends a finished or stopping run itself
        engine = self.engine
        if engine.finished or engine.stopping:
            return self._fast_step()
        if clock.mode is not Mode.FAST:
            self._realtime_tick()  # one tick per wake-up: the next one is paced by the wall
            return False
        return False  # an agent holds a busy lease, or the clock is paused

    def _fast_step(self) -> bool:
        """One step whose effect follows from the state alone (a replay runs it again): the
        end, or a step of the queue-based loop. Counted, not logged one by one."""
        self._pending_steps += 1
        # `step_fast` ends a finished or stopping run itself (`Engine.finish`).
        return self.engine.step_fast() or self._idle_after_fast_step()

    def _idle_after_fast_step(self) -> bool:
        """After a fast step that found nothing to run: with nothing due ever again, time runs
        out to the scenario's end. False: the driver plans again."""
        engine = self.engine
        if not engine.finished and engine.next_due_us() is None:
            engine.run_out()
        return False

    def replay_fast_step(self) -> None:
        """One fast step and what follows it, as `_run_steps` ran it (a replay runs as many as
        a `steps` record counts); raises what the scenario's code raised, as the live step."""
        self._fast_step()
        self._after_step()

    def _realtime_tick(self) -> None:
        """A tick of the time-based loop, when the wall says it is due. What the wall decided
        (its time, how late it was, whether the clock is published) is logged with it, so that
        a replay runs it with no wall (`_tick_as_recorded`)."""
        target = self.engine.next_grid_us()
        late_us = self.clock.peek_us() - target  # pacing only: not a reading anyone sees
        lag = max(0.0, late_us / 1e6 / self.clock.speed)
        publish = self.clock.wall() - self._last_clock_publish >= CLOCK_PUBLISH_INTERVAL_S
        too_late = self.lag_policy is LagPolicy.STRICT and lag > self.max_lag
        if not too_late and self.lag_policy is not LagPolicy.CATCH_UP:
            # A late tick runs at the latest time already given out, if that is later than its
            # own: what was read stays read.
            self.clock.anchor(max(target, self.clock.reported_us), self.clock.wall())
        self._record(RealtimeTick, internal=True, lag=lag, publish=publish)
        self._tick_as_recorded(lag, publish)

    def _tick_as_recorded(self, lag: float, publish: bool) -> None:
        """The realtime tick at the clock's time, `lag` late, publishing the clock if `publish`."""
        self.lag = lag
        if self.lag_policy is LagPolicy.STRICT and lag > self.max_lag:
            self._end_now(
                EndState.TOO_LATE,
                f"realtime tick ran {lag:.3f} s late, above max_lag={self.max_lag}",
            )
            return
        # A tick takes no simulated time: ARE's thread spends ~1 ms of wall time per tick, which
        # at speed k would otherwise become k ms of simulated time inside the tick (the lane
        # holds the clock too; CATCH_UP ticks where the clock stood when the lane was taken).
        with self.clock.held():
            self.engine.step_grid()
        if publish:
            self._publish_clock()

    async def _sleep(self, delay: float | None) -> None:
        event = self._wake_event
        if delay is None:
            await event.wait()
        elif self.wall_sleep is None:
            with anyio.move_on_after(delay):
                await event.wait()
        else:
            await _first_of(event.wait, partial(self.wall_sleep, delay))
        if self._wake_event is event and event.is_set():
            self._wake_event = anyio.Event()


async def _first_of(*waits: Callable[[], Awaitable[Any]]) -> None:
    """Return once the first of `waits` is done; the others are cancelled."""
    async with anyio.create_task_group() as tg:

        async def until(wait: Callable[[], Awaitable[Any]]) -> None:
            await wait()
            tg.cancel_scope.cancel()

        for wait in waits:
            tg.start_soon(until, wait)
