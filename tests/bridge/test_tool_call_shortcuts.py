"""Tool calls that leave binding to ARE's wrappers behave as when arguments were checked first.

`areasync.bridge.tools` does not bind a call's arguments itself when the tool's function is
ARE's `event_registered` (events active) or `type_check` wrapper, which bind them to the same
signature before they do anything else. For every tool of every offline registered scenario,
arguments that do not bind still give the up-front check's error, log nothing, publish
nothing and draw no random failure; and the shortcut is not taken where the wrapper would not
bind first.
"""

from __future__ import annotations

from random import Random
from typing import Any

import pytest
from are.simulation.types import disable_events

from areasync import InvalidArgsError, Simulation
from areasync.bridge import tools as bridge_tools
from areasync.conformance.scenarios import load_scenario, offline_scenario_ids

WAIT = "SystemApp__wait_for_notification"


def expected_error(sim: Simulation, name: str, args: dict[str, Any]) -> str | None:
    """The message of the up-front check (`_Binding.check(always=True)`), None if it binds."""
    binding = bridge_tools._Binding(sim.tools.get(name))
    try:
        binding.check(name, args, always=True)
    except InvalidArgsError as exc:
        return str(exc)
    return None


@pytest.mark.parametrize("scenario_id", offline_scenario_ids())
async def test_arguments_that_do_not_bind_are_refused_as_before(scenario_id: str) -> None:
    sim = Simulation.load(load_scenario(scenario_id), mode="manual")
    shortcut = refused = 0
    for name in sim.tools.names():
        tool = sim.tools.get(name)
        shortcut += bridge_tools._Binding(tool).are_binds is not None
        for args in ({"no_such_argument": 1}, {"no_such_argument": 1, "self": 2}, {}):
            message = expected_error(sim, name, args)
            if message is None:
                continue  # these bind (**kwargs, or no required argument)
            refused += 1
            logged, seq, inputs = len(sim.env.event_log), sim.log.seq, len(sim.inputs)
            with pytest.raises(InvalidArgsError) as raised:
                await sim.call_tool(name, args)
            assert str(raised.value) == message
            assert len(sim.env.event_log) == logged and sim.log.seq == seq
            assert len(sim.inputs) == inputs + 1  # the input is recorded, as before
    assert shortcut > 0 and refused > 0
    await sim.stop()


async def test_the_shortcut_is_taken_for_ares_wrappers_only() -> None:
    sim = Simulation.load("scenario_tutorial", mode="manual")
    time_tool = bridge_tools._Binding(sim.tools.get("SystemApp__get_current_time"))
    assert time_tool.are_binds is not None and time_tool.are_binds()
    with disable_events():
        # Events off: ARE's wrapper makes the bare call, so the check is ours again.
        assert not time_tool.are_binds()
    await sim.stop()


async def test_with_events_disabled_bad_arguments_are_still_refused_up_front() -> None:
    sim = Simulation.load("scenario_tutorial", mode="manual")
    message = expected_error(sim, "SystemApp__get_current_time", {"x": 1})
    with disable_events(), pytest.raises(InvalidArgsError) as raised:
        sim.tools.call("SystemApp__get_current_time", {"x": 1})
    assert str(raised.value) == message
    await sim.stop()


async def test_bad_arguments_draw_no_random_failure() -> None:
    sim = Simulation.load("scenario_tutorial", mode="manual")
    tool = sim.tools.get("SystemApp__get_current_time")
    tool.failure_probability = 0.5
    tool.rng = Random(tool.seed)
    state = tool.rng.getstate()
    for _ in range(3):
        with pytest.raises(InvalidArgsError):
            await sim.call_tool("SystemApp__get_current_time", {"x": 1})
    assert tool.rng.getstate() == state
    assert len(sim.env.event_log) == 0
    await sim.stop()


async def test_type_errors_after_binding_are_as_before() -> None:
    # ARE's type_check refuses a wrong type after binding: nothing is logged, and the message
    # is ARE's (no "expected" list: the arguments did bind).
    sim = Simulation.load("scenario_tutorial", mode="manual")
    calendar = next(n for n in sim.tools.names() if n.endswith("__add_calendar_event"))
    with pytest.raises(InvalidArgsError, match="must be of type") as raised:
        await sim.call_tool(calendar, {"title": 3})
    assert "expected:" not in str(raised.value)
    assert len(sim.env.event_log) == 0
    await sim.stop()


async def test_the_wait_tool_refuses_bad_arguments_as_before() -> None:
    sim = Simulation.load("scenario_tutorial", mode="manual")
    message = expected_error(sim, WAIT, {"timeout": 1, "x": 2})
    with pytest.raises(InvalidArgsError) as raised:
        await sim.call_tool(WAIT, {"timeout": 1, "x": 2})
    assert str(raised.value) == message
    assert len(sim.env.event_log) == 0
    await sim.stop()
