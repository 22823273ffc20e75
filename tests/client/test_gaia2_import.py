"""Multi-turn Gaia2 JSON served as Gaia2's runner imports it: a live agent reaches every turn.

ARE's plain JSON import chains a later turn's user message to the oracle's end-of-turn
`send_message_to_user`, which only oracle mode runs. Served from a file (start-up scenarios,
`areasync serve --scenario`) or inline (`create_session`), a two-turn Gaia2 JSON is imported
the benchmark way by default (`import_mode` auto): `import_from_json_to_benchmark` +
`preprocess_scenario` without a judge, as in
`areasync.conformance.scenario_json.load_scenario_json(..., benchmark=True)`, the reference the
live log is compared with (ARE's oracle run of that import).
"""

from __future__ import annotations

import contextlib
import json
import re
import signal
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from areasync.agents.oracle.agent import Pace, oracle_plan, run_oracle_agent
from areasync.client import connect
from areasync.conformance.reference_loops import run_are_queue_loop
from areasync.conformance.scenario_json import load_scenario_json
from areasync.protocol import CreateSession, EventItem, EventRecord, ImportMode, Mode
from areasync.protocol.records import Validation
from areasync.testing import AreasyncServer
from tests.client.test_client_oracle_agent import WAIT, assert_same_log, gaia2_json, run_agent
from tests.service.durable_support import read_banner

GAIA2_FILE = "gaia2_two_turns.json"
END_OF_TURN = "AgentUserInterface__send_message_to_user"
NO_JUDGE = Validation()  # ARE's "no validation"
TURN_2_MESSAGE = "Book lunch with Alice tomorrow."  # the user's message that opens turn 2


@pytest.fixture
def gaia2_file(tmp_path: Path) -> Path:
    path = tmp_path / GAIA2_FILE
    path.write_text(gaia2_json())
    return path


@pytest.fixture
def areasync_server_options(gaia2_file: Path) -> dict[str, Any]:
    # The server's start-up scenarios: the Gaia2 file by path, as `areasync serve --scenario`.
    return {"scenarios": [str(gaia2_file)], "mode": "fast"}


def benchmark_reference() -> Any:
    """ARE's own oracle run of the benchmark-imported scenario (conformance's reference path)."""
    return run_are_queue_loop(load_scenario_json(gaia2_json(), benchmark=True))


def opens_turn_two(record: EventRecord) -> bool:
    return record.function == "send_message_to_agent" and record.args == {"content": TURN_2_MESSAGE}


def second_turn_started(server: AreasyncServer, session_id: str) -> bool:
    """The user's turn-2 message was delivered to the agent in the live session."""
    return any(opens_turn_two(record) for record in server.simulation(session_id).events())


async def test_a_gaia2_file_served_at_start_up_gives_ares_benchmark_oracle_log(
    areasync_server: AreasyncServer, gaia2_file: Path
) -> None:
    session_id = areasync_server.session_id
    assert session_id == gaia2_file.stem
    assert areasync_server.session().describe(areasync_server.url).import_mode == "benchmark"
    report, plan = await run_agent(areasync_server, session_id, str(gaia2_file), Pace.JUMP)
    assert [call.action.tool for call in report.calls].count(END_OF_TURN) == 2
    assert second_turn_started(areasync_server, session_id)
    assert_same_log(areasync_server, session_id, report, plan, benchmark_reference())


async def test_an_agent_waiting_with_ares_wait_tool_reaches_the_second_turn(
    areasync_server: AreasyncServer, gaia2_file: Path
) -> None:
    # Agent-only pacing lands the end-of-turn message after its tick's turn check, so turn 2
    # opens a tick later than in ARE's oracle run (see areasync.agents.oracle.agent): no log
    # equality.
    session_id = areasync_server.session_id
    report, _plan = await run_agent(areasync_server, session_id, str(gaia2_file), Pace.WAIT)
    assert report.ok, report.unexpected_failures
    assert report.waits > 0
    assert [call.action.tool for call in report.calls].count(END_OF_TURN) == 2
    assert second_turn_started(areasync_server, session_id)


async def test_a_gaia2_scenario_uploaded_with_create_session_gives_ares_benchmark_oracle_log(
    areasync_server: AreasyncServer,
) -> None:
    text = gaia2_json()
    async with connect(areasync_server.url, role="admin", token=areasync_server.token) as admin:
        created = await admin.request(
            lambda i: CreateSession(id=i, scenario_json=text, mode=Mode.FAST)
        )
    assert created["import_mode"] == "benchmark"
    session_id = created["session_id"]
    areasync_server.session_ids.append(session_id)
    report, plan = await run_agent(areasync_server, session_id, text, Pace.JUMP)
    assert [call.action.tool for call in report.calls].count(END_OF_TURN) == 2
    assert_same_log(areasync_server, session_id, report, plan, benchmark_reference())


async def test_a_gaia2_session_ends_with_ares_validation_without_a_judge(
    areasync_server: AreasyncServer, gaia2_file: Path
) -> None:
    # Gaia2 without an LLM judge: preprocess_scenario(judge_config=None) installs ARE's "no
    # validation", success None, and nothing is mocked. The session runs to its duration.
    url = areasync_server.url
    plan = await oracle_plan(str(gaia2_file))
    async with (
        connect(url, role="agent", token=areasync_server.token) as agent,
        connect(url, role="controller", token=areasync_server.token) as controller,
    ):
        with anyio.fail_after(WAIT):
            report = await run_oracle_agent(agent, plan, pace=Pace.JUMP, controller=controller)
            ended = await agent.wait_ended()
    assert report.ok and ended.validation == NO_JUDGE
    assert areasync_server.simulation().validation == NO_JUDGE


async def test_an_explicit_plain_import_mode_in_create_session_wins_over_auto(
    areasync_server: AreasyncServer,
) -> None:
    async with connect(areasync_server.url, role="admin", token=areasync_server.token) as admin:
        created = await admin.request(
            lambda i: CreateSession(
                id=i, scenario_json=gaia2_json(), mode=Mode.MANUAL, import_mode=ImportMode.PLAIN
            )
        )
    assert created["import_mode"] == "plain"
    events = areasync_server.simulation(created["session_id"]).scenario.events
    assert not [event for event in events if event.event_id.startswith("condition_turn_")]


# -- the command line -------------------------------------------------------------------------


@pytest.mark.parametrize("pace", ["jump", "wait"])
async def test_areasync_serve_a_gaia2_file_and_the_oracle_agent_command_reach_turn_two(
    gaia2_file: Path, tmp_path: Path, pace: str
) -> None:
    # The default: a front, its session workers saying each session's import in the banner.
    serve = [
        *(sys.executable, "-m", "areasync.cli", "serve", "--port", "0"),
        *("--mode", "fast"),
        *("--scenario", str(gaia2_file), "--token", "cli-admin"),
        *("--trace-dir", str(tmp_path / "traces")),
    ]
    async with await anyio.open_process(serve) as server:
        try:
            banner = await read_banner(server)
            match = re.search(r"ws://127\.0\.0\.1:(\d+)/sessions/gaia2_two_turns", banner)
            assert match, banner
            assert "benchmark import" in banner
            agent = [
                *(sys.executable, "-m", "areasync.cli", "agent", "oracle"),
                *("--url", f"ws://127.0.0.1:{match[1]}", "--session", gaia2_file.stem),
                *("--token", "cli-admin", "--scenario", str(gaia2_file), "--pace", pace),
            ]
            with anyio.fail_after(60):
                result = await anyio.run_process(agent, check=False)
            assert result.returncode == 0, result.stderr.decode()
            report = json.loads(result.stdout)
            tools = [call["tool"] for call in report["calls"]]
            assert (report["ok"], report["pace"], tools.count(END_OF_TURN)) == (True, pace, 2)
            # The user's turn-2 message went out, after the agent's first end of turn.
            url = f"ws://127.0.0.1:{match[1]}/sessions/{gaia2_file.stem}"
            async with connect(url, role="observer", token="cli-admin", since=0) as observer:
                with anyio.fail_after(WAIT):
                    items = [item async for item in observer.stream(since=0)]
            events = [item.event for item in items if isinstance(item, EventItem)]
            first_end = next(e.time for e in events if e.function == "send_message_to_user")
            assert [e.time > first_end for e in events if opens_turn_two(e)] == [True]
        finally:
            server.send_signal(signal.SIGINT)
            with anyio.fail_after(30), contextlib.suppress(ProcessLookupError):
                await server.wait()
    [trace] = list((tmp_path / "traces").glob(f"{gaia2_file.stem}_*.json"))  # SIGINT wrote it
    assert json.loads(trace.read_text())["metadata"]["definition"]["scenario_id"] == (
        "areasync_gaia2_shaped"
    )


async def test_areasync_serve_import_mode_plain_wins_over_auto(gaia2_file: Path) -> None:
    # The default: a front, its session workers saying each session's import in the banner.
    serve = [
        *(sys.executable, "-m", "areasync.cli", "serve", "--port", "0"),
        *("--mode", "manual"),
        *("--scenario", str(gaia2_file), "--import-mode", "plain", "--trace-dir", ""),
    ]
    async with await anyio.open_process(serve) as server:
        try:
            banner = await read_banner(server)
        finally:
            server.send_signal(signal.SIGINT)
            with anyio.fail_after(30), contextlib.suppress(ProcessLookupError):
                await server.wait()
    assert re.search(r"session gaia2_two_turns .*plain import", banner), banner
