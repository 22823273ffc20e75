"""Realtime mode: ARE's time-based loop paced by the wall clock, and its lag policies."""

import time
from typing import Any

import anyio
from are.simulation.types import Action, Event, EventType

from areasync import LagPolicy, Simulation
from tests.scenarios import TimelineApp, TimelineScenario, timeline
from tests.waiting import eventually, settled
from tests.walls import JumpingWall


class SlowTickScenario(TimelineScenario):
    """One event whose app call keeps the CPU busy for a moment (a slow tick)."""

    def build_events_flow(self) -> None:
        app = self.get_typed_app(TimelineApp)

        def busy(label: str) -> int:
            # Burn wall time without sleeping: the point is a tick that runs late.
            deadline = time.perf_counter() + 0.05
            while time.perf_counter() < deadline:
                pass
            return app.fire(label)

        busy.__name__ = "busy"
        self.events = [
            Event(
                event_type=EventType.ENV,
                event_relative_time=1.0,
                action=Action(function=busy, args={"label": "slow"}, app=app),
            )
        ]


def slow_tick_sim(policy: LagPolicy, **options: Any) -> Simulation:
    scenario = SlowTickScenario(duration=4)
    scenario.initialize()
    return Simulation.load(scenario, mode="realtime", speed=100.0, lag_policy=policy, **options)


async def test_realtime_runs_every_tick_to_the_duration() -> None:
    sim = slow_tick_sim(LagPolicy.SLIP)
    with anyio.fail_after(30):
        await sim.run()
    assert sim.env.tick_count == 4  # ticks at 0, 1, 2, 3 s; 4 s is the exclusive bound
    assert sim.env.get_app("TimelineApp").marks == ["slow"]


async def test_slip_never_charges_a_slow_tick_to_simulated_time() -> None:
    sim = slow_tick_sim(LagPolicy.SLIP)
    with anyio.fail_after(30):
        await sim.run()
    # The slow call ran inside the tick at 1 s and took 5 simulated seconds of wall time at
    # speed 100; under slip the event is still stamped at its own time.
    assert [e.time for e in sim.events()] == [1.0]


async def test_catch_up_reports_the_lag_of_a_tick_behind_schedule() -> None:
    sim = slow_tick_sim(LagPolicy.CATCH_UP)
    with anyio.fail_after(30):
        await sim.run()
    # The slow tick took 50 ms; the next tick was due 10 ms after it started.
    assert sim.lag > 0


async def test_strict_ends_the_session_when_a_tick_is_too_late() -> None:
    wall = JumpingWall()
    sim = slow_tick_sim(LagPolicy.STRICT, max_lag=0.02, wall=wall, sleep=wall.sleep)
    async with sim:
        await eventually(lambda: sim.env.tick_count >= 1, what="the first tick run")
        # The next tick was due 10 ms of wall after the first (speed 100): the wall jumps past
        # that by more than max_lag, and the driver wakes late, which strict mode refuses.
        wall.jump(0.2)
        with anyio.fail_after(30):
            await sim.run()
    assert sim.state == "failed"
    assert sim.lag > 0.02


async def test_a_realtime_driver_waits_on_an_injected_wall_until_it_moves() -> None:
    wall = JumpingWall()
    sim = Simulation.load(
        timeline(1.0, duration=20.0, initialize=True),
        mode="realtime",
        wall=wall,
        sleep=wall.sleep,
    )
    async with sim:
        await settled()
        assert sim.env.tick_count == 1  # the tick at 0 s; the next is a wall second away
        wall.jump(0.5)
        await settled()
        assert sim.env.tick_count == 1
        wall.jump(0.5)  # the tick at 1 s is due: the jump wakes the driver
        await settled()
        assert sim.env.tick_count == 2
        await sim.stop()
