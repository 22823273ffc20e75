"""`Driver`: the asyncio task that runs a simulation's engine on the wall clock.

It plans (how long until the next step: now in fast mode when no agent is busy, the next grid
time in realtime, never in manual), sleeps until then or until something wakes it (a command,
a lease ended, a stop), and runs engine steps back to back for at most `step_budget` wall
seconds, each batch holding the session's command lane. A judged simulation's task runs
through its judge (`Judge.drive`), so that the judge's calls never stall the event loop.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from functools import partial
from time import perf_counter
from types import TracebackType
from typing import Any

import anyio
import anyio.abc

from areasync.bridge.environment import AsyncEnvironment
from areasync.engine.clock import VirtualClock, WallSleep
from areasync.policies import LagPolicy
from areasync.protocol.frames import Mode
from areasync.protocol.records import Validation
from areasync.simulation.ending import Ending, EndState
from areasync.simulation.input_records import Exit, RealtimeTick
from areasync.simulation.judging import Judge
from areasync.simulation.lane import CommandLane
from areasync.simulation.lease_keeper import LeaseKeeper
from areasync.simulation.options import CLOCK_PUBLISH_INTERVAL_S, SimulationSettings
from areasync.simulation.publisher import Publisher
from areasync.simulation.record_book import RecordBook
from areasync.simulation.wakeup import Wakeup


class Driver:
    """Runs the simulation's engine: `run()`, or `enter()`/`exit()` for a background task."""

    def __init__(
        self,
        env: AsyncEnvironment,
        clock: VirtualClock,
        lane: CommandLane,
        *,
        book: RecordBook,
        keeper: LeaseKeeper,
        ending: Ending,
        publisher: Publisher,
        wakeup: Wakeup,
        settings: SimulationSettings,
        judge: Judge | None = None,
    ) -> None:
        self._env = env
        self._engine = env.engine
        self._clock = clock
        self._lane = lane
        self._book = book
        self._keeper = keeper
        self._leases = keeper.leases
        self._ending = ending
        self._after_step = ending.after_step  # bound once: it follows every step
        self._publisher = publisher
        self._wakeup = wakeup
        self._step_budget = settings.step_budget
        self._lag_policy = settings.lag_policy
        self._max_lag = settings.max_lag
        self._judge = judge
        # How the driver waits wall seconds of the clock's wall (`Simulation.load`'s `sleep`);
        # None: on the event loop's clock.
        self.wall_sleep: WallSleep | None = None
        self._driving = False
        self._task_group: anyio.abc.TaskGroup | None = None
        # Realtime starts when the driver does, not when the scenario was loaded: until then
        # the clock stands still, so nothing read during setup is ever taken back.
        clock.hold()
        self._held_until_driven = True

    async def run(self) -> Validation | None:
        """Run to the scenario's end (or wait for it, inside `async with`). Returns validation."""
        if self._driving:
            await self._ending.done.wait()
        else:
            self._driving = True
            await self._task()
        return self._ending.validation

    async def enter(self) -> None:
        """Start driving in a background task (`async with sim:`)."""
        self._task_group = anyio.create_task_group()
        await self._task_group.__aenter__()
        # Marked before the task starts, so that a `run()` right after entering waits for it.
        self._driving = True
        self._task_group.start_soon(self._task)

    async def exit(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        """Leave the run (if it still runs: its validation may ask the judge) and wait for the
        background task to end."""
        leaving = self._leave_and_wait(exc_type, exc, tb)
        return await (leaving if self._judge is None else self._judge.bridge(leaving))

    async def _leave_and_wait(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        assert self._task_group is not None
        self.leave()
        self._wakeup.wake()
        return await self._task_group.__aexit__(exc_type, exc, tb)

    def _task(self) -> Coroutine[Any, Any, None]:
        return self._drive() if self._judge is None else self._judge.drive(self._drive())

    def revive(self) -> None:
        """A thawed copy's driver: not driving, with the clock held once as after a load."""
        self._task_group = None
        self._driving = False
        self._held_until_driven = True

    async def _drive(self) -> None:
        clock, ending = self._clock, self._ending
        if self._held_until_driven:
            self._held_until_driven = False
            clock.unhold()
        if self._engine.started and self._env.tick_count == 0 and clock.flowing:
            # The first tick is due now: the clock rests at it, or at a later time if one was
            # read meanwhile (time never goes back).
            first_tick_us = max(self._engine.next_grid_us(), clock.reported_us)
            clock.anchor(first_tick_us, clock.wall())
        try:
            while not ending.ended:
                # Planning may end the session (a lease policy): it is a command like any other.
                async with self._lane:
                    if ending.ended:
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
        if self._ending.ended:
            return
        self._book.record(Exit, internal=True)
        self._ending.end_now(EndState.LEFT, "the simulation context exited")

    def _plan(self) -> float | None:
        """Wall seconds until the next step (0: now; None: only when woken)."""
        engine = self._engine
        if engine.finished or engine.stopping:
            return 0.0
        if self._clock.paused:
            return None
        mode = self._clock.mode
        if mode is Mode.FAST:
            if self._leases:
                return self._lease_delay()
            if engine.next_due_us() is None and not self._env.exit_when_no_events:
                return 0.0 if engine.end_us is not None else None
            return 0.0
        if mode is Mode.REALTIME:
            # Planned holding the lane, whose hold of the clock ends before the driver waits.
            delay = self._clock.wall_delay_until(engine.next_grid_us(), holds=1)
            return 0.0 if delay is None else delay
        return None  # manual: only controls move time

    def _lease_delay(self) -> float | None:
        """Expire the leases past their deadline; wall seconds until the next one expires."""
        now = self._clock.wall()
        for holder in self._leases.expire(now):
            if self._keeper.expire(holder):
                return 0.0
        deadline = self._leases.next_deadline()
        return 0.0 if deadline is None else max(0.0, deadline - now)

    def _run_steps(self) -> None:
        """Engine steps back to back until the budget is spent or the driver must re-plan."""
        # `out_of_time(self.step_budget)`, written out: it is asked after every step.
        deadline = perf_counter() + self._step_budget
        clock, engine, book = self._clock, self._engine, self._book
        while True:
            if clock.runs_fast and not self._leases:
                # `_fast_step`, written out: this runs once per event time.
                book.pending_steps += 1
                more = engine.step_fast() or self._idle_after_fast_step()
            else:
                more = self._held_step()
            self._after_step()
            if not more or perf_counter() > deadline:
                return

    def _held_step(self) -> bool:
        """A step when fast time cannot run freely (realtime, a busy lease, a pause), which may
        still end a finished or stopping run. False when the driver should plan again."""
        clock = self._clock
        engine = self._engine
        if engine.finished or engine.stopping:
            return self._fast_step()
        if clock.mode is not Mode.FAST:
            self._realtime_tick()  # one tick per wake-up: the next one is paced by the wall
            return False
        return False  # an agent holds a busy lease, or the clock is paused

    def _fast_step(self) -> bool:
        """One step whose effect follows from the state alone (a replay runs it again): the
        end, or a step of the queue-based loop. Counted, not logged one by one."""
        self._book.pending_steps += 1
        # `step_fast` ends a finished or stopping run itself (`Engine.finish`).
        return self._engine.step_fast() or self._idle_after_fast_step()

    def _idle_after_fast_step(self) -> bool:
        """After a fast step that found nothing to run: with nothing due ever again, time runs
        out to the scenario's end. False: the driver plans again."""
        engine = self._engine
        if not engine.finished and engine.next_due_us() is None:
            engine.run_out()
        return False

    def fast_step(self) -> None:
        """One fast step and what follows it, as `_run_steps` runs it (a replay runs as many as
        a `steps` record counts); raises what the scenario's code raised, as the live step."""
        self._fast_step()
        self._after_step()

    def _realtime_tick(self) -> None:
        """A tick of the time-based loop, when the wall says it is due. What the wall decided
        (its time, how late it was, whether the clock is published) is logged with it, so that
        a replay runs it with no wall (`tick_as_recorded`)."""
        clock = self._clock
        target = self._engine.next_grid_us()
        late_us = clock.peek_us() - target  # pacing only: not a reading anyone sees
        lag = max(0.0, late_us / 1e6 / clock.speed)
        publish = clock.wall() - self._publisher.last_clock_publish >= CLOCK_PUBLISH_INTERVAL_S
        too_late = self._lag_policy is LagPolicy.STRICT and lag > self._max_lag
        if not too_late and self._lag_policy is not LagPolicy.CATCH_UP:
            # A late tick runs at the latest time already given out, if that is later than its
            # own: what was read stays read.
            clock.anchor(max(target, clock.reported_us), clock.wall())
        self.tick_as_recorded(lag, publish)

    def tick_as_recorded(self, lag: float, publish: bool) -> None:
        """The realtime tick at the clock's time, `lag` late, publishing the clock if
        `publish`, logged (a replay runs it so, from its record)."""
        self._book.record(RealtimeTick, internal=True, lag=lag, publish=publish)
        self._publisher.lag = lag
        if self._lag_policy is LagPolicy.STRICT and lag > self._max_lag:
            self._ending.end_now(
                EndState.TOO_LATE,
                f"realtime tick ran {lag:.3f} s late, above max_lag={self._max_lag}",
            )
            return
        # A tick takes no simulated time: ARE's thread spends ~1 ms of wall time per tick, which
        # at speed k would otherwise become k ms of simulated time inside the tick (the lane
        # holds the clock too; CATCH_UP ticks where the clock stood when the lane was taken).
        with self._clock.held():
            self._engine.step_grid()
        if publish:
            self._publisher.publish_clock()

    async def _sleep(self, delay: float | None) -> None:
        event = self._wakeup.event
        if delay is None:
            await event.wait()
        elif self.wall_sleep is None:
            with anyio.move_on_after(delay):
                await event.wait()
        else:
            await _first_of(event.wait, partial(self.wall_sleep, delay))
        self._wakeup.consumed(event)


async def _first_of(*waits: Callable[[], Awaitable[Any]]) -> None:
    """Return once the first of `waits` is done; the others are cancelled."""
    async with anyio.create_task_group() as tg:

        async def until(wait: Callable[[], Awaitable[Any]]) -> None:
            await wait()
            tg.cancel_scope.cancel()

        for wait in waits:
            tg.start_soon(until, wait)
