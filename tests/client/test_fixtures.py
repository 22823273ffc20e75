"""The pytest plugin's fixtures (areasync.testing), used the way a harness user would."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from areasync.client import ForbiddenError
from areasync.protocol import EndedItem, Role
from areasync.simulation import Simulation
from areasync.testing import AreasyncServer, ClientFactory, SimulationFactory
from tests.scenarios import timeline

pytest_plugins = ["pytester"]


async def test_the_server_fixture_serves_scenario_tutorial_in_fast_mode(
    areasync_server: AreasyncServer,
) -> None:
    assert areasync_server.session_id == "scenario_tutorial"
    assert (
        areasync_server.url == f"ws://127.0.0.1:{areasync_server.port}/sessions/scenario_tutorial"
    )
    assert areasync_server.simulation().clock.mode.value == "fast"
    assert set(areasync_server.tokens()) == set(Role) - {Role.ADMIN}


async def test_the_client_factory_connects_to_the_default_session(
    areasync_client: ClientFactory,
) -> None:
    agent = await areasync_client(role="agent")
    with anyio.fail_after(10):
        tools = await agent.list_tools()
    assert agent.session_id == "scenario_tutorial"
    assert "AgentUserInterface__send_message_to_user" in {tool.name for tool in tools}


async def test_the_client_factory_uses_the_token_it_is_given(
    areasync_server: AreasyncServer, areasync_client: ClientFactory
) -> None:
    observer = await areasync_client(role="observer", token=areasync_server.tokens()[Role.OBSERVER])
    with anyio.fail_after(10), pytest.raises(ForbiddenError):
        await observer.call_tool("SystemApp__get_current_time")


@pytest.mark.areasync(scenario="scenario_find_image_file", mode="manual")
async def test_the_marker_configures_the_server(areasync_server: AreasyncServer) -> None:
    assert areasync_server.session_id == "scenario_find_image_file"
    assert areasync_server.simulation().clock.mode.value == "manual"


@pytest.mark.parametrize(
    "areasync_server_options",
    [{"scenario": "scenario_tutorial", "mode": "manual"}, {"scenario": "scenario_apps_tutorial"}],
    indirect=True,
)
async def test_the_server_options_can_be_parametrized(
    areasync_server: AreasyncServer, areasync_server_options: dict[str, Any]
) -> None:
    assert areasync_server.session_id == areasync_server_options["scenario"]
    expected = areasync_server_options.get("mode", "fast")
    assert areasync_server.simulation().clock.mode.value == expected


async def test_sessions_can_be_added_at_run_time(
    areasync_server: AreasyncServer, areasync_client: ClientFactory
) -> None:
    session_id = areasync_server.create_session("scenario_validation_tutorial", mode="manual")
    observer = await areasync_client(role="observer", session=session_id)
    assert observer.scenario_id == "scenario_validation_tutorial"


async def test_an_oracle_session_runs_to_its_end_without_an_agent(
    areasync_server: AreasyncServer, areasync_client: ClientFactory
) -> None:
    session_id = areasync_server.create_session("scenario_tutorial", oracle=True)
    observer = await areasync_client(role="observer", session=session_id, since=0)
    with anyio.fail_after(30):
        ended = await observer.wait_ended()
    assert isinstance(ended, EndedItem)
    assert ended.validation is not None and ended.validation.success is True


async def test_the_simulation_factory_runs_in_process(
    areasync_simulation: SimulationFactory,
) -> None:
    simulation = areasync_simulation("scenario_tutorial", mode="fast", oracle=True)
    assert isinstance(simulation, Simulation)
    with anyio.fail_after(30):
        validation = await simulation.run()
    assert validation is not None and validation.success is True


def test_async_tests_using_the_fixtures_need_no_marker_in_strict_mode(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        """
        async def test_agent(areasync_client):
            agent = await areasync_client(role="agent")
            assert await agent.list_tools()
        """
    )
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--asyncio-mode=strict")
    result.assert_outcomes(passed=1)


EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "test_harness_example.py"

# The strict-mode runs are pytest runs of their own in this process (`runpytest_inprocess`): a
# fresh configuration that loads the plugin through its entry point as a user's run does,
# without a fresh interpreter importing pytest's plugins and ARE again (seconds each).


def test_the_harness_example_passes_in_strict_mode(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_harness_example=EXAMPLE.read_text())
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--asyncio-mode=strict")
    result.assert_outcomes(passed=3)


@pytest.mark.areasync(scenario=lambda: timeline(1, 2, duration=5), mode="manual")
@pytest.mark.parametrize("run", [1, 2])
async def test_a_scenario_factory_gives_each_test_a_fresh_scenario(
    areasync_server: AreasyncServer, areasync_client: ClientFactory, run: int
) -> None:
    controller = await areasync_client(role="controller")
    with anyio.fail_after(10):
        await controller.jump(by=3)
    # A scenario reused from the previous run would carry that run's marks too.
    assert areasync_server.simulation().env.get_app("TimelineApp").marks == ["t=1", "t=2"]
