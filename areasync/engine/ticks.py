"""The engine: advances an environment on the virtual clock, one tick at a time.

It imports no ARE: what it needs from the environment is the `SteppableEnvironment` protocol
(`loop.environment`), which bridge's `AsyncEnvironment` implements over ARE's Environment.

This is the loop that ARE runs on a background thread (`_time_based_loop`, `_queue_based_loop`,
`wait_for_next_notification`), rewritten as plain synchronous steps with no sleeping, no threads
and no I/O. Each public method does a bounded amount of work and returns; the caller decides when
to call it next (the async `Simulation` awaits the wall clock or a command between steps, the
synchronous facade calls straight through). Both therefore share one implementation of ARE's
time semantics:

* `fast` (ARE's queue-based loop): jump to the next due item - the head of the event queue, or
  an agent's `wait_for_notification` timeout - and tick there; `tick_count` is the tick index of
  that time (`ceil((t - start) / increment)`), exactly as `jump_to_next_event_time` sets it.
* `realtime`/`manual` ticks (ARE's time-based loop): tick on the grid `start + k * increment`;
  during tick k, `tick_count == k`, after it `k + 1`.
* Jumps (`advance_to`): every due item fires at its own time, in `(time, seq)` order. A long
  jump can be run in pieces: given an `out_of_time` callable, `advance_to` stops after the item
  during which it turned true and says it is not done; called again with the same target, it
  goes on where it stopped. The pieces fire exactly what one call would, in the same order: the
  caller only has to let nothing else touch the environment in between.
* Exclusive jumps (`advance_to(t, inclusive=False)`): the same for every item due strictly
  before `t`; the clock then rests at exactly `t` with nothing due at `t` fired, so what an
  agent does next is logged at `t`, ahead of `t`'s items, as an action is ordered first in its
  tick in ARE's oracle run. The tick at `t` is owed, and runs exactly once, at `t`: it is the
  queue-based loop's next step (`step_fast` finds the items due at `t` and ticks there), and
  the time-based loop's next grid tick (`step_grid` ticks at `t`, then one increment later).
  Any other advance runs or passes it instead (see `advance_to`).
* The duration bound is exclusive: nothing is processed at or after `start + duration`, because
  ARE's wall clock always carries an epsilon past the scheduled tick.
* Time never moves backwards (ARE's jump rules can, when an old message sits undelivered).
* An agent's `wait_for_notification` ignores the duration, as ARE's does (`wait_runs_past_end`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from areasync.engine.clock import ClockError, to_us
from areasync.engine.environment import SteppableEnvironment


class EngineError(ValueError):
    """A request the engine cannot carry out in its current state; nothing was changed."""


class Engine:
    """Steps a `SteppableEnvironment` on its `VirtualClock`."""

    def __init__(self, env: SteppableEnvironment) -> None:
        self.env = env
        self.clock = env.clock
        self._geometry_key: tuple[float | None, float, float | None] | None = None
        self._geometry_us: tuple[int, int, int | None] = (0, 1, None)
        self.started = False
        self.finished = False
        # The time-based loop's schedule: its last tick, and the clock's jump total then. Before
        # the first tick, "the last tick" is one increment before the start.
        self._grid_last_us = self.start_us - self.increment_us
        self._grid_jumped_us = self.clock.jumped_us
        # The tick an exclusive jump stopped before: (its time, the clock's jump total then).
        self._owed: tuple[int, int] | None = None

    # -- geometry of time --------------------------------------------------------------------

    def _geometry(self) -> tuple[int, int, int | None]:
        """(start, increment, exclusive end or None) in microseconds, read from the
        environment on every step (ARE's `run()` may set them) and converted only when one
        of them changed."""
        env = self.env
        key = (env.start_time, env.time_increment_in_seconds, env.duration)
        if key != self._geometry_key:
            start_us = to_us(key[0] or 0.0)
            end_us = None if key[2] is None else start_us + to_us(key[2])
            self._geometry_us = (start_us, to_us(key[1] or 1), end_us)
            self._geometry_key = key
        return self._geometry_us

    @property
    def start_us(self) -> int:
        return self._geometry()[0]

    @property
    def increment_us(self) -> int:
        return self._geometry()[1]

    @property
    def end_us(self) -> int | None:
        """The exclusive end of the run, or None when the scenario has no duration."""
        return self._geometry()[2]

    def tick_index(self, t_us: int) -> int:
        """ARE's tick number for time `t` (`jump_to_next_event_time`)."""
        start_us, increment_us, _ = self._geometry()
        return math.ceil((t_us - start_us) / increment_us)

    def next_grid_us(self) -> int:
        """When the time-based loop ticks next: one increment after its last tick.

        ARE's loop ticks once per wall second, `time_increment_in_seconds` apart in simulated
        time; a jump in between (wait_for_notification, SystemApp.wait, a jump control) shifts
        the rest of the schedule by the same amount, as ARE's `add_offset` does. After an
        exclusive jump to `t` the next tick is the one owed at `t` (shifted, like the rest of
        the schedule, by any jump that does not run or pass it, such as ARE's `add_offset`).
        """
        owed = self.owed_tick_us()
        if owed is not None:
            return owed
        return (
            self._grid_last_us + self.increment_us + (self.clock.jumped_us - self._grid_jumped_us)
        )

    def owed_tick_us(self) -> int | None:
        """The time of the tick an exclusive jump stopped before, while it is still owed."""
        if self._owed is None:
            return None
        t_us, jumped_us = self._owed
        return t_us + (self.clock.jumped_us - jumped_us)

    def next_event_us(self) -> int | None:
        t = self.env.next_event_time()
        return None if t is None else to_us(t)

    def wait_timeout_us(self) -> int | None:
        t = self.env.wait_timeout_time()
        return None if t is None else to_us(t)

    def next_due_us(self) -> int | None:
        """The earliest time at which something is scheduled to happen, if anything is."""
        return self.env.next_due_us()

    def at_end(self, t_us: int) -> bool:
        end = self._geometry()[2]
        return end is not None and t_us >= end

    @property
    def stopping(self) -> bool:
        """ARE asked to stop (StopEvent, `env.stop()`, a failed validation)."""
        return self.env.stop_requested()

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """ARE's `start()`, minus the thread: schedule the first events."""
        if self.started:
            raise EngineError("the simulation has already started; create a new one to rerun")
        self.started = True
        self.env.begin_run()
        # The first tick is at the start time: what flowed while ARE's `run()` registered apps
        # and scheduled events is setup, not simulated time (ARE's thread ticks right away).
        self._grid_last_us = self.start_us - self.increment_us
        self._grid_jumped_us = self.clock.jumped_us

    def finish(self) -> None:
        """End the run as ARE's `_event_loop` ends it: final checks, final state, stop message."""
        if self.finished:
            return
        self.finished = True
        # Before the epilogue, so that ARE's stop message is stamped with the time it ended at.
        self.clock.freeze()
        self.env.run_loop_epilogue()

    # -- steps -------------------------------------------------------------------------------

    def tick_at(self, t_us: int, *, tick_count: int | None = None) -> None:
        """Move the clock to `t_us` (never backwards) and run one ARE tick there.

        Every tick happens at or after an owed tick's time (the clock never goes back), so it
        is that tick: the debt is paid.
        """
        self._owed = None
        clock = self.clock
        now = clock.now_us()
        if t_us > now:
            clock.set_us(t_us)
            now = t_us
        env = self.env
        env.tick_count = self.tick_index(now) if tick_count is None else tick_count
        env.tick()

    def step_fast(self) -> bool:
        """One step of ARE's queue-based loop. Returns False when nothing is due (idle) or done."""
        # `stopping`, `next_due_us`, `at_end` and `tick_at` written out, and the first three
        # asked in one call (`next_step_due_us`): this runs once per distinct event time, and
        # the calls were most of what a step cost.
        if self.finished:
            return False
        env = self.env
        due = env.next_step_due_us()
        if due is None:  # no tick, or the environment cannot tell: one question at a time
            if env.stop_requested():
                self.finish()
                return False
            if env.exit_when_no_events and env.get_event_queue_length() == 0:
                self.finish()
                return False
            due = env.next_due_us()
            if due is None:
                return False
        # `_geometry()` written out while the geometry is unchanged (nearly always).
        if (env.start_time, env.time_increment_in_seconds, env.duration) == self._geometry_key:
            start_us, increment_us, end = self._geometry_us
        else:
            start_us, increment_us, end = self._geometry()
        if end is not None and due >= end and not self.wait_runs_past_end(due):
            # ARE's jump_to_next_event_time sets the tick index before the duration check.
            env.tick_count = math.ceil((due - start_us) / increment_us)
            self._finish_at_end()
            return False
        self._owed = None
        now = self.clock.advance_us(due)
        env.tick_count = math.ceil((now - start_us) / increment_us)
        env.tick()
        return True

    def wait_runs_past_end(self, due_us: int) -> bool:
        """Whether an agent's `wait_for_notification` runs the item due at `due_us` anyway.

        ARE's `wait_for_next_notification` ignores the scenario's duration: it fires every item
        due up to the wait's timeout, jumps to the timeout (or the notification that ends the
        wait) even past the end, and its agent acts on the result before the loop, at its next
        step, sees the duration passed and ends the run. A verdict must not depend on which
        engine ran the scenario, so the queue-based loop here does the same while a wait is on.
        """
        if not self.env.waiting_for_notification:
            return False
        timeout = self.wait_timeout_us()
        return timeout is not None and due_us <= timeout

    def run_out(self) -> None:
        """Nothing will ever be due: let time run to the end of the scenario and finish."""
        if self.end_us is not None:
            self._finish_at_end()

    def step_grid(self) -> bool:
        """One iteration of ARE's time-based loop at the next grid time. False when done."""
        if self.finished:
            return False
        if self.stopping:
            self.finish()
            return False
        t = self.next_grid_us()
        if self.at_end(t):
            self._finish_at_end()
            return False
        if self.env.exit_when_no_events and self.env.get_event_queue_length() == 0:
            self.finish()
            return False
        k = int(self.env.tick_count)
        self.tick_at(t, tick_count=k)
        self._grid_last_us = t
        self._grid_jumped_us = self.clock.jumped_us
        self.env.tick_count = k + 1
        return True

    def advance_to(
        self,
        t_us: int,
        *,
        inclusive: bool = True,
        out_of_time: Callable[[], bool] | None = None,
    ) -> bool:
        """Jump to `t_us`: every due item fires at its own time, then the clock rests at `t_us`.

        With `inclusive=False` only the items due strictly before `t_us` fire; those due at
        `t_us` (events, a wait's timeout) stay pending and the tick at `t_us` is owed: the
        next step runs it at `t_us`, once (see the module docstring). An exclusive jump to the
        time the clock is already at changes nothing: a tick owed there stays owed, and
        otherwise the tick at now has run or been passed already (and an ARE tick cannot run
        an overdue item without running those due at now too). Either way the duration bound
        is exclusive: a target at or past the end ends the run at the end, with every item due
        before the end fired.

        `out_of_time`, when given, is asked after each item fired (one ARE tick); once it
        answers True the jump stops there, with the clock at that item's time, and returns
        False: call again with the same target and `inclusive` to go on (nothing else may
        touch the environment in between). Only the call that returns True finishes the jump
        (the clock resting at `t_us`, the owed tick, the end of the run). The engine reads no
        clock of its own for this: the caller's callable decides.
        """
        now = self.clock.now_us()
        if t_us < now:
            raise ClockError(
                f"cannot jump backwards: the clock is at {now / 1e6:.6f} s and the target is "
                f"{t_us / 1e6:.6f} s; jump to a later time or by a positive amount"
            )
        if not inclusive and t_us == now:
            return True
        while not self.finished:
            if self.stopping:
                self.finish()
                return True
            due = self.next_due_us()
            if due is None or due > t_us or (due == t_us and not inclusive):
                break
            if self.at_end(due):
                break
            self.tick_at(due)
            if out_of_time is not None and out_of_time():
                return False
        if self.finished:
            return True
        if self.at_end(t_us):
            self._finish_at_end()
            return True
        if t_us > self.clock.now_us():
            self.clock.set_us(t_us)
        self.env.note_current_time()
        # An inclusive jump runs or passes any owed tick; an exclusive one owes the tick at t.
        self._owed = None if inclusive else (t_us, self.clock.jumped_us)
        return True

    def next_event_target_us(self) -> int:
        """Where `advance_to_next_event` jumps: the next due item's time (never backwards)."""
        due = self.next_due_us()
        if due is None:
            raise EngineError(
                "no event is scheduled: there is nothing to jump to; use jump by/to or tick instead"
            )
        return max(due, self.clock.now_us())

    def advance_to_next_event(self) -> int:
        """Jump to the next due item and fire it. Returns its time."""
        target = self.next_event_target_us()
        self.advance_to(target)
        return target

    def _finish_at_end(self) -> None:
        end = self.end_us
        if end is not None and end > self.clock.now_us():
            self.clock.set_us(end)
        self.env.note_current_time()
        self.finish()

    # -- ARE's wait_for_next_notification, for synchronous callers -----------------------------

    def wait_for_notification_blocking(self) -> None:
        """ARE's `wait_for_next_notification` jump rules, run to completion synchronously.

        Used when a tool call to `SystemApp__wait_for_notification` must return only after the
        wait is over (the synchronous facade, ARE's own agents). As ARE's, it ignores the
        scenario's duration (items past the end fire, time jumps past it; the loop ends the run
        at its next step); unlike ARE's it never moves time backwards.
        """
        timeout_us = self.wait_timeout_us()
        if timeout_us is None:
            return
        self.env.waiting_for_notification = True
        try:
            while not self.stopping and not self.finished:
                event_us = self.next_event_us()
                note_us = self._next_notification_us()
                if event_us is not None and event_us > timeout_us:
                    event_us = None
                if note_us is not None and note_us > timeout_us:
                    note_us = None
                target = timeout_us if event_us is None and note_us is None else None
                if (
                    target is None
                    and note_us is not None
                    and (event_us is None or note_us <= event_us)
                ):
                    target = note_us
                if target is not None:
                    if target > self.clock.now_us():
                        self.clock.set_us(target)
                    return
                assert event_us is not None
                # ARE's wait ticks without touching tick_count (validators count ticks).
                self.tick_at(event_us, tick_count=self.env.tick_count)
        finally:
            if not self.finished:
                self.tick_at(self.clock.now_us(), tick_count=self.env.tick_count)
            self.env.waiting_for_notification = False
            self.env.reset_wait_timeout()

    def _next_notification_us(self) -> int | None:
        t = self.env.next_notification_time()
        return None if t is None else to_us(t)

    def drain_notifications(self) -> None:
        """Take delivered messages off ARE's queue, as ARE's agents do at each step.

        A message left behind would make ARE's jump rules see a 'next notification' in the past.
        """
        self.env.take_notifications_until(self.clock.now())
