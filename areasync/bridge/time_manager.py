"""ARE's TimeManager, reading the virtual clock instead of `time.time()`.

Apps, the notification system and agents all hold a reference to the environment's TimeManager,
so the environment swaps this one in right after ARE's constructor, before anything else sees it.
Every ARE call site keeps working: `time()`, `time_passed()`, `add_offset()` (SystemApp.wait and
ARE's own jump rules), `pause()`/`resume()`.
"""

from __future__ import annotations

from are.simulation.time_manager import TimeManager

from areasync.engine.clock import US_PER_S, VirtualClock, to_s, to_us


class VirtualTimeManager(TimeManager):
    """A TimeManager whose time is `VirtualClock.now()`; it has no wall-clock state of its own."""

    def __init__(self, clock: VirtualClock, start_time: float = 0.0) -> None:
        # ARE's constructor reads time.time(); set the fields it defines without calling it.
        self.clock = clock
        self.start_time: float | None = start_time
        self.real_start_time: float | None = start_time
        self.offset: float = 0
        self.pause_real_start_time: float | None = None
        self.pause_passed_time: float | None = None
        self.pause_offset: float = 0

    @property
    def is_paused(self) -> bool:
        return self.clock.paused

    @is_paused.setter
    def is_paused(self, value: bool) -> None:
        # ARE's TimeManager assigns this attribute; the clock is the only source of truth.
        pass

    def time(self) -> float:
        return self.clock.now_us() / US_PER_S  # `clock.now()`, one call less: ARE reads it often

    def time_passed(self) -> float:
        return to_s(self.clock.now_us() - to_us(self.start_time or 0.0))

    def real_time_passed(self) -> float:
        return self.time_passed()

    def reset(self, start_time: float | None = None) -> None:
        # ARE resets the time manager at the start of `Environment.run`: time restarts there.
        if start_time is not None:
            self.start_time = start_time
        self.clock.restart(to_us(self.start_time or 0.0))

    def pause(self) -> None:
        if not self.clock.paused:
            self.clock.pause()

    def resume(self) -> None:
        if self.clock.paused:
            self.clock.resume()

    def add_offset(self, offset: float) -> None:
        """A forward jump of `offset` simulated seconds (SystemApp.wait, ARE's jump rules)."""
        if offset > 0:
            self.clock.set_us(self.clock.now_us() + to_us(offset))

    def set_offset(self, offset: float) -> None:
        self.clock.set_us(to_us(self.start_time or 0.0) + to_us(offset))
