"""Long jumps and ticks yield to the event loop every `control_budget`, yet stay atomic.

A tiny budget (`control_budget` for controls, `step_budget` for the fast driver) makes every
fired item a yield point, so "it yielded" does not depend on how fast the machine is; a huge one
makes the same control a single uninterrupted stretch.
"""

from __future__ import annotations

import itertools
from typing import Any

import anyio
import pytest

from areasync import Simulation
from areasync.conformance.normal_form import normalized_log
from areasync.protocol import EventItem
from bench.synthetic import synthetic_scenario
from tests.scenarios import timeline

TINY = 1e-9  # every item fired spends the budget: a yield after each one
HUGE = 3600.0  # never spent: one stretch, as before

MANY = [i * 0.25 for i in range(1, 2001)]  # 2,000 events, 0.25 s apart, 0.25 .. 500.0
TARGET = 525.0


def many(budget: float, mode: str = "manual", **options: Any) -> Simulation:
    return Simulation.load(
        timeline(*MANY, duration=600.0),
        mode=mode,
        step_budget=budget,
        control_budget=budget,
        **options,
    )


async def test_a_long_jump_lets_other_tasks_run_before_it_returns() -> None:
    sim = Simulation.load(synthetic_scenario(5000), mode="manual", control_budget=TINY)
    seen_meanwhile: list[int] = []
    finished = False

    async def watch() -> None:
        while not finished:
            seen_meanwhile.append(len(sim.log.items))
            await anyio.lowlevel.checkpoint()

    async with sim, anyio.create_task_group() as tg:
        tg.start_soon(watch)
        await anyio.lowlevel.checkpoint()  # the watcher is running
        start = len(sim.log.items)
        await sim.jump(to=4500)
        finished = True
        end = len(sim.log.items)
    assert len(sim.events()) > 3000
    # The watcher ran many times while the jump was half done: it saw the burst grow.
    partial = {n for n in seen_meanwhile if start < n < end}
    assert len(partial) > 100


async def test_a_short_jump_within_its_budget_does_not_yield() -> None:
    sim = many(HUGE)
    ran = False

    async def other() -> None:
        nonlocal ran
        ran = True

    async with sim, anyio.create_task_group() as tg:
        await anyio.lowlevel.checkpoint()
        tg.start_soon(other)
        await sim.jump(to=TARGET)
        assert not ran  # no checkpoint on the way: the other task has not had a turn
        await anyio.lowlevel.checkpoint()
        assert ran


async def _once_jump_has_yielded(sim: Simulation) -> None:
    """Return once the jump under way has fired some items but not all of them."""
    while not any(isinstance(item, EventItem) for item in sim.log.items):
        await anyio.lowlevel.checkpoint()
    assert len(sim.events()) < len(MANY)


async def test_a_tool_call_sent_during_a_long_jump_runs_after_it_at_the_target_time() -> None:
    sim = many(TINY)
    async with sim, anyio.create_task_group() as tg:
        tg.start_soon(lambda: sim.jump(to=TARGET))
        await _once_jump_has_yielded(sim)
        assert sim.lane.locked()
        count = await sim.call_tool("TimelineApp__mark", {"label": "agent"})
    events = sim.events()
    assert count == len(MANY) + 1  # every ENV mark was made before it
    agent = events[-1]
    assert agent.event_type == "AGENT" and agent.time == TARGET
    assert [e.event_type for e in events[:-1]] == ["ENV"] * len(MANY)
    assert sim.inputs[-1].source == "call_tool" and sim.inputs[-1].time == TARGET


async def test_a_second_control_sent_during_a_long_jump_runs_after_it() -> None:
    sim = many(TINY)
    async with sim, anyio.create_task_group() as tg:
        tg.start_soon(lambda: sim.jump(to=TARGET))
        await _once_jump_has_yielded(sim)
        clock = await sim.jump(by=5)  # relative to where the first jump left the clock
    assert clock.time == TARGET + 5
    assert [(i.source, i.time) for i in sim.inputs] == [("jump", 0.0), ("jump", TARGET)]
    assert len(sim.events()) == len(MANY)


async def test_commands_waiting_for_the_lane_run_in_arrival_order() -> None:
    sim = many(TINY)
    order: list[str] = []

    async def call(label: str) -> None:
        await sim.call_tool("TimelineApp__mark", {"label": label})
        order.append(label)

    async with sim, anyio.create_task_group() as tg:
        tg.start_soon(lambda: sim.jump(to=TARGET))
        await _once_jump_has_yielded(sim)
        for label in ("a", "b", "c"):
            tg.start_soon(call, label)
            await anyio.lowlevel.checkpoint()  # each is in line before the next asks
        assert sim.lane.waiting == 3
    assert order == ["a", "b", "c"]
    assert sim.env.get_app("TimelineApp").marks[-3:] == ["a", "b", "c"]


async def test_a_jump_whose_caller_is_cancelled_midway_still_completes() -> None:
    sim = many(TINY)
    async with sim:
        with anyio.move_on_after(0) as scope:  # cancelled at its first yield
            await sim.jump(to=TARGET)
        assert scope.cancelled_caught or sim.now == TARGET
        assert sim.now == TARGET
        assert len(sim.events()) == len(MANY)
        with anyio.fail_after(5):  # the lane was handed on, not leaked
            assert await sim.call_tool("TimelineApp__count", {}) == len(MANY)


def _stepping_wall(step: float = 0.001) -> Any:
    """A wall clock that moves on every reading: a flowing realtime clock, deterministically."""
    counter = itertools.count()
    return lambda: next(counter) * step


async def _run_controls(sim: Simulation, controls: list[tuple[str, dict[str, Any]]]) -> None:
    for name, kwargs in controls:
        await getattr(sim, name)(**kwargs)


CONTROLS = {
    "inclusive_jump": [("jump", {"to": 120.0}), ("jump", {"to": TARGET})],
    "exclusive_jump": [("jump", {"to": 120.0, "inclusive": False}), ("jump", {"by": 50.0})],
    "ticks": [("tick", {"n": 7}), ("tick", {"n": 300})],
    "next_event": [("next_event", {}), ("jump", {"to": 3.0, "inclusive": False})],
}


@pytest.mark.parametrize("mode", ["manual", "fast", "realtime"])
@pytest.mark.parametrize("controls", list(CONTROLS), ids=list(CONTROLS))
async def test_a_chunked_control_logs_exactly_what_an_unchunked_one_does(
    mode: str, controls: str
) -> None:
    # The driver is not started: only the controls move time (realtime's wall still flows).
    logs = []
    for budget in (HUGE, TINY):
        options: dict[str, Any] = {"speed": 50.0, "wall": _stepping_wall()}
        sim = many(budget, mode=mode, **options)
        await _run_controls(sim, CONTROLS[controls])
        logs.append((normalized_log(sim.env), sim.now, int(sim.env.tick_count)))
    assert logs[0] == logs[1]
    assert logs[0][0]  # something fired
