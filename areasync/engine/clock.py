"""The virtual clock: simulated time as a pure function of a wall-clock reading.

ARE's TimeManager reads `time.time()` everywhere, so its simulated time is tied to a background
thread that sleeps one real second per tick. Here simulated time is

    now = v0 + rate * (wall() - r0)

kept in integer microseconds so that jumps, ticks and comparisons are exact, and handed to ARE as
float seconds. `rate` is the speed in `realtime` mode and zero otherwise (or while paused): in
`fast` and `manual` modes time moves only when the engine sets it. Every control re-anchors
`(v0, r0)` first, so no control ever makes time jump by itself.

Time never goes backwards, and the clock itself guarantees it: `now_us()` is monotonic
non-decreasing for the life of a run, and every control that moves time refuses (`ClockError`,
the clock unchanged) to set it below the latest reading it has given out. Realtime pacing
re-anchors the flow to a tick's scheduled time (`anchor`); a tick that runs late after someone
has already read a later time (a command logged at 1.5 s, then the tick due at 1.0 s) must run
at that reading instead, as ARE's own ticks run at whatever its wall clock says when its thread
wakes: the pacing code asks for `max(scheduled, reported_us)` itself. A reading nobody took
cannot be contradicted, so pacing decisions use `peek_us()`, which gives none out: a late tick
that nobody saw the clock pass still runs at its own time. Only `restart` (a new run, ARE's
`TimeManager.reset`) sets time back.

The clock takes its wall function as a parameter: it does no I/O and never sleeps. The async
driver asks `wall_delay_until()` how long to wait and does the waiting itself: on the event
loop's clock, which the default wall (`time.monotonic`) matches, or with the `WallSleep` given
beside an injected wall (a test's wall that moves only when told: its driver then waits for
it, instead of polling a reading that does not move).
"""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from areasync.protocol.frames import Mode

US_PER_S = 1_000_000

# Waits the given number of seconds of a wall (see the module docstring).
WallSleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True)
class Wall:
    """The wall a session reads (`now`) and its driver waits on (`sleep`; None: the event
    loop's clock, which the default `now` matches)."""

    now: Callable[[], float] = time.monotonic
    sleep: WallSleep | None = None


# The real wall: `time.monotonic`, waited on by the event loop.
REAL_WALL = Wall()


def to_us(seconds: float) -> int:
    """Seconds (ARE's float timestamps) to integer microseconds, rounded to the nearest."""
    return round(seconds * US_PER_S)


def to_s(us: int) -> float:
    return us / US_PER_S


class ClockError(ValueError):
    """A clock control that cannot be applied; the clock is left unchanged."""


class VirtualClock:
    """Exact simulated time, anchored to a wall clock only while it flows (realtime, unpaused)."""

    def __init__(
        self,
        start: float,
        *,
        mode: Mode = Mode.FAST,
        speed: float = 1.0,
        wall: Callable[[], float] = time.monotonic,
    ) -> None:
        _check_speed(speed)
        self._wall = wall
        self._v0 = to_us(start)
        self._r0 = wall()
        self._mode = Mode(mode)
        self._speed = float(speed)
        self._paused = False
        # Fast and not paused (the driver's question before every fast step), kept with the
        # two it follows.
        self.runs_fast = self._mode is Mode.FAST
        self._held = 0
        # The latest time `now_us()` has given out: no control sets the clock below it.
        self._reported_us = self._v0
        # The run has ended (`freeze`): its time is where it ended, whatever the wall does.
        self._frozen = False
        # Total simulated time added by jumps (`set_us`), as opposed to time that flowed. The
        # time-based loop shifts its tick schedule by every jump, as ARE's does.
        self.jumped_us = 0

    # -- reading ---------------------------------------------------------------------------

    @property
    def mode(self) -> Mode:
        return self._mode

    @property
    def speed(self) -> float:
        return self._speed

    @property
    def paused(self) -> bool:
        return self._paused

    @property
    def flowing(self) -> bool:
        """True when simulated time advances with the wall clock."""
        return (
            self._mode is Mode.REALTIME and not self._paused and not self._held and not self._frozen
        )

    @property
    def frozen(self) -> bool:
        return self._frozen

    def now_us(self) -> int:
        """Simulated time now, as given out to everyone: never less than a previous answer."""
        # `latest_us` written out in full: ARE reads the time several times per event, and
        # the calls (`peek_us`, `flowing`, `max`) were most of what a reading cost.
        if self._mode is Mode.REALTIME and not self._paused and not self._held and not self._frozen:
            now = self._v0 + math.floor(self._speed * (self._wall() - self._r0) * US_PER_S)
        else:
            now = self._v0
        if now < self._reported_us:
            return self._reported_us
        self._reported_us = now
        return now

    def peek_us(self) -> int:
        """Simulated time now, for pacing decisions that no one else sees (how late a tick is,
        how long to sleep): unlike `now_us()` it does not bind later anchors (module docstring)."""
        if not self.flowing:
            return self._v0
        # Floor, not round: a reading must never overshoot a deadline the engine has not reached.
        return self._v0 + math.floor(self._speed * (self._wall() - self._r0) * US_PER_S)

    def now(self) -> float:
        return to_s(self.now_us())

    def latest_us(self) -> int:
        """What `now_us()` would answer, without binding it: for readings nobody logs
        (listings, ARE's `time.time()`), which must not change what later readings may be."""
        return max(self.peek_us(), self._reported_us)

    @property
    def reported_us(self) -> int:
        """The latest time `now_us()` has given out (readings never fall below it)."""
        return self._reported_us

    def wall_delay_until(self, t_us: int, *, holds: int = 0) -> float | None:
        """Wall seconds until simulated time reaches `t_us`; None if time is not flowing.

        `holds`: how many holds to see through (the caller's own, such as a session's command
        lane, which ends before it waits: time flows again from where the hold began)."""
        if self._mode is not Mode.REALTIME or self._paused or self._frozen or self._held > holds:
            return None
        flowed = math.floor(self._speed * (self._wall() - self._r0) * US_PER_S)
        remaining = t_us - max(self._v0 + flowed, self._reported_us)
        if remaining <= 0:
            return 0.0
        return remaining / US_PER_S / self._speed

    # -- controls (each re-anchors first) ---------------------------------------------------

    def _reanchor(self) -> None:
        self._v0 = self.now_us()
        self._r0 = self._wall()

    def set_us(self, t_us: int) -> None:
        """Move simulated time to `t_us` (a jump or a tick); never backwards."""
        now = self.now_us()
        if t_us < now:
            raise ClockError(
                f"cannot move the clock backwards from {to_s(now)} to {to_s(t_us)}; "
                "simulated time only moves forward"
            )
        self.jumped_us += t_us - now
        self._v0 = t_us
        if self._mode is Mode.REALTIME:
            # Only realtime reads `_r0`, and every change that makes time flow (`set_mode`,
            # `resume`, `unhold`, `restart`) anchors it anew: a fast jump reads no wall.
            self._r0 = self._wall()

    def advance_us(self, t_us: int) -> int:
        """`set_us(t_us)` if `t_us` is later than now, else nothing; the time now, after.

        A fast step's move (`Engine.step_fast`): one reading of the clock, not two."""
        if self._mode is Mode.REALTIME:
            now = self.now_us()
        else:  # `now_us` of a clock that does not flow, written out: once per fast step
            now = self._v0
            if now < self._reported_us:
                now = self._reported_us
            else:
                self._reported_us = now
        if t_us <= now:
            return now
        self.jumped_us += t_us - now
        self._v0 = t_us
        if self._mode is Mode.REALTIME:  # as in `set_us`
            self._r0 = self._wall()
        return t_us

    def anchor(self, t_us: int, wall: float) -> None:
        """Declare that simulated time `t_us` corresponds to wall time `wall` (realtime pacing).

        Refused (`ClockError`, nothing changed) below a time already given out by `now_us()`:
        a caller that wants "this time, or the latest reading if later" says so itself.
        """
        if t_us < self._reported_us:
            raise ClockError(
                f"cannot anchor the clock at {to_s(t_us)}: it has already reported "
                f"{to_s(self._reported_us)}, and simulated time only moves forward "
                "(anchor at max(time, reported_us) to run at the latest reading instead)"
            )
        self._v0 = t_us
        self._r0 = wall

    def restart(self, t_us: int) -> None:
        """A new run starts at `t_us` (ARE's `TimeManager.reset`): the one move that may go back.

        What was read during the previous run does not bind this one.
        """
        self._v0 = t_us
        self._r0 = self._wall()
        self._reported_us = t_us
        self._frozen = False

    def freeze(self) -> None:
        """The run has ended: time stops flowing for good, at the time it ended.

        Neither `resume`, `unhold` nor `set_speed`/`set_mode` make it flow again (only a new
        run, `restart`, does): a realtime session that stopped would otherwise go on counting
        simulated seconds past its end. Nothing moves an ended run's clock anyway.
        """
        self._reanchor()
        self._frozen = True

    def pause(self) -> None:
        self._reanchor()
        self._paused = True
        self.runs_fast = False

    def resume(self) -> None:
        # Resuming never jumps: time continues from where it was paused.
        self._reanchor()
        self._paused = False
        self.runs_fast = self._mode is Mode.FAST

    def hold(self, *, bind: bool = True) -> None:
        """Stop the flow for the duration of one step (a tick takes no simulated time).

        `bind=False` stops it where it stands without giving that reading out (`peek_us`), so
        that holding it changes no later time (a session's command lane holds it so)."""
        if bind:
            self._reanchor()
        else:
            self._v0 = self.peek_us()
            self._r0 = self._wall()
        self._held += 1

    def unhold(self, *, since: float | None = None) -> None:
        """End a `hold()`: time flows again from where it stood, with no jump; or, `since` a
        wall time, as if it had flowed from there (the hold's wall time is charged after it,
        though no reading during the hold showed it)."""
        if self._held <= 0:
            raise ClockError("unhold() without a matching hold()")
        self._held -= 1
        self._r0 = self._wall() if since is None else since

    def revive(self) -> None:
        """Make a thawed copy of this clock one of its own, held once as after a session's
        load (its driver lets it go): the holds of whoever held the original when it was
        copied (its lane, a control) are not the copy's."""
        self._held = 0
        self.hold()

    @contextmanager
    def held(self) -> Iterator[None]:
        """`hold()` for the duration of a `with` block."""
        self.hold()
        try:
            yield
        finally:
            self.unhold()

    def set_speed(self, speed: float) -> None:
        _check_speed(speed)
        self._reanchor()
        self._speed = float(speed)

    def set_mode(self, mode: Mode) -> None:
        self._reanchor()
        self._mode = Mode(mode)
        self.runs_fast = self._mode is Mode.FAST and not self._paused

    def wall(self) -> float:
        return self._wall()


def _check_speed(speed: float) -> None:
    if not (isinstance(speed, int | float) and math.isfinite(speed) and speed > 0):
        raise ClockError(f"speed must be a finite number above 0, got {speed!r}")
