"""How a simulation ended is one value, `end_state`: each way a run ends gives its own.

The first ending wins: whatever happens after it (leaving the `async with` block, a second
request) leaves the state and the reason as they were.
"""

from __future__ import annotations

import anyio
import pytest

from areasync import LagPolicy, LeasePolicy, Simulation
from areasync.simulation import BadStateError, EndState
from tests.scenarios import timeline
from tests.waiting import eventually
from tests.walls import JumpingWall


async def first_tick_run(sim: Simulation) -> None:
    """Let the driver run the first tick (it then waits on the wall for the next)."""
    await eventually(lambda: sim.env.tick_count >= 1, what="the first tick run")


async def test_a_loaded_simulation_is_running() -> None:
    sim = Simulation.load(timeline(1, duration=10), mode="manual")
    assert sim.end_state is EndState.RUNNING and not sim.ended


async def test_a_run_that_reaches_its_duration_ran_to_its_end() -> None:
    sim = Simulation.load(timeline(1, duration=10), mode="fast")
    with anyio.fail_after(5):
        await sim.run()
    assert sim.end_state is EndState.RAN_TO_END and sim.ended
    assert sim.end_reason is None


async def test_a_stop_request_stops_the_run() -> None:
    sim = Simulation.load(timeline(1, duration=10), mode="manual")
    async with sim:
        await sim.stop("enough")
    assert sim.end_state is EndState.STOPPED
    assert sim.end_reason == "enough" and sim.state == "stopped"


async def test_leaving_the_context_while_it_runs_is_its_own_ending() -> None:
    sim = Simulation.load(timeline(1, duration=10), mode="manual")
    async with sim:
        pass
    assert sim.end_state is EndState.LEFT
    assert sim.end_reason == "the simulation context exited"


async def test_an_expired_lease_under_the_end_policy_ends_the_run() -> None:
    sim = Simulation.load(
        timeline(5, duration=10), mode="fast", lease_timeout=0.01, lease_policy=LeasePolicy.END
    )
    sim.begin_lease("stuck-agent")
    with anyio.fail_after(5):
        await sim.run()
    assert sim.end_state is EndState.LEASE_EXPIRED and sim.state == "stopped"


async def test_a_realtime_tick_later_than_max_lag_under_strict_ends_the_run_failed() -> None:
    wall = JumpingWall()
    sim = Simulation.load(
        timeline(1.0, duration=20.0, initialize=True),
        mode="realtime",
        speed=1000.0,  # one wall millisecond per simulated second
        wall=wall,
        sleep=wall.sleep,
        lag_policy=LagPolicy.STRICT,
        max_lag=0.01,
    )
    async with sim:
        await first_tick_run(sim)
        wall.jump(0.05)  # the next tick is 0.05 wall seconds late
        with anyio.fail_after(5):
            await sim.run()
    assert sim.end_state is EndState.TOO_LATE and sim.state == "failed"


async def test_fail_ends_the_run_failed() -> None:
    sim = Simulation.load(timeline(1, duration=10), mode="manual")
    sim.fail("the scenario's code raised")
    assert sim.end_state is EndState.FAILED and sim.state == "failed"
    assert sim.end_reason == "the scenario's code raised"


async def test_the_first_ending_is_the_one_it_keeps() -> None:
    sim = Simulation.load(timeline(1, duration=10), mode="manual")
    async with sim:
        sim.fail("first")
        with pytest.raises(BadStateError):
            await sim.stop("second")
    assert sim.end_state is EndState.FAILED and sim.end_reason == "first"


@pytest.mark.parametrize(
    ("state", "failed"),
    [
        (EndState.RAN_TO_END, False),
        (EndState.STOPPED, False),
        (EndState.LEFT, False),
        (EndState.LEASE_EXPIRED, False),
        (EndState.TOO_LATE, True),
        (EndState.FAILED, True),
    ],
)
def test_only_failures_end_in_ares_failed_state(state: EndState, failed: bool) -> None:
    assert state.ended and state.failed is failed


def test_running_is_not_ended() -> None:
    assert not EndState.RUNNING.ended
