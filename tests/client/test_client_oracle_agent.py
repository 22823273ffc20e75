"""The oracle agent over the socket reproduces ARE's own oracle run, event for event.

For each registered ARE scenario that needs no network, and for ARE/Gaia2 JSON scenarios, a
live session runs the scenario *without* oracle mode while the oracle agent (areasync.agents.
oracle) makes the oracle's tool calls over a WebSocket; the session's event log must then equal
ARE's own oracle run (its queue-based loop, in oracle mode) in the conformance normal form.
`comparable_log` leaves out exactly what only an agent's run has (its waits, and the app calls
nested in its tool calls, which ARE logs for agents and not for oracle events); the agent
identifies those by event id as it makes its calls.

Two comparisons: with ARE's own oracle run in the conformance normal form (times rounded to
0.1 s, because ARE's clock carries processing time even on the reference's fake clock), and,
to the microsecond, with the same oracle run on areasync's exact virtual clock (the one the
agent's plan comes from, itself equal to ARE's in normal form, see tests/conformance): every
action is made at exactly its oracle time, ahead of or after the other items of its tick as in
ARE's oracle run.
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path

import anyio
import pytest
from are.simulation.environment import Environment
from are.simulation.scenarios.scenario_tutorial.scenario import ScenarioTutorial

from areasync.agents.oracle.agent import (
    OracleAction,
    OraclePlan,
    OracleReport,
    Pace,
    comparable_log,
    oracle_plan,
    run_oracle_agent,
)
from areasync.client import SessionEndedError, connect
from areasync.conformance.normal_form import first_difference, normalized_log
from areasync.conformance.reference_loops import run_are_queue_loop
from areasync.conformance.scenario_json import export_scenario_json, load_scenario_json
from areasync.conformance.scenarios import GAIA2_SHAPED_ID, offline_scenario_ids
from areasync.protocol import EventRecord, Role
from areasync.protocol.records import Validation
from areasync.testing import AreasyncServer
from tests.bounds import PROCESS_S
from tests.scenarios import timeline

WAIT = PROCESS_S  # a whole oracle run, the agent's process started (it imports ARE)
END_OF_TURN = "AgentUserInterface__send_message_to_user"


async def run_agent(
    server: AreasyncServer, session_id: str, plan_source: object, pace: Pace
) -> tuple[OracleReport, OraclePlan]:
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
    return report, plan


def assert_same_log(
    server: AreasyncServer,
    session_id: str,
    report: OracleReport,
    plan: OraclePlan,
    are: Environment,
) -> None:
    assert report.ok, report.unexpected_failures
    env = server.simulation(session_id).env
    live = comparable_log(env, report)
    reference = normalized_log(are)
    assert live == reference, first_difference(live, reference)
    exact = comparable_log(env, report, ndigits=6)
    oracle = normalized_log(plan.simulation.env, ndigits=6)
    assert exact == oracle, first_difference(exact, oracle)


@pytest.mark.parametrize("scenario_id", offline_scenario_ids())
async def test_the_oracle_agent_reproduces_ares_oracle_run(
    areasync_server: AreasyncServer, scenario_id: str
) -> None:
    session_id = areasync_server.create_session(scenario_id, mode="fast")
    report, plan = await run_agent(areasync_server, session_id, scenario_id, Pace.JUMP)
    assert_same_log(areasync_server, session_id, report, plan, run_are_queue_loop(scenario_id))


async def test_the_oracle_agent_waiting_with_ares_wait_tool_reproduces_ares_oracle_run(
    areasync_server: AreasyncServer,
) -> None:
    session_id = areasync_server.create_session("scenario_tutorial", mode="fast")
    report, plan = await run_agent(areasync_server, session_id, "scenario_tutorial", Pace.WAIT)
    assert report.waits > 0
    are = run_are_queue_loop("scenario_tutorial")
    assert_same_log(areasync_server, session_id, report, plan, are)


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
    report, plan = await run_agent(areasync_server, session_id, str(path), pace)
    are = run_are_queue_loop(load_scenario_json(text))
    assert_same_log(areasync_server, session_id, report, plan, are)


async def run_gaia2_benchmark(
    server: AreasyncServer, pace: Pace
) -> tuple[str, OracleReport, OraclePlan]:
    """The two-turn Gaia2 scenario through Gaia2's runner path (`import_from_json_to_benchmark`
    + `preprocess_scenario`, turns chained by a per-tick condition), played by the oracle agent.
    ARE scenarios are single-use: the session and the agent's plan get one each."""
    text = gaia2_json()
    session_id = server.create_session(load_scenario_json(text, benchmark=True), mode="fast")
    report, plan = await run_agent(
        server, session_id, load_scenario_json(text, benchmark=True), pace
    )
    return session_id, report, plan


async def test_the_oracle_agent_reproduces_ares_oracle_run_of_a_gaia2_benchmark_scenario(
    areasync_server: AreasyncServer,
) -> None:
    # Gaia2's runner path: import_from_json_to_benchmark + preprocess_scenario, which chains
    # the turns through a per-tick turn condition. ARE scenarios are single-use: one each.
    session_id, report, plan = await run_gaia2_benchmark(areasync_server, Pace.JUMP)
    assert [call.action.tool for call in report.calls].count(END_OF_TURN) == 2
    are = run_are_queue_loop(load_scenario_json(gaia2_json(), benchmark=True))
    assert_same_log(areasync_server, session_id, report, plan, are)


async def test_the_oracle_agents_end_of_turn_messages_are_logged_at_exactly_the_oracle_time(
    areasync_server: AreasyncServer,
) -> None:
    # ARE's oracle run makes each message first in its tick, ahead of the turn condition
    # checked in the same tick; the agent gets there with an exclusive jump, not 1 us early.
    session_id, report, plan = await run_gaia2_benchmark(areasync_server, Pace.JUMP)
    start = areasync_server.simulation(session_id).env.start_time or 0.0
    logged = [
        event.time - start
        for event in areasync_server.simulation(session_id).events()
        if event.event_type == "AGENT" and event.function == "send_message_to_user"
    ]
    planned = [action.time for action in plan.actions if action.tool == END_OF_TURN]
    assert planned == [11.0, 15.0]
    assert logged == planned
    assert all(call.action.before_tick for call in report.calls if call.action.tool == END_OF_TURN)


async def test_the_waiting_oracle_agent_ends_a_gaia2_turn_one_tick_later_than_ares_oracle(
    areasync_server: AreasyncServer,
) -> None:
    # What pace `wait` cannot do (see areasync.agents.oracle.agent): ARE's wait returns only after
    # the tick at its timeout, so the end-of-turn message at 11 s is made after that tick's
    # turn condition, which sees it one tick later than in ARE's oracle run.
    session_id, report, plan = await run_gaia2_benchmark(areasync_server, Pace.WAIT)
    assert report.ok, report.unexpected_failures

    def turn_checks(events: list[EventRecord], start: float) -> list[tuple[float, object]]:
        checks = [(e.time - start, e.return_value) for e in events if e.event_type == "CONDITION"]
        return checks[-2:]

    simulation = areasync_server.simulation(session_id)
    assert turn_checks(plan.events, plan.start_time) == [(10.0, False), (11.0, True)]
    assert turn_checks(simulation.events(), simulation.env.start_time or 0.0) == [
        (11.0, False),
        (12.0, True),
    ]
    assert next(call.time for call in report.calls if call.action.tool == END_OF_TURN) == 11.0


async def test_the_oracle_agent_orders_its_actions_around_the_items_of_their_tick_as_planned(
    areasync_server: AreasyncServer,
) -> None:
    # A hand-made plan: one action ARE would have run first at 5 s, one after the event at 5 s.
    session_id = areasync_server.create_session(timeline(5, duration=10), mode="fast")

    def mark(label: str, *, before_tick: bool) -> OracleAction:
        return OracleAction(
            time=5.0,
            tool="TimelineApp__mark",
            app="TimelineApp",
            function="mark",
            args={"label": label},
            event_id=f"oracle-{label}",
            return_value=None,
            before_tick=before_tick,
        )

    plan = OraclePlan(
        scenario_id="areasync_test_timeline",
        start_time=0.0,
        actions=[mark("first", before_tick=True), mark("after", before_tick=False)],
        events=[],
        initial_state={},
        end_time=5.0,
    )
    url = areasync_server.session_url(session_id)
    async with (
        connect(url, role="agent", token=areasync_server.token) as agent,
        connect(url, role="controller", token=areasync_server.token) as controller,
    ):
        with anyio.fail_after(WAIT):
            report = await run_oracle_agent(agent, plan, controller=controller, finish=False)
    assert report.ok, report.unexpected_failures
    marks = areasync_server.simulation(session_id).env.get_app("TimelineApp").marks
    assert marks == ["first", "t=5", "after"]


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
    assert areasync_server.simulation().validation == Validation(success=True)


def roomy_tutorial() -> ScenarioTutorial:
    """The tutorial with an hour to run: its end cannot come before an agent slowed by a busy
    machine acts (the oracle's action is at 17 s either way)."""
    scenario = ScenarioTutorial()
    scenario.duration = 3600
    return scenario


async def realtime_when_the_agent_arrives(server: AreasyncServer, held: bool) -> None:
    """Turn the manual session realtime once the agent's process has said hello: however long
    the process takes to start, the clock has not moved before it. `held`: paused first, as a
    session someone else paused (the agent then jumps and acts in it and leaves it paused)."""
    session = server.session()
    with anyio.fail_after(WAIT):
        if held:
            await session.sim.pause()
            session.sim.set_mode("realtime")
        await session.agent_attached.wait()
    if not held:
        session.sim.set_mode("realtime")


# Realtime. Manual until the agent's process arrives (its start-up takes seconds, many more on
# a busy machine), then realtime at speed 3, in a scenario that lasts an hour: no wall-clock race.
# With jumps the clock is held paused (by the test, so the agent leaves it so) and the action is
# made at exactly its time; waiting, the clock flows on between the wait's end and the call.
@pytest.mark.areasync(scenario=roomy_tutorial, mode="manual", speed=3.0)
@pytest.mark.parametrize(
    ("token_role", "pace", "exact_time"),
    [("admin", "jump", 17.0), ("agent", "wait", None)],
)
async def test_areasync_agent_oracle_passes_a_realtime_session(
    areasync_server: AreasyncServer, token_role: str, pace: str, exact_time: float | None
) -> None:
    token = areasync_server.token if token_role == "admin" else areasync_server.tokens()[Role.AGENT]
    command = [sys.executable, "-m", "areasync.cli", "agent", "oracle", "--url"]
    command += [areasync_server.url, "--token", token]
    async with anyio.create_task_group() as tg:
        tg.start_soon(realtime_when_the_agent_arrives, areasync_server, pace == "jump")
        with anyio.fail_after(WAIT):
            result = await anyio.run_process(command, check=False)
    assert result.returncode == 0, result.stderr.decode()
    report = json.loads(result.stdout)
    assert (report["ok"], report["pace"]) == (True, pace)
    [call] = report["calls"]
    assert call["tool"] == "EmailClientApp__forward_email"
    if exact_time is not None:
        assert call["time"] == exact_time
    else:
        # ARE's wait takes whole seconds, so waiting brings the clock to within a second of the
        # oracle's time (the agent acts when less than one more second is left), never sooner.
        assert call["time"] > 16.0
    assert areasync_server.simulation().clock.mode.value == "realtime"
    async with connect(areasync_server.url, role="controller", token=areasync_server.token) as c:
        await c.stop()
    assert areasync_server.simulation().validation == Validation(success=True)


@pytest.mark.areasync(mode="manual")
async def test_areasync_agent_oracle_drives_a_manual_session_with_an_admin_token(
    areasync_server: AreasyncServer,
) -> None:
    command = [sys.executable, "-m", "areasync.cli", "agent", "oracle", "--url"]
    command += [areasync_server.url, "--token", areasync_server.token]
    with anyio.fail_after(WAIT):
        result = await anyio.run_process(command, check=False)
    assert result.returncode == 0, result.stderr.decode()
    report = json.loads(result.stdout)
    assert (report["ok"], report["pace"]) == (True, "jump")
    assert [call["time"] for call in report["calls"]] == [17.0]
    async with connect(areasync_server.url, role="controller", token=areasync_server.token) as c:
        await c.stop()  # manual: the clock rests where the agent left it
    assert areasync_server.simulation().validation == Validation(success=True)
