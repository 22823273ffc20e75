"""The engine steps any `SteppableEnvironment`: here a plain fake, with no ARE at all.

A fake's ticks record the clock's time and fire whatever is due then; the engine decides
where time goes (ARE's queue-based and time-based loops).
"""

from __future__ import annotations

from areasync.engine.clock import VirtualClock, to_us
from areasync.engine.ticks import Engine
from areasync.protocol.frames import Mode


class FakeEnvironment:
    """Events due at given times; a tick fires those due by the clock's time."""

    def __init__(self, *times: float, duration: float | None = 10.0) -> None:
        self.clock = VirtualClock(0.0, mode=Mode.MANUAL, wall=lambda: 0.0)
        self.tick_count = 0
        self.waiting_for_notification = False
        self.start_time: float | None = 0.0
        self.time_increment_in_seconds = 1.0
        self.duration = duration
        self.exit_when_no_events = False
        self.pending = sorted(times)
        self.ticks: list[tuple[int, float]] = []
        self.fired: list[float] = []
        self.ended = False

    def tick(self) -> None:
        now = self.clock.now()
        self.ticks.append((self.tick_count, now))
        while self.pending and self.pending[0] <= now:
            self.fired.append(self.pending.pop(0))

    def get_event_queue_length(self) -> int:
        return len(self.pending)

    def begin_run(self) -> None:
        pass

    def run_loop_epilogue(self) -> None:
        self.ended = True

    def note_current_time(self) -> None:
        pass

    def stop_requested(self) -> bool:
        return False

    def next_event_time(self) -> float | None:
        return self.pending[0] if self.pending else None

    def wait_timeout_time(self) -> float | None:
        return None

    def next_due_us(self) -> int | None:
        return to_us(self.pending[0]) if self.pending else None

    def next_step_due_us(self) -> int | None:
        return self.next_due_us()

    def reset_wait_timeout(self) -> None:
        pass

    def next_notification_time(self) -> float | None:
        return None

    def take_notifications_until(self, t: float) -> None:
        pass


def test_fast_steps_tick_at_each_event_time_with_its_tick_index() -> None:
    env = FakeEnvironment(2.0, 4.5)
    engine = Engine(env)
    engine.start()
    while engine.step_fast():
        pass
    assert env.ticks == [(2, 2.0), (5, 4.5)]
    assert env.fired == [2.0, 4.5]


def test_with_nothing_left_the_run_ends_at_its_duration() -> None:
    env = FakeEnvironment(1.0, duration=10.0)
    engine = Engine(env)
    engine.start()
    while engine.step_fast():
        pass
    engine.run_out()
    assert engine.finished and env.ended
    assert env.clock.now() == 10.0


def test_grid_steps_tick_once_per_increment() -> None:
    env = FakeEnvironment(1.5)
    engine = Engine(env)
    engine.start()
    for _ in range(3):
        engine.step_grid()
    assert env.ticks == [(0, 0.0), (1, 1.0), (2, 2.0)]
    assert env.fired == [1.5]


def test_a_jump_fires_every_item_on_the_way_at_its_own_time() -> None:
    env = FakeEnvironment(1.0, 3.0, 8.0)
    engine = Engine(env)
    engine.start()
    assert engine.advance_to(5_000_000)
    assert [t for _, t in env.ticks] == [1.0, 3.0]
    assert env.clock.now() == 5.0 and env.pending == [8.0]
