"""A stop preempts a long tick, jump or next_event; ticks and jumps have bounds.

Tiny `control_budget`s make every tick or fired item a yield point, so a test can stop a
control half way without depending on the machine's speed.
"""

from __future__ import annotations

from collections.abc import Callable

import anyio
import pytest

from areasync import InvalidRequestError, Simulation
from areasync.simulation import ControlInterruptedError
from tests.scenarios import timeline
from tests.waiting import eventually

TINY = 1e-9  # every tick or item spends the budget: a yield after each one
NO_DURATION = "scenario_find_image_file"  # a registered scenario without a duration
HUGE_N = 10**12


async def _wait_until(condition: Callable[[], bool]) -> None:
    # Polled: the simulation signals no event for "n ticks have run".
    await eventually(condition, poll=0.001)


async def test_a_stop_interrupts_a_long_tick_on_a_session_without_a_duration() -> None:
    sim = Simulation.load(NO_DURATION, mode="manual", control_budget=TINY, max_ticks=HUGE_N)
    outcome: list[BaseException] = []

    async def tick() -> None:
        try:
            await sim.tick(HUGE_N)
        except ControlInterruptedError as exc:
            outcome.append(exc)

    async with anyio.create_task_group() as tg:
        tg.start_soon(tick)
        await _wait_until(lambda: sim.env.tick_count > 10)
        validation = await sim.stop()
    assert validation is not None
    assert sim.ended and sim.state == "stopped"
    [interrupted] = outcome
    assert "interrupted by a stop" in str(interrupted) and f"of its {HUGE_N} ticks" in str(
        interrupted
    )
    assert 10 < sim.env.tick_count < HUGE_N
    sources = [record.source for record in sim.inputs]
    assert sources == ["tick", "interrupted", "stop"]


async def test_an_interrupted_jump_leaves_what_it_fired_fired_and_the_clock_where_it_got() -> None:
    sim = Simulation.load(
        timeline(*[i * 0.5 for i in range(1, 1001)], duration=None),
        mode="manual",
        control_budget=TINY,
    )
    outcome: list[BaseException] = []

    async def jump() -> None:
        try:
            await sim.jump(to=600.0)
        except ControlInterruptedError as exc:
            outcome.append(exc)

    async with anyio.create_task_group() as tg:
        tg.start_soon(jump)
        await _wait_until(lambda: len(sim.events()) > 5)
        await sim.stop()
    [interrupted] = outcome
    assert "short of its target" in str(interrupted)
    fired = sim.events()
    assert 5 < len(fired) < 1000
    # The clock stopped at the last item it fired: nothing after it ran, the target was not
    # reached.
    assert sim.now == fired[-1].time < 600.0
    assert [e.args["label"] for e in fired] == [f"t={i * 0.5:g}" for i in range(1, len(fired) + 1)]


async def test_a_control_that_gets_the_lane_while_a_stop_is_announced_does_nothing() -> None:
    sim = Simulation.load(timeline(1.0, 2.0), mode="manual")
    withdraw = sim.announce_stop()
    with pytest.raises(ControlInterruptedError, match="nothing was done"):
        await sim.jump(by=5.0)
    with pytest.raises(ControlInterruptedError, match="nothing was done"):
        await sim.tick(3)
    assert sim.now == 0.0 and sim.events() == [] and sim.inputs == []
    withdraw()
    withdraw()  # idempotent
    await sim.jump(by=5.0)
    assert len(sim.events()) == 2


async def test_other_commands_behind_a_long_control_keep_their_order_without_a_stop() -> None:
    sim = Simulation.load(
        timeline(*[i * 0.5 for i in range(1, 401)], duration=None),
        mode="manual",
        control_budget=TINY,
    )
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: sim.jump(to=250.0))
        await _wait_until(lambda: len(sim.events()) > 0)
        await sim.pause()  # waits its turn: runs after the whole jump, at the time it left
    assert sim.now == 250.0 and len(sim.events()) == 400
    assert [record.source for record in sim.inputs] == ["jump", "pause"]


async def test_a_tick_above_max_ticks_is_refused_naming_the_bound_and_changes_nothing() -> None:
    sim = Simulation.load(NO_DURATION, mode="manual", max_ticks=50)
    with pytest.raises(InvalidRequestError, match=r"limit of 50 ticks.*split it"):
        await sim.tick(51)
    assert sim.env.tick_count == 0 and sim.inputs == []
    await sim.tick(50)
    assert sim.env.tick_count == 50


@pytest.mark.parametrize(
    "jump",
    [{"by": 100.5}, {"to": 100.5}, {"by": 1e300}, {"to": 1e300}],
    ids=["by", "to", "by-huge", "to-huge"],
)
async def test_a_jump_beyond_max_jump_is_refused_naming_the_bound_and_changes_nothing(
    jump: dict[str, float],
) -> None:
    sim = Simulation.load(timeline(50.0, 100.0, duration=None), mode="manual", max_jump=100.0)
    with pytest.raises(InvalidRequestError, match=r"limit of 100 s per jump.*split it"):
        await sim.jump(**jump)  # type: ignore[arg-type]
    assert sim.now == 0.0 and sim.events() == [] and sim.inputs == []
    await sim.jump(by=100.0)  # exactly the bound is fine
    assert sim.now == 100.0 and len(sim.events()) == 2


async def test_next_event_beyond_max_jump_is_refused_and_changes_nothing() -> None:
    sim = Simulation.load(timeline(500.0, duration=None), mode="manual", max_jump=100.0)
    with pytest.raises(InvalidRequestError, match="next_event would move the clock 500"):
        await sim.next_event()
    assert sim.now == 0.0 and sim.events() == []


def test_the_default_bounds_leave_room_for_a_whole_gaia2_scenario() -> None:
    sim = Simulation.load(NO_DURATION, mode="manual")
    assert sim.settings.max_ticks >= 1800 * 10 and sim.settings.max_jump >= 1800 * 10


@pytest.mark.parametrize(
    "options", [{"max_ticks": 0}, {"max_jump": 0.0}, {"max_jump": float("nan")}]
)
def test_bad_bounds_are_refused_by_name(options: dict[str, float]) -> None:
    with pytest.raises(InvalidRequestError, match=next(iter(options))):
        Simulation.load(NO_DURATION, mode="manual", **options)  # type: ignore[arg-type]
