"""Fast mode with agents: time stands still while an agent holds its busy lease."""

import anyio

from areasync import LeasePolicy, Simulation
from areasync.simulation.input_records import LeaseExpired
from tests.scenarios import timeline


async def test_time_is_frozen_while_a_lease_is_held() -> None:
    sim = Simulation.load(timeline(1, 2, duration=10), mode="fast")
    sim.begin_lease("agent")
    async with sim:
        await anyio.wait_all_tasks_blocked()
        assert sim.now == 0.0 and sim.events() == []
        await sim.stop()


async def test_releasing_the_last_lease_jumps_to_the_next_due_items() -> None:
    sim = Simulation.load(timeline(1, 2, duration=10), mode="fast")
    sim.begin_lease("agent")
    async with sim:
        await anyio.wait_all_tasks_blocked()
        sim.end_lease("agent")
        with anyio.fail_after(5):
            await sim.run()
        assert [e.time for e in sim.events()] == [1.0, 2.0]
        assert sim.now == 10.0


async def test_time_waits_for_every_holder() -> None:
    sim = Simulation.load(timeline(1, duration=10), mode="fast")
    sim.begin_lease("a")
    sim.begin_lease("b")
    async with sim:
        sim.end_lease("a")
        await anyio.wait_all_tasks_blocked()
        assert sim.now == 0.0
        sim.end_lease("b")
        with anyio.fail_after(5):
            await sim.run()


async def test_an_expired_lease_is_released_by_default() -> None:
    sim = Simulation.load(timeline(1, duration=10), mode="fast", lease_timeout=0.01)
    sim.begin_lease("stuck-agent")
    async with sim:
        with anyio.fail_after(5):
            await sim.run()
    assert sim.state == "stopped"
    assert [(i.expired, i.policy) for i in sim.inputs if isinstance(i, LeaseExpired)] == [
        ("stuck-agent", "release")
    ]


async def test_an_expired_lease_can_end_the_session() -> None:
    sim = Simulation.load(
        timeline(5, duration=10), mode="fast", lease_timeout=0.01, lease_policy=LeasePolicy.END
    )
    sim.begin_lease("stuck-agent")
    async with sim:
        with anyio.fail_after(5):
            await sim.run()
    assert sim.ended and sim.events() == []
