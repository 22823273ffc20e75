"""The oracle agent over the socket reproduces ARE's own oracle run, event for event.

For each registered ARE scenario that needs no network, and for ARE/Gaia2 JSON scenarios, a
live session runs the scenario *without* oracle mode while the oracle agent (areasync.agents.
oracle) makes the oracle's tool calls over a WebSocket; the session's event log must then equal
ARE's own oracle run (its queue-based loop, in oracle mode) in the conformance normal form.
`comparable_log` leaves out exactly what only an agent's run has (its waits, and the app calls
nested in its tool calls, which ARE logs for agents and not for oracle events); the agent
identifies those by event id as it makes its calls.
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path

import anyio
import pytest
from are.simulation.environment import Environment

from areasync.agents.oracle import (
    OracleReport,
    Pace,
    comparable_log,
    oracle_plan,
    run_oracle_agent,
)
from areasync.client import SessionEndedError, connect
from areasync.conformance import (
    GAIA2_SHAPED_ID,
    export_scenario_json,
    first_difference,
    load_scenario_json,
    normalized_log,
    offline_scenario_ids,
    run_are_queue_loop,
)
from areasync.protocol import Role
from areasync.testing import AreasyncServer

WAIT = 60  # wall seconds for a whole oracle run; these take well under a second


async def run_agent(
    server: AreasyncServer, session_id: str, plan_source: object, pace: Pace
) -> OracleReport:
    """The oracle agent on `session_id`; the session is stopped once the agent is done."""
    url = server.session_url(session_id)
    plan = await oracle_plan(plan_source)
    async with (
        connect(url, role="agent", token=server.token) as agent,
        connect(url, role="controller", token=server.token) as controller,
    ):
        with anyio.fail_after(WAIT):
            report = await run_oracle_agent(agent, plan, pace=pace, controller=controller)
            # The agent got the clock to the oracle run's last event: everything it logged has
            # happened. Scenarios without a duration would otherwise wait for ever.
            with contextlib.suppress(SessionEndedError):  # it may have run out meanwhile
                await controller.stop()
            await agent.wait_ended()
    return report


def assert_same_log(
    server: AreasyncServer, session_id: str, report: OracleReport, are: Environment
) -> None:
    assert report.ok, report.unexpected_failures
    live = comparable_log(server.simulation(session_id).env, report)
    reference = normalized_log(are)
    assert live == reference, first_difference(live, reference)


@pytest.mark.parametrize("scenario_id", offline_scenario_ids())
async def test_the_oracle_agent_reproduces_ares_oracle_run(
    areasync_server: AreasyncServer, scenario_id: str
) -> None:
    session_id = areasync_server.create_session(scenario_id, mode="fast")
    report = await run_agent(areasync_server, session_id, scenario_id, Pace.JUMP)
    assert_same_log(areasync_server, session_id, report, run_are_queue_loop(scenario_id))


async def test_the_oracle_agent_waiting_with_ares_wait_tool_reproduces_ares_oracle_run(
    areasync_server: AreasyncServer,
) -> None:
    session_id = areasync_server.create_session("scenario_tutorial", mode="fast")
    report = await run_agent(areasync_server, session_id, "scenario_tutorial", Pace.WAIT)
    assert report.waits > 0
    assert_same_log(areasync_server, session_id, report, run_are_queue_loop("scenario_tutorial"))


def gaia2_json(*, single_turn: bool = False) -> str:
    """The conformance suite's Gaia2-shaped scenario as ARE JSON, made playable by an agent.

    Its ENV event `env_reply` answers the email the oracle's `agent_send` sent, through the
    placeholder `{{agent_send}}`, which names an oracle event's id: in an agent's run that id
    never exists (ARE's turn machinery only maps ids across turns), so ARE itself could not
    resolve it. Here the reply answers Bob's email (`{{env_mail}}`, an ENV event) instead.
    `single_turn` also drops the second turn, which in ARE's plain JSON import hangs off the
    oracle's end-of-turn message and so only starts in oracle mode (Gaia2's benchmark import
    rewires it through a turn condition; see the benchmark test below).
    """
    data = json.loads(
        export_scenario_json(GAIA2_SHAPED_ID).replace("{{agent_send}}", "{{env_mail}}")
    )
    if single_turn:
        second_turn = {"user_2", "agent_book", "agent_done_2"}
        data["events"] = [e for e in data["events"] if e["event_id"] not in second_turn]
    return json.dumps(data)


@pytest.mark.parametrize("pace", [Pace.JUMP, Pace.WAIT])
async def test_the_oracle_agent_reproduces_ares_oracle_run_of_a_json_scenario_file(
    areasync_server: AreasyncServer, tmp_path: Path, pace: Pace
) -> None:
    text = gaia2_json(single_turn=True)
    path = tmp_path / "gaia2_single_turn.json"
    path.write_text(text)
    session_id = areasync_server.create_session(str(path), mode="fast")
    report = await run_agent(areasync_server, session_id, str(path), pace)
    assert_same_log(
        areasync_server, session_id, report, run_are_queue_loop(load_scenario_json(text))
    )


async def test_the_oracle_agent_reproduces_ares_oracle_run_of_a_gaia2_benchmark_scenario(
    areasync_server: AreasyncServer,
) -> None:
    # Gaia2's runner path: import_from_json_to_benchmark + preprocess_scenario, which chains
    # the turns through a per-tick turn condition. ARE scenarios are single-use: one each.
    text = gaia2_json()
    session_id = areasync_server.create_session(
        load_scenario_json(text, benchmark=True), mode="fast"
    )
    report = await run_agent(
        areasync_server, session_id, load_scenario_json(text, benchmark=True), Pace.JUMP
    )
    assert [call.action.tool for call in report.calls].count(
        "AgentUserInterface__send_message_to_user"
    ) == 2
    are = run_are_queue_loop(load_scenario_json(text, benchmark=True))
    assert_same_log(areasync_server, session_id, report, are)


@pytest.mark.parametrize(("token_role", "pace"), [("admin", "jump"), ("agent", "wait")])
async def test_areasync_agent_oracle_runs_from_the_command_line(
    areasync_server: AreasyncServer, token_role: str, pace: str
) -> None:
    # The default pace uses a controller connection when the token allows one (the admin
    # token does), else ARE's wait tool (an agent's own token).
    token = areasync_server.token if token_role == "admin" else areasync_server.tokens()[Role.AGENT]
    command = [
        sys.executable,
        "-m",
        "areasync.cli",
        "agent",
        "oracle",
        "--url",
        f"ws://127.0.0.1:{areasync_server.port}",
        "--session",
        areasync_server.session_id,
        "--token",
        token,
    ]
    with anyio.fail_after(WAIT):
        result = await anyio.run_process(command, check=False)
    assert result.returncode == 0, result.stderr.decode()
    report = json.loads(result.stdout)
    assert (report["ok"], report["pace"]) == (True, pace)
    assert [call["tool"] for call in report["calls"]] == ["EmailClientApp__forward_email"]
    assert report["calls"][0]["time"] == 17.0
    with anyio.fail_after(WAIT):
        await areasync_server.session().done.wait()  # fast: the agent idled, time runs out
    assert areasync_server.simulation().validation == {
        "success": True,
        "exception": None,
        "rationale": None,
    }
