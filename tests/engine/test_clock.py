"""The virtual clock: exact, monotonic, re-anchored by every control."""

import pytest

from areasync.engine.clock import ClockError, VirtualClock, to_s, to_us
from areasync.protocol.frames import Mode


class FakeWall:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def realtime(speed: float = 1.0, start: float = 0.0) -> tuple[VirtualClock, FakeWall]:
    wall = FakeWall()
    return VirtualClock(start, mode=Mode.REALTIME, speed=speed, wall=wall), wall


def test_time_is_start_plus_speed_times_wall_elapsed() -> None:
    clock, wall = realtime(speed=10.0, start=50.0)
    wall.now += 1.5
    assert clock.now() == 65.0


def test_fast_and_manual_clocks_do_not_flow_with_the_wall() -> None:
    for mode in (Mode.FAST, Mode.MANUAL):
        wall = FakeWall()
        clock = VirtualClock(7.0, mode=mode, wall=wall)
        wall.now += 1000
        assert clock.now() == 7.0


def test_microsecond_arithmetic_is_exact() -> None:
    clock = VirtualClock(0.0, mode=Mode.MANUAL)
    for _ in range(10):
        clock.set_us(clock.now_us() + to_us(0.1))
    assert clock.now_us() == 1_000_000
    assert to_s(clock.now_us()) == 1.0


def test_pause_freezes_and_resume_continues_without_a_jump() -> None:
    clock, wall = realtime()
    wall.now += 2
    clock.pause()
    wall.now += 50
    assert clock.now() == 2.0
    clock.resume()
    assert clock.now() == 2.0
    wall.now += 1
    assert clock.now() == 3.0


def test_set_speed_reanchors_and_never_jumps() -> None:
    clock, wall = realtime(speed=1.0)
    wall.now += 10
    clock.set_speed(100.0)
    assert clock.now() == 10.0
    wall.now += 1
    assert clock.now() == 110.0


def test_moving_the_clock_backwards_is_refused_and_changes_nothing() -> None:
    clock = VirtualClock(5.0, mode=Mode.MANUAL)
    with pytest.raises(ClockError, match="backwards"):
        clock.set_us(to_us(4.0))
    assert clock.now() == 5.0


@pytest.mark.parametrize("speed", [0, -1, float("inf"), float("nan")])
def test_speed_must_be_finite_and_positive(speed: float) -> None:
    clock, _ = realtime()
    with pytest.raises(ClockError, match="speed"):
        clock.set_speed(speed)
    assert clock.speed == 1.0


def test_wall_delay_until_scales_with_speed() -> None:
    clock, _ = realtime(speed=4.0)
    assert clock.wall_delay_until(to_us(2.0)) == 0.5
    assert clock.wall_delay_until(0) == 0.0


def test_wall_delay_is_unknown_when_time_does_not_flow() -> None:
    clock, _ = realtime()
    clock.pause()
    assert clock.wall_delay_until(to_us(1.0)) is None


def test_jumps_are_counted_separately_from_flow() -> None:
    clock, wall = realtime()
    wall.now += 3
    clock.set_us(to_us(10.0))
    assert clock.jumped_us == to_us(7.0)


def test_anchoring_below_the_reported_time_is_refused_and_changes_nothing() -> None:
    clock, wall = realtime()
    wall.now += 2
    assert clock.now() == 2.0
    with pytest.raises(ClockError, match=r"already reported 2\.0"):
        clock.anchor(to_us(1.0), wall.now)
    assert clock.reported_us == to_us(2.0)
    wall.now += 1
    assert clock.now() == 3.0


def test_restart_is_the_one_control_that_sets_time_back() -> None:
    clock, wall = realtime()
    wall.now += 5
    clock.now()
    clock.restart(to_us(1.0))
    assert clock.now() == 1.0


def test_unhold_without_a_hold_is_refused() -> None:
    clock, _ = realtime()
    with pytest.raises(ClockError, match="without a matching hold"):
        clock.unhold()


def test_time_stands_still_inside_held_and_flows_after_it() -> None:
    clock, wall = realtime()
    with clock.held():
        wall.now += 10
        assert clock.now() == 0.0
    wall.now += 1
    assert clock.now() == 1.0
