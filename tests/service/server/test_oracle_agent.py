"""An agent replaying the oracle's actions over the socket logs what ARE's oracle run logs.

scenario_find_image_file: its oracle action (a message to the user) calls no other logged app
method. For scenarios whose oracle tools do (scenario_tutorial's `forward_email` reads the email
with `get_email_by_id`), ARE logs the inner call as its own AGENT event whenever an agent calls
the tool, but not when its oracle mode runs the action: that difference is ARE's, not ours.
"""

from __future__ import annotations

from typing import Any

from areasync.conformance.normal_form import first_difference, normalized_log
from areasync.conformance.reference_loops import run_are_queue_loop
from areasync.conformance.scenarios import load_scenario
from areasync.protocol import CallTool, Idle, Jump, Role, Stop
from areasync.simulation import Simulation
from tests.service.support import attach, serving

SCENARIO = "scenario_find_image_file"


async def oracle_actions(scenario_id: str) -> list[tuple[float, str, dict[str, Any]]]:
    """(relative time, public tool name, args) of each agent action of ARE's oracle run."""
    sim = Simulation.load(scenario_id, mode="fast", oracle=True)
    await sim.run()
    start = float(sim.env.start_time or 0.0)
    return [
        (event.time - start, f"{event.app}__{event.function}", event.args)
        for event in sim.events()
        if event.event_type == "AGENT"
    ]


async def test_an_oracle_agent_over_the_socket_reproduces_ares_oracle_log() -> None:
    actions = await oracle_actions(SCENARIO)
    assert actions, "the scenario has oracle actions"
    async with (
        serving(SCENARIO, mode="fast") as service,
        attach(service, Role.AGENT, session=SCENARIO) as agent,
        attach(service, Role.CONTROLLER, session=SCENARIO) as controller,
    ):
        session = service.registry.get(SCENARIO)
        assert session is not None
        start = float(session.sim.env.start_time or 0.0)
        for when, tool, args in actions:
            # The agent holds its turn (fast mode): the controller moves time to the action.
            await controller.call(Jump, to=start + when)
            await agent.call(CallTool, tool=tool, args=args)
        await agent.call(Idle)
        await controller.call(Stop)  # no duration: the session would wait for more forever
        ours = normalized_log(session.sim.env)
    theirs = normalized_log(run_are_queue_loop(load_scenario(SCENARIO)))
    assert first_difference(ours, theirs) is None
