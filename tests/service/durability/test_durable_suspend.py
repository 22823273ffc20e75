"""A real `areasync serve --state-dir` stopped with SIGTERM (a deploy) and started again on the
same port and directory: its sessions were suspended, not ended, and come back as they were.

The server is a real subprocess. SIGTERM comes in the middle of an oracle agent's run (right
after its first tool call is answered): the server exits cleanly, having written no trace and no
`Ended`; the next server resumes the session from its journal, and the agent's client, closed
1001 "the server is restarting", reconnects by itself and misses nothing. Without --state-dir a
SIGTERM still ends every session and writes its trace
(`test_cli_serve.test_sigterm_during_a_long_tick_exits_having_written_every_trace`).
"""

from __future__ import annotations

import contextlib
import json
import re
import signal
import sys
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
from anyio.abc import Process
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import ConnectionClosed

from areasync.agents.oracle.agent import oracle_plan
from areasync.client import Client
from areasync.journal import Ended, JournalStore, Recorded
from areasync.protocol import CloseCode
from tests.service.durability.test_durable_restore import SCENARIO, run_agent
from tests.service.durable_support import (
    TOKEN,
    agent_token,
    frames,
    server,
    session_url,
    whole_stream,
)
from tests.service.support import json_files
from tests.waiting import eventually

NO_DURATION = "scenario_find_image_file"  # a registered scenario without a duration
HUGE_N = 10**12


def serve_command(state: Path, traces: Path, port: int, *options: str) -> list[str]:
    return [
        *(sys.executable, "-m", "areasync.cli", "serve", "--workers", "0", "--port", str(port)),
        *("--token", TOKEN),
        *("--trace-dir", str(traces), "--state-dir", str(state), "--durability", "group:0"),
        *options,
    ]


async def terminate(process: Process) -> int:
    process.send_signal(signal.SIGTERM)
    with anyio.fail_after(60):
        return await process.wait()


def records(state: Path, session_id: str) -> list[Any]:
    return JournalStore(state).read(session_id).records


async def sessions(port: int) -> dict[str, Any]:
    def get() -> dict[str, Any]:
        url = f"http://127.0.0.1:{port}/api/sessions?token={TOKEN}"
        with urllib.request.urlopen(url, timeout=10) as reply:
            return {s["id"]: s for s in json.load(reply)["sessions"]}

    return await anyio.to_thread.run_sync(get)


async def ticked(port: int, session_id: str, ticks: int) -> bool:
    """Whether `session_id` has run `ticks` ticks, as the server at `port` lists it."""
    return bool((await sessions(port))[session_id]["clock"]["tick"] >= ticks)


async def test_sigterm_mid_run_suspends_the_session_and_the_restart_resumes_it_losing_nothing(
    tmp_path: Path,
) -> None:
    plan = await oracle_plan(SCENARIO)
    state, traces, log = tmp_path / "state", tmp_path / "traces", tmp_path / "server.log"
    seen: dict[str, Any] = {}
    with anyio.fail_after(120):
        async with contextlib.AsyncExitStack() as stack:
            command = serve_command(state, traces, 0, "--scenario", SCENARIO, "--mode", "fast")
            first, banner = await stack.enter_async_context(server(command, log))
            url = session_url(banner, SCENARIO)
            port = urlsplit(url).port
            assert port is not None

            async def deploy(agent: Client) -> None:
                seen["epoch"] = agent.epoch
                seen["code"] = await terminate(first)
                seen["traces"] = json_files(traces) if traces.exists() else []
                seen["journal"] = records(state, SCENARIO)
                again = serve_command(state, traces, port, "--scenario", SCENARIO, "--mode", "fast")
                _, seen["banner"] = await stack.enter_async_context(server(again, log))
                # The client offers no event for a reconnect.
                await eventually(lambda: agent.reconnects > 0 and agent.connected)

            agent = await run_agent(url, agent_token(banner), plan, deploy)
            after = await whole_stream(url)

    assert seen["code"] == 0
    assert seen["traces"] == []  # suspended, not ended
    assert not any(isinstance(r, Ended) for r in seen["journal"])
    assert "1 session(s) suspended" in log.read_text()
    assert seen["banner"].count(f"/sessions/{SCENARIO}") == 1  # resumed, not started again
    assert "restored from its journal" in seen["banner"]
    assert agent.session_id == SCENARIO and agent.epoch == seen["epoch"]
    assert agent.reconnects >= 1 and agent.resets == 0 and agent.welcome.restored
    first_seq = agent.history[0].seq
    assert [item.seq for item in agent.history] == list(range(first_seq, len(after) + 1))
    assert frames(agent.history) == frames(after[first_seq - 1 :])


async def test_sigterm_interrupts_a_long_tick_and_suspends_the_session_where_it_got_to(
    tmp_path: Path,
) -> None:
    state, traces, log = tmp_path / "state", tmp_path / "traces", tmp_path / "server.log"
    options = ("--scenario", NO_DURATION, "--mode", "manual", "--max-ticks", str(HUGE_N))
    with anyio.fail_after(120):
        async with server(serve_command(state, traces, 0, *options), log) as (first, banner):
            found = re.search(rf"ws://127\.0\.0\.1:\d+/sessions/{NO_DURATION}", banner)
            assert found is not None
            url = found[0]
            port = urlsplit(url).port
            assert port is not None
            ws = await ws_connect(url, close_timeout=0.5)
            hello = {"type": "hello", "id": 1, "role": "controller", "token": TOKEN}
            await ws.send(json.dumps(hello))
            assert json.loads(await ws.recv())["type"] == "welcome"
            await ws.send(json.dumps({"type": "tick", "id": 2, "n": HUGE_N}))
            await eventually(lambda: ticked(port, NO_DURATION, 10), poll=0.05)
            code = await terminate(first)
            replies: list[Any] = []
            try:
                while True:
                    replies.append(json.loads(await ws.recv()))
            except ConnectionClosed as closed:
                close = closed.rcvd
        journal = records(state, NO_DURATION)
        async with server(serve_command(state, traces, port, *options), log):
            restored = (await sessions(port))[NO_DURATION]

    assert code == 0 and (not traces.exists() or json_files(traces) == [])
    assert any("interrupted" in r.get("message", "") for r in replies if r["type"] == "error")
    assert close is not None and close.code == CloseCode.GOING_AWAY
    assert "restarting" in close.reason
    interrupted = [
        r for r in journal if isinstance(r, Recorded) and b"interrupted" in bytes(r.record)
    ]
    assert len(interrupted) == 1 and not any(isinstance(r, Ended) for r in journal)
    assert restored["restored"] and not restored["ended"]
    assert restored["clock"]["tick"] >= 10


async def test_a_realtime_session_suspended_by_sigterm_comes_back_paused_where_it_was(
    tmp_path: Path,
) -> None:
    state, traces, log = tmp_path / "state", tmp_path / "traces", tmp_path / "server.log"
    options = ("--scenario", "scenario_tutorial", "--mode", "realtime", "--speed", "50")
    with anyio.fail_after(120):
        async with server(serve_command(state, traces, 0, *options), log) as (first, banner):
            found = re.search(r"ws://127\.0\.0\.1:(\d+)/sessions/scenario_tutorial", banner)
            assert found is not None
            port = int(found[1])
            await eventually(lambda: ticked(port, "scenario_tutorial", 3), poll=0.05)
            assert await terminate(first) == 0
        journal = records(state, "scenario_tutorial")
        async with server(serve_command(state, traces, port, *options), log):
            restored = (await sessions(port))["scenario_tutorial"]

    assert not any(isinstance(r, Ended) for r in journal)
    assert restored["restored"] and restored["clock"]["state"] == "paused"
    assert restored["clock"]["tick"] >= 3
