"""`Publisher`: what a simulation puts on its stream of its own accord: the events ARE logs and
the clock as it changes, numbered in the session's `StreamLog`.

(Notifications are the agent's side's to put there: a notification also ends the agent's wait,
`areasync.simulation.agent`. The end of the run is the ending's: `areasync.simulation.ending`.)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial

from areasync.bridge.environment import AsyncEnvironment
from areasync.engine.clock import VirtualClock, to_s
from areasync.engine.stream import StreamLog
from areasync.protocol.frames import ClockItem, EventItem, StreamItem
from areasync.protocol.records import ClockState, EventRecord


class Publisher:
    """The stream's events and clock changes (module docstring)."""

    def __init__(
        self, env: AsyncEnvironment, clock: VirtualClock, log: StreamLog[StreamItem]
    ) -> None:
        self._env = env
        self._clock = clock
        self._log = log
        # How late the last realtime tick ran (wall seconds), as the clock reports it.
        self.lag = 0.0
        # When the clock was last published (the clock's wall): realtime publishes it at most
        # every `CLOCK_PUBLISH_INTERVAL_S`.
        self.last_clock_publish = -math.inf

    @property
    def state(self) -> str:
        return str(self._env.state.name.lower())

    def clock_state(self, *, peek: bool = False) -> ClockState:
        """The clock as the stream reports it. `peek=True` reads it without binding it (for
        listings such as `/api/sessions`): a time given out on the stream is never followed by
        an earlier one, so every binding read may move an overdue tick (see `loop.clock`);
        a listing must not change what the simulation logs."""
        env, clock = self._env, self._clock
        return ClockState(
            state=self.state,
            time=to_s(clock.latest_us()) if peek else clock.now(),
            tick=int(env.tick_count),
            mode=clock.mode.value,
            speed=clock.speed,
            start_time=float(env.start_time or 0.0),
            duration=None if env.duration is None else float(env.duration),
            lag=self.lag,
        )

    def publish_clock(self) -> None:
        if self._log.closed:
            return
        state = self.clock_state()
        self.last_clock_publish = self._clock.wall()
        self._log.append(lambda seq: ClockItem(seq=seq, clock=state))

    def event_listener(self) -> Callable[[EventRecord], object]:
        """ARE's environment's event listener: each event's record straight onto the stream, as
        an `EventItem` (no call between)."""
        return partial(self._log.append_with, event_item)


def event_item(seq: int, record: EventRecord) -> EventItem:
    return EventItem(seq=seq, event=record)
