"""`Controls`: the clock controls of a simulation (pause, resume, jump, next_event, tick, speed,
mode, stop).

Each takes its turn in the session's command lane. A long `jump`, `next_event` or `tick(n)`
fires its items in pieces of `control_budget` wall seconds and yields to the event loop between
them, holding the lane and the clock throughout (see `areasync.simulation`); a stop announced
meanwhile interrupts it at its next yield (`ControlInterruptedError`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import anyio

from areasync.bridge.environment import AsyncEnvironment
from areasync.engine.clock import ClockError, VirtualClock, to_s, to_us
from areasync.engine.ticks import EngineError
from areasync.protocol.frames import Mode
from areasync.protocol.records import ClockState, Validation
from areasync.simulation.ending import Ending, EndState
from areasync.simulation.errors import BadStateError, ControlInterruptedError, InvalidRequestError
from areasync.simulation.input_records import (
    Interrupted,
    Jump,
    Pause,
    Restore,
    Resume,
    SetMode,
    SetSpeed,
    Stop,
    Tick,
)
from areasync.simulation.lane import CommandLane
from areasync.simulation.options import SimulationSettings, out_of_time
from areasync.simulation.publisher import Publisher
from areasync.simulation.record_book import RecordBook
from areasync.simulation.stops import StopAnnouncements
from areasync.simulation.wakeup import Wakeup


class Controls:
    """The clock controls (see the module docstring). Each async control takes its turn in
    the lane and runs its synchronous body (`pause_now`...), which a replay runs again."""

    def __init__(
        self,
        env: AsyncEnvironment,
        clock: VirtualClock,
        lane: CommandLane,
        *,
        book: RecordBook,
        ending: Ending,
        publisher: Publisher,
        wakeup: Wakeup,
        stops: StopAnnouncements,
        settings: SimulationSettings,
    ) -> None:
        self._env = env
        self._engine = env.engine
        self._clock = clock
        self._lane = lane
        self._book = book
        self._record = book.record
        self._ending = ending
        self._require_live = ending.require_live
        self._publisher = publisher
        self._wakeup = wakeup
        self._stops = stops
        self._control_budget = settings.control_budget
        self._max_ticks = settings.max_ticks
        self._max_jump = settings.max_jump

    def _after_control(self) -> ClockState:
        self._ending.after_step()
        self._publisher.publish_clock()
        self._wakeup.wake()
        return self._publisher.clock_state()

    async def pause(self) -> ClockState:
        async with self._lane:
            return self.pause_now()

    def pause_now(self) -> ClockState:
        self._require_live("pause")
        if not self._env.is_running():
            raise BadStateError(
                f"cannot pause: the simulation is {self._publisher.state}, not running"
            )
        self._record(Pause)
        self._env.pause()
        return self._after_control()

    async def resume(self) -> ClockState:
        async with self._lane:
            return self.resume_now()

    def resume_now(self) -> ClockState:
        self._require_live("resume")
        if not self._env.is_paused():
            raise BadStateError(
                f"cannot resume: the simulation is {self._publisher.state}, not paused; "
                "pause it first"
            )
        self._record(Resume)
        self._env.resume()
        return self._after_control()

    def pause_restored(self) -> None:
        """A restored realtime session comes back paused (its downtime is no simulated time),
        without a stream item: the stream is the original's until someone resumes it."""
        self._record(Restore, paused=True)
        self._env.pause()

    def pause_if_restored_running(self) -> None:
        """A session rebuilt from its records: a realtime one still running comes back paused."""
        if not self._ending.ended and self._clock.mode is Mode.REALTIME and not self._clock.paused:
            self.pause_restored()

    async def jump(
        self, *, to: float | None = None, by: float | None = None, inclusive: bool = True
    ) -> ClockState:
        """Move simulated time forward to `to` or by `by` seconds; due items fire on the way.

        `inclusive=False` stops just before the target's own items: everything due strictly
        before it fires, the clock rests at exactly the target, and what is due there (events,
        a wait's timeout, the time-based loop's tick) runs at that time on the next step - in
        fast mode once no agent is busy, in manual mode on the next `tick`/`jump`. A tool call
        made in between is logged at the target, ahead of its items, as ARE's oracle run
        orders an action first in its tick.

        A long jump yields to the event loop every `control_budget` but holds the lane: the
        session's other commands run after it (see `areasync.simulation`).
        """
        _check_jump_request(to, by, inclusive)
        async with self._lane:
            self._require_live("jump")
            self._give_way_to_a_stop("jump")
            # Held for the whole jump: in realtime, the wall time its pieces and yields take
            # must not flow into simulated time (nor a `by` target move while it runs).
            with self._clock.held():
                target = self._jump_target(to, by, inclusive)
                try:
                    await self._advance(target, inclusive, "jump")
                except ClockError as exc:
                    raise InvalidRequestError(str(exc)) from exc
            return self._after_control()

    def _jump_target(self, to: float | None, by: float | None, inclusive: bool) -> int:
        """Where a jump goes (checked, and the jump logged); the clock is held."""
        now = self._clock.now_us()
        if by is not None:
            target = now + to_us(by)
        else:
            assert to is not None  # `_check_jump_request`: exactly one of them
            target = to_us(float(to))
        if target < now:
            raise InvalidRequestError(
                f"cannot jump to {to_s(target)}: the clock is already at {to_s(now)}; "
                "jumps only move time forward"
            )
        self._check_span(now, target, "jump")
        self._record(Jump, to=to, by=by, inclusive=inclusive)
        return target

    async def next_event(self) -> ClockState:
        """Jump to the next due item (event or wait timeout) and fire it."""
        async with self._lane:
            self._require_live("jump to the next event")
            self._give_way_to_a_stop("next_event")
            if self._engine.next_due_us() is None:
                raise BadStateError(
                    "no event is scheduled, so there is no next event to jump to; jump by an amount"
                )
            with self._clock.held():
                target = self._next_event_target()
                await self._advance(target, True, "next_event")
            return self._after_control()

    def _next_event_target(self) -> int:
        """Where `next_event` goes (checked, and logged); the clock is held."""
        try:
            target = self._engine.next_event_target_us()
        except EngineError as exc:
            raise BadStateError(str(exc)) from exc
        self._check_span(self._clock.now_us(), target, "next_event")
        self._record(Jump, next_event=True)
        return target

    async def tick(self, n: int = 1) -> ClockState:
        """Run `n` ticks of ARE's time-based loop (one every `time_increment_in_seconds`).

        Many ticks yield to the event loop every `control_budget`, holding the lane, as a jump;
        a stop announced meanwhile interrupts them (`ControlInterruptedError`). At most
        `max_ticks` per call."""
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise InvalidRequestError(f"tick needs a whole number of ticks >= 1, got {n!r}")
        if n > self._max_ticks:
            raise InvalidRequestError(
                f"tick n={n} is above this session's limit of {self._max_ticks} ticks per "
                f"control (max_ticks); nothing was done: split it into ticks of at most "
                f"{self._max_ticks}, or jump"
            )
        async with self._lane:
            self._require_live("tick")
            self._give_way_to_a_stop("tick")
            self._record(Tick, n=n)
            with self._clock.held():
                done = self._ticks(n, self._piece())
                if done < n and not self._engine.finished:
                    with anyio.CancelScope(shield=True):
                        while done < n and not self._engine.finished:
                            await anyio.lowlevel.checkpoint()
                            self._give_way_to_a_stop("tick", f"{done} of its {n} ticks ran", done)
                            done += self._ticks(n - done, self._piece())
            return self._after_control()

    def _ticks(self, n: int, out_of_time: Callable[[], bool]) -> int:
        """Up to `n` grid ticks, fewer when out of time; how many ran (n when the run ended)."""
        for i in range(n):
            if not self._engine.step_grid():
                return n
            self._ending.after_step()
            if out_of_time():
                return i + 1
        return n

    def set_speed(self, speed: float) -> ClockState:
        """Change the realtime speed (simulated seconds per wall second); never a jump.

        Synchronous: call it holding `lane` to order it among the session's commands."""
        self._require_live("set the speed")
        try:
            self._clock.set_speed(speed)
        except ClockError as exc:
            raise InvalidRequestError(str(exc)) from exc
        self._record(SetSpeed, speed=speed)
        return self._after_control()

    def set_mode(self, mode: Mode | str) -> ClockState:
        """Change the clock's mode. Synchronous, as `set_speed`."""
        self._require_live("change the mode")
        try:
            new_mode = Mode(mode)
        except ValueError as exc:
            raise InvalidRequestError(
                f"unknown mode {mode!r}: use one of {', '.join(m.value for m in Mode)}"
            ) from exc
        self._clock.set_mode(new_mode)
        self._record(SetMode, mode=new_mode.value)
        return self._after_control()

    async def stop(self, reason: str = "stopped by request") -> Validation | None:
        """End the session now (ARE's `stop`); returns the validation result. `reason` goes
        on the `ended` item. It takes its turn in the lane, but a long control running (or
        waiting) ahead of it gives way at its next yield (see `areasync.simulation`)."""
        withdraw = self.announce_stop()
        try:
            async with self._lane:
                return self.stop_now(reason)
        finally:
            withdraw()

    def stop_now(self, reason: str) -> Validation | None:
        self._require_live("stop")
        self._record(Stop, reason=reason)
        self._ending.end_now(EndState.STOPPED, reason)
        return self._ending.validation

    def announce_stop(self) -> Callable[[], None]:
        """A stop is on its way: long controls give way to it from their next yield on.

        `stop()` announces itself; a caller that has a stop in hand but must first run what
        came before it (the service, for a stop frame read while a control of its own
        connection runs) announces it early. Returns the function that withdraws the
        announcement (idempotent); call it once the stop has run or will not."""
        return self._stops.announce()

    @property
    def stop_announced(self) -> bool:
        """True while a stop is on its way (see `announce_stop`)."""
        return bool(self._stops)

    def _piece(self) -> Callable[[], bool]:
        """A fresh `control_budget` of wall time, as the engine's `out_of_time` callable."""
        return out_of_time(self._control_budget)

    async def _advance(self, target: int, inclusive: bool, action: str) -> None:
        """The engine's jump to `target`, in pieces of `control_budget`, yielding in between.

        The caller holds the lane and the clock. The first piece raises if the jump cannot be
        made (nothing changed then); once items have fired, the rest runs to its end, shielded
        from cancellation - the jump is one command - unless a stop is announced: then it ends
        at the yield where it sees it (`ControlInterruptedError`), where it got to.
        """
        engine = self._engine
        fired = 0

        def piece() -> Callable[[], bool]:
            spent = out_of_time(self._control_budget)

            def counted() -> bool:  # asked once per item fired: a replay stops where this did
                nonlocal fired
                fired += 1
                return spent()

            return counted

        if engine.advance_to(target, inclusive=inclusive, out_of_time=piece()):
            return
        with anyio.CancelScope(shield=True):
            while True:
                await anyio.lowlevel.checkpoint()
                self._give_way_to_a_stop(
                    action, f"{to_s(target - self._clock.now_us()):g} s short of its target", fired
                )
                if engine.advance_to(target, inclusive=inclusive, out_of_time=piece()):
                    return

    def _give_way_to_a_stop(self, action: str, progress: str | None = None, done: int = 0) -> None:
        """Raise `ControlInterruptedError` if a stop is announced. Called when a control gets
        the lane (`progress` None: it has done nothing, and does nothing) and at each of its
        yields (the lane and the clock are the caller's to release)."""
        if not self._stops:
            return
        if progress is None:
            raise ControlInterruptedError(
                f"{action} not run: a stop is on its way (it ends the session, or suspends it "
                "for a server restart); nothing was done"
            )
        # `done`: the items (ticks, for `tick`) it ran, where a replay stops it too.
        self._record(Interrupted, control=action, progress=progress, done=done)
        self._after_control()
        raise ControlInterruptedError(
            f"{action} interrupted by a stop (it ends the session, or suspends it for a server "
            f"restart): {progress}; the clock rests "
            f"at {self._clock.now():.6f}, and the items it fired stay fired and on the stream"
        )

    def _check_span(self, now: int, target: int, action: str) -> None:
        """Refuse (before anything changes) a jump that would move the clock past `max_jump`."""
        span = to_s(target - now)
        if span > self._max_jump:
            raise InvalidRequestError(
                f"{action} would move the clock {span:g} simulated seconds, above this "
                f"session's limit of {self._max_jump:g} s per jump (max_jump); nothing was "
                f"done: split it into jumps of at most {self._max_jump:g} s"
            )

    # -- a replay's (`Simulation.apply_record`): what the live control did, as it did it ------

    def apply_jump(self, jump: Jump, interrupted: Interrupted | None) -> None:
        """Run a jump as `jump` logged it, stopped where `interrupted` says the live one was."""
        with self._clock.held():
            if jump.next_event:
                target, inclusive = self._next_event_target(), True
            else:
                inclusive = jump.inclusive
                target = self._jump_target(jump.to, jump.by, inclusive)
            if interrupted is None:
                self._engine.advance_to(target, inclusive=inclusive)
            else:
                fired = 0
                limit = interrupted.done

                def counted() -> bool:
                    nonlocal fired
                    fired += 1
                    return fired >= limit

                self._engine.advance_to(target, inclusive=inclusive, out_of_time=counted)
        self._end_applied_control(interrupted)

    def apply_tick(self, n: int, interrupted: Interrupted | None) -> None:
        """Run `n` ticks as logged, stopped where `interrupted` says the live ones were."""
        self._require_live("tick")
        self._record(Tick, n=n)
        with self._clock.held():
            self._ticks(n if interrupted is None else interrupted.done, lambda: False)
        self._end_applied_control(interrupted)

    def _end_applied_control(self, interrupted: Interrupted | None) -> None:
        if interrupted is not None:
            self._book.record_again(interrupted)
        self._after_control()


def _check_jump_request(to: float | None, by: float | None, inclusive: bool) -> None:
    """Refuse a malformed jump before it takes its turn: exactly one finite target."""
    if (to is None) == (by is None):
        raise InvalidRequestError("jump needs exactly one of `to` (a time) or `by` (seconds)")
    if not isinstance(inclusive, bool):
        raise InvalidRequestError(f"jump's `inclusive` must be true or false, got {inclusive!r}")
    value = to if to is not None else by
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        raise InvalidRequestError(f"jump target must be a finite number, got {value!r}")
    if by is not None and by < 0:
        raise InvalidRequestError(
            f"cannot jump by {by} s: jumps only move time forward; use a positive amount"
        )
