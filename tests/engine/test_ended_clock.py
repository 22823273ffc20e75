"""An ended session's time is where it ended, however it ended (stop, duration, failure, exit).

A realtime clock flows with the wall; once the run is over nothing may move it any more, or a
stopped session would report times past its own end. All on an injected wall: the wall moves
on after the end, the simulated time does not.
"""

from __future__ import annotations

import anyio

from areasync import Simulation
from areasync.engine.clock import VirtualClock
from areasync.protocol.frames import Mode
from tests.scenarios import timeline
from tests.waiting import eventually
from tests.walls import JumpingWall


def realtime_sim(wall: JumpingWall, duration: float = 20.0) -> Simulation:
    # Speed 1000: one wall millisecond per simulated second.
    return Simulation.load(
        timeline(1.0, duration=duration, initialize=True),
        mode="realtime",
        speed=1000.0,
        wall=wall,
        sleep=wall.sleep,
    )


async def ticks_run(sim: Simulation, n: int) -> None:
    """Let the driver run until `n` ticks have run (it waits on the wall between them)."""
    await eventually(lambda: sim.env.tick_count >= n or sim.ended, what=f"{n} ticks run")


def test_a_frozen_clock_ignores_the_wall_and_every_control() -> None:
    wall = JumpingWall()
    clock = VirtualClock(0.0, mode=Mode.REALTIME, wall=wall)
    wall.jump(2.0)
    clock.freeze()
    clock.pause()
    clock.resume()
    clock.set_speed(5.0)
    clock.set_mode(Mode.REALTIME)
    wall.jump(10.0)
    assert clock.now() == 2.0 and not clock.flowing


async def test_a_stopped_realtime_session_keeps_the_time_it_stopped_at() -> None:
    wall = JumpingWall()
    sim = realtime_sim(wall)
    async with sim:
        await ticks_run(sim, 1)
        wall.jump(0.0035)  # 3.5 simulated seconds
        await sim.stop()
        ended_at = sim.now
        wall.jump(0.5)  # 500 simulated seconds later, were it still flowing
        assert sim.now == ended_at
        assert sim.clock_state().time == ended_at
    assert 3.0 <= ended_at < 20.0


async def test_a_realtime_session_that_ran_its_duration_rests_at_its_end() -> None:
    wall = JumpingWall()
    sim = realtime_sim(wall, duration=5.0)
    async with sim:
        for tick in range(1, 7):  # under `slip` each late tick re-anchors: one second at a time
            await ticks_run(sim, tick)
            wall.jump(0.001)
        with anyio.fail_after(10):
            await sim.run()
        wall.jump(0.5)
        assert sim.now == 5.0


async def test_a_failed_realtime_session_keeps_the_time_it_failed_at() -> None:
    wall = JumpingWall()
    sim = realtime_sim(wall)
    async with sim:
        await ticks_run(sim, 1)
        wall.jump(0.002)
        sim.fail("the scenario's code raised")
        failed_at = sim.now
        wall.jump(0.5)
        assert sim.now == failed_at and sim.state == "failed"
    assert 1.0 < failed_at < 20.0  # it did follow the wall until it failed


async def test_a_realtime_session_left_by_its_owner_keeps_the_time_it_ended_at() -> None:
    wall = JumpingWall()
    sim = realtime_sim(wall)
    async with sim:
        await ticks_run(sim, 1)
        wall.jump(0.002)
    ended_at = sim.now
    wall.jump(0.5)
    assert sim.ended and sim.now == ended_at
    assert 1.0 < ended_at < 20.0  # it did follow the wall until it ended
