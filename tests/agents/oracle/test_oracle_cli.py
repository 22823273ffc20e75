"""`areasync agent oracle` as a real command: connected, it goes on answering its server while
it makes its plan (ARE's oracle run of the whole scenario, seconds of CPU for a Gaia2 one)."""

from __future__ import annotations

import json
import sys
from functools import partial
from pathlib import Path

import anyio

from areasync.protocol.records import Validation
from areasync.testing import AreasyncServer
from tests.agents.held_import import run_held, the_agent_answers_a_ping
from tests.bounds import PROCESS_S

# The plan's first import of its own (`oracle_plan` imports the engine it runs the scenario
# on): held, it stands for a plan that takes long.
PLAN = "areasync.simulation"


async def test_the_command_answers_its_servers_pings_while_it_makes_its_plan(
    areasync_server: AreasyncServer,
) -> None:
    # Held until the server's ping was answered: on the event loop, the plan would hold the
    # pong too, and the server would close the agent's socket as stalled (4008) while fast
    # time runs on without it.
    args = ["agent", "oracle", "--url", areasync_server.url, "--token", areasync_server.token]
    answered = partial(the_agent_answers_a_ping, areasync_server.session())
    result = await run_held(PLAN, args, answered)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert (report["ok"], report["pace"]) == (True, "jump")
    assert [(call["tool"], call["time"]) for call in report["calls"]] == [
        ("EmailClientApp__forward_email", 17.0)
    ]
    with anyio.fail_after(PROCESS_S):
        await areasync_server.session().done.wait()  # fast: the agent idled, time runs out
    assert areasync_server.simulation().validation == Validation(success=True)


async def test_a_scenario_that_fails_to_load_is_one_clear_line(
    areasync_server: AreasyncServer, tmp_path: Path
) -> None:
    # Made off the event loop, the plan still says what was wrong and what to pass instead.
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    command = [sys.executable, "-m", "areasync.cli", "agent", "oracle", "--url"]
    command += [areasync_server.url, "--token", areasync_server.token, "--scenario", str(broken)]
    with anyio.fail_after(PROCESS_S):
        done = await anyio.run_process(command, check=False)
    stderr = done.stderr.decode()
    assert done.returncode == 2, stderr
    assert "Traceback" not in stderr
    (line,) = stderr.strip().splitlines()
    assert line.startswith("areasync agent oracle: "), stderr
    assert "Pass the session's scenario with --scenario" in line
