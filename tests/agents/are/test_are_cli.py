"""`areasync agent are` as a real command: it plays a session as ARE's runner plays it, and
every mistake it can see before the first generation is one clear line and a non-zero exit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from functools import partial
from pathlib import Path

import anyio
import anyio.abc
import pytest

from areasync.client import connect
from areasync.conformance.normal_form import first_difference, normalized_log
from areasync.gaia2.stub_llm import StubLLM
from areasync.testing import AreasyncServer
from tests.agents.held_import import run_held, the_agent_answers_a_ping
from tests.agents.runs import MODEL, Run, in_process, scenario_text
from tests.bounds import PROCESS_S
from tests.stubs import stub_fixture

GIVE_UP_S = PROCESS_S
NOBODY = "127.0.0.1:9"  # the discard port: nothing listens there


stub = stub_fixture()


@pytest.fixture(scope="module")
def reference(stub: StubLLM) -> Run:
    return in_process(stub, "tiny_email")


def command(url: str, token: str, *extra: str, endpoint: str | None = None) -> list[str]:
    args = [sys.executable, "-m", "areasync.cli", "agent", "are", "--url", url]
    args += ["--token", token, "--model", MODEL, "--provider", "local", "--wait", "2"]
    if endpoint is not None:
        args += ["--endpoint", endpoint]
    return [*args, *extra]


def environment(*, key: bool = True) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    if key:
        env["OPENAI_API_KEY"] = "stub"
    return env


async def areasync_agent_are(
    cmd: list[str], *, key: bool = True
) -> subprocess.CompletedProcess[str]:
    with anyio.fail_after(GIVE_UP_S):
        done = await anyio.run_process(cmd, check=False, env=environment(key=key))
    return subprocess.CompletedProcess(
        cmd, done.returncode, done.stdout.decode(), done.stderr.decode()
    )


def assert_one_clear_line(
    done: subprocess.CompletedProcess[str], status: int, *phrases: str
) -> None:
    assert done.returncode == status, done.stderr
    assert "Traceback" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("areasync agent are: "), done.stderr
    for phrase in phrases:
        assert phrase in last, done.stderr


@pytest.mark.areasync(scenarios=[])
async def test_the_command_plays_a_session_as_ares_runner_does(
    areasync_server: AreasyncServer, stub: StubLLM, reference: Run, tmp_path: Path
) -> None:
    path = tmp_path / "tiny_email.json"
    path.write_text(scenario_text("tiny_email"))
    session_id = areasync_server.create_session(str(path), mode="fast", import_mode="benchmark")
    url = f"ws://127.0.0.1:{areasync_server.port}"
    before = len(stub.requests)
    done = await areasync_agent_are(
        command(
            url,
            areasync_server.token,
            "--session",
            session_id,
            "--scenario",
            str(path),
            "--import-mode",
            "benchmark",
            endpoint=stub.endpoint,
        )
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    # The report and the command's log say why, should the calls differ.
    why = f"{report}\n{done.stderr[-4000:]}"
    assert [(c["tool"], c["args"]) for c in report["calls"]] == reference.calls, why
    assert report["ended"]["state"] == "stopped" and report["ended"]["stopped_by_agent"], why
    assert len(stub.requests) - before == len(reference.requests), why
    log = normalized_log(areasync_server.simulation(session_id).env)
    assert log == reference.log, first_difference(log, reference.log)


@pytest.mark.areasync(scenarios=[])
@pytest.mark.parametrize("module", ["are", "litellm"])  # on connecting; building the agent
async def test_the_command_answers_its_servers_pings_while_it_imports_are(
    areasync_server: AreasyncServer, stub: StubLLM, reference: Run, tmp_path: Path, module: str
) -> None:
    # An import that takes long (tens of seconds on a busy machine) is held here until the
    # server's ping was answered: on the event loop, it would hold the pong too, and the
    # server would close the agent's socket as stalled while fast time runs on without it.
    path = tmp_path / "tiny_email.json"
    path.write_text(scenario_text("tiny_email"))
    session_id = areasync_server.create_session(str(path), mode="fast", import_mode="benchmark")
    session = areasync_server.session(session_id)
    url = f"ws://127.0.0.1:{areasync_server.port}"
    args = ["--session", session_id, "--scenario", str(path), "--import-mode", "benchmark"]
    played = command(url, areasync_server.token, *args, endpoint=stub.endpoint)
    answered = partial(the_agent_answers_a_ping, session)
    result = await run_held(module, played[3:], answered, env=environment())
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert [(c["tool"], c["args"]) for c in report["calls"]] == reference.calls, result.stderr


async def test_an_unreachable_model_is_one_clear_line() -> None:
    done = await areasync_agent_are(
        command(f"ws://{NOBODY}", "t", "--session", "s", endpoint=f"http://{NOBODY}/v1")
    )
    assert_one_clear_line(done, 1, f"cannot reach the model at http://{NOBODY}/v1", "--endpoint")


async def test_a_missing_openai_key_is_one_clear_line(stub: StubLLM) -> None:
    done = await areasync_agent_are(
        command(f"ws://{NOBODY}", "t", "--session", "s", endpoint=stub.endpoint), key=False
    )
    assert_one_clear_line(done, 2, "OPENAI_API_KEY")


async def test_no_server_is_one_clear_line(stub: StubLLM) -> None:
    done = await areasync_agent_are(
        command(f"ws://{NOBODY}", "t", "--session", "s", endpoint=stub.endpoint)
    )
    assert_one_clear_line(done, 1, f"no server answered at ws://{NOBODY}", "--url")


async def test_a_bad_token_is_one_clear_line(
    areasync_server: AreasyncServer, stub: StubLLM
) -> None:
    done = await areasync_agent_are(
        command(areasync_server.url, "not-a-token", endpoint=stub.endpoint)
    )
    assert_one_clear_line(done, 1, "token")


async def test_an_unknown_session_is_one_clear_line(
    areasync_server: AreasyncServer, stub: StubLLM
) -> None:
    url = f"ws://127.0.0.1:{areasync_server.port}"
    done = await areasync_agent_are(
        command(url, areasync_server.token, "--session", "no-such-session", endpoint=stub.endpoint)
    )
    assert_one_clear_line(done, 1, "no-such-session")


async def test_an_ended_session_is_one_clear_line(
    areasync_server: AreasyncServer, stub: StubLLM
) -> None:
    async with connect(areasync_server.url, role="controller", token=areasync_server.token) as c:
        await c.stop()
    done = await areasync_agent_are(
        command(areasync_server.url, areasync_server.token, endpoint=stub.endpoint)
    )
    assert_one_clear_line(done, 1, "has already ended", "create a new one")


async def test_a_session_of_another_scenario_is_one_clear_line(
    areasync_server: AreasyncServer, stub: StubLLM, tmp_path: Path
) -> None:
    path = tmp_path / "tiny_email.json"
    path.write_text(scenario_text("tiny_email"))
    # The default session runs scenario_tutorial; its tools are not tiny_email's.
    done = await areasync_agent_are(
        command(
            areasync_server.url,
            areasync_server.token,
            "--scenario",
            str(path),
            endpoint=stub.endpoint,
        )
    )
    assert_one_clear_line(done, 2, "the session's tools are not the scenario's", "--scenario")


async def test_a_url_that_is_not_a_websocket_url_is_one_clear_line() -> None:
    done = await areasync_agent_are(command("127.0.0.1:8765", "t", "--session", "s"))
    assert done.returncode == 2
    assert "--url '127.0.0.1:8765' is not a WebSocket URL" in done.stderr
    assert "ws://HOST:PORT" in done.stderr
