"""Time never goes backwards: a property of the clock itself, whatever re-anchors it.

Realtime pacing re-anchors the clock to each tick's scheduled time. A tick that runs late, after
a later time was given out (a command logged at 1.5 s while the tick due at 1.0 s waited), must
not take the clock back to 1.0 s: the clock refuses such an anchor, and the pacing code runs the
tick at the time already given out. A late tick nobody saw the clock pass still runs at its own
time (ARE's slip). All on an injected wall.
"""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from areasync import LagPolicy, Simulation
from areasync.engine.clock import ClockError, VirtualClock, to_us
from areasync.protocol.frames import Mode
from tests.scenarios import timeline
from tests.waiting import eventually
from tests.walls import JumpingWall


def realtime_clock() -> tuple[VirtualClock, JumpingWall]:
    wall = JumpingWall()
    return VirtualClock(0.0, mode=Mode.REALTIME, speed=1.0, wall=wall), wall


def test_anchor_below_a_time_already_read_is_refused_and_changes_nothing() -> None:
    clock, wall = realtime_clock()
    wall.jump(1.5)
    assert clock.now() == 1.5
    with pytest.raises(ClockError, match="only moves forward"):
        clock.anchor(to_us(1.0), wall.now)
    wall.jump(0.25)
    assert clock.now() == 1.75


def test_anchor_at_the_time_already_read_keeps_that_time() -> None:
    clock, wall = realtime_clock()
    wall.jump(1.5)
    clock.anchor(max(to_us(1.0), clock.now_us()), wall.now)
    assert clock.now() == 1.5


def test_anchor_below_a_time_nobody_read_slips_back_to_it() -> None:
    clock, wall = realtime_clock()
    assert clock.now() == 0.0
    wall.jump(1.5)  # the tick at 1.0 s is late, but nobody read a later time
    clock.anchor(to_us(1.0), wall.now)
    assert clock.now() == 1.0


def test_peeking_at_the_clock_does_not_bind_an_anchor() -> None:
    clock, wall = realtime_clock()
    wall.jump(1.5)
    assert clock.peek_us() == to_us(1.5)
    clock.anchor(to_us(1.0), wall.now)
    assert clock.now() == 1.0


def test_time_flows_on_from_an_anchor_kept_at_the_time_read() -> None:
    clock, wall = realtime_clock()
    wall.jump(1.5)
    clock.anchor(max(to_us(1.0), clock.now_us()), wall.now)
    wall.jump(0.25)
    assert clock.now() == 1.75


def test_restart_is_the_one_move_back_for_a_new_run() -> None:
    clock, wall = realtime_clock()
    wall.jump(5.0)
    clock.now()
    clock.restart(0)
    assert clock.now() == 0.0
    clock.anchor(0, wall.now)  # the new run's readings bind it, not the old run's
    assert clock.now() == 0.0


_operations = st.lists(
    st.one_of(
        st.tuples(st.just("wall"), st.floats(min_value=0.0, max_value=3.0)),
        st.tuples(st.just("anchor"), st.floats(min_value=0.0, max_value=20.0)),
        st.tuples(st.just("set"), st.floats(min_value=0.0, max_value=20.0)),
        st.tuples(st.just("speed"), st.floats(min_value=0.1, max_value=100.0)),
        st.tuples(
            st.sampled_from(["read", "peek", "pause", "resume", "hold", "unhold", "mode"]),
            st.just(0.0),
        ),
    ),
    max_size=60,
)


@settings(max_examples=300, deadline=None)
@given(_operations)
def test_readings_never_decrease_whatever_anchors_and_controls_do(
    operations: list[tuple[str, float]],
) -> None:
    clock, wall = realtime_clock()
    readings = [clock.now_us()]
    held = 0
    for op, value in operations:
        if op == "wall":
            wall.jump(value)
        elif op == "anchor":
            with contextlib.suppress(ClockError):  # below a time read: refused, unchanged
                clock.anchor(to_us(value), wall.now)
        elif op == "set":
            with contextlib.suppress(ClockError):  # backwards: refused, clock unchanged
                clock.set_us(to_us(value))
        elif op == "speed":
            clock.set_speed(value)
        elif op == "pause":
            clock.pause()
        elif op == "resume":
            clock.resume()
        elif op == "hold":
            clock.hold()
            held += 1
        elif op == "unhold" and held:
            clock.unhold()
            held -= 1
        elif op == "mode":
            flowing = clock.mode is Mode.REALTIME
            clock.set_mode(Mode.MANUAL if flowing else Mode.REALTIME)
        elif op == "peek":
            clock.peek_us()
        readings.append(clock.now_us())
    assert readings == sorted(readings)


def realtime_sim(wall: JumpingWall) -> Simulation:
    """Speed 1000 on `wall`: a tick every simulated second is one wall millisecond apart."""
    return Simulation.load(
        timeline(duration=30.0, initialize=True),
        mode="realtime",
        speed=1000.0,
        lag_policy=LagPolicy.SLIP,
        wall=wall,
        sleep=wall.sleep,
    )


async def ticks_run(sim: Simulation, n: int) -> None:
    """Let the driver run until `n` ticks have run (it waits on the wall between them)."""
    await eventually(lambda: sim.env.tick_count >= n, what=f"{n} ticks run")


async def test_a_command_logged_while_a_tick_is_overdue_is_never_followed_by_an_earlier_time() -> (
    None
):
    wall = JumpingWall()
    sim = realtime_sim(wall)
    async with sim:
        await ticks_run(sim, 1)  # the tick at 0 s has run; the next is due at 1 s
        wall.jump(0.0015)  # 1.5 s of simulated time: the tick at 1 s is overdue
        # The lane is free: the command runs at once, ahead of the overdue tick.
        await sim.call_tool("TimelineApp__mark", {"label": "first"})
        await ticks_run(sim, 2)  # the overdue tick has run
        await sim.call_tool("TimelineApp__mark", {"label": "second"})
        await sim.stop()
    first, second = (e.time for e in sim.events() if e.function == "mark")
    assert first == pytest.approx(1.5, abs=1e-5)  # the wall's float arithmetic, not the clock's
    assert second >= first


async def test_listing_a_session_does_not_move_an_overdue_tick() -> None:
    wall = JumpingWall()
    sim = realtime_sim(wall)
    async with sim:
        await ticks_run(sim, 1)
        reported = sim.clock.reported_us
        wall.jump(0.0015)  # the tick at 1 s is overdue; a listing reads the clock meanwhile
        assert sim.clock_state(peek=True).time == pytest.approx(1.5, abs=1e-5)
        assert sim.clock.reported_us == reported
        await sim.stop()
