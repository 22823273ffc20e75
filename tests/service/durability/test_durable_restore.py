"""A real `areasync serve --state-dir` killed with SIGKILL mid oracle run and started again on
the same port and directory: the session is back as it was, and its clients never notice.

The server is a real subprocess; the oracle agent (`areasync.agents.oracle.agent`) runs here over
real sockets with the agent's own session token, and the server dies right after the agent's
first tool call is answered (the plan has more). The agent's and the controller's clients
reconnect by themselves; the run then goes on to its end. What it saw is compared with the
server's whole stream after the run, and its event log with a run that was never interrupted.
"""

from __future__ import annotations

import contextlib
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlsplit

import anyio
import msgspec
import pytest

from areasync.agents.oracle.agent import OraclePlan, oracle_plan, run_oracle_agent
from areasync.client import Client, connect
from areasync.conformance.normal_form import GENERATED_ID, to_jsonish
from areasync.protocol.frames import EventItem, StreamItem
from tests.service.durable_support import (
    TOKEN,
    agent_token,
    frames,
    server,
    session_url,
    whole_stream,
)
from tests.waiting import eventually

SCENARIO = "scenario_apps_tutorial"  # two oracle tool calls


def serve_command(state: Path, port: int) -> list[str]:
    return [
        *(sys.executable, "-m", "areasync.cli", "serve", "--workers", "0", "--port", str(port)),
        *("--token", TOKEN),
        *("--scenario", SCENARIO, "--mode", "fast", "--trace-dir", ""),
        *("--state-dir", str(state), "--durability", "group:0"),
    ]


class CrashingAgent:
    """The agent's client; after its first tool call is answered, `crash` runs once."""

    def __init__(self, client: Client, crash: Callable[[Client], Awaitable[None]]) -> None:
        self._client = client
        self._crash = crash
        self.answered = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    async def call_tool(self, tool: str, args: dict[str, Any] | None = None) -> Any:
        result = await self._client.call_tool(tool, args)
        self.answered += 1
        if self.answered == 1:
            await self._crash(self._client)
        return result


def event_log(items: list[StreamItem]) -> list[Any]:
    """The events in comparable form: ids drawn at random (each server its own seed) masked."""
    log = []
    for item in items:
        if isinstance(item, EventItem):
            event = msgspec.to_builtins(item.event)
            del event["event_id"]
            log.append(GENERATED_ID.sub("<id>", msgspec.json.encode(to_jsonish(event)).decode()))
    return log


async def run_agent(
    url: str,
    token: str,
    plan: OraclePlan,
    crash: Callable[[Client], Awaitable[None]] | None = None,
) -> Client:
    """Run the oracle plan as the agent, to the session's end (`crash(agent)` after its first
    tool call is answered); the agent's client, closed."""
    options: dict[str, Any] = {"backoff_max": 0.2, "max_reconnect_attempts": None}
    async with (
        connect(url, role="agent", token=token, **options) as agent,
        connect(url, role="controller", token=TOKEN, **options) as controller,
    ):
        acting = agent if crash is None else cast(Client, CrashingAgent(agent, crash))
        report = await run_oracle_agent(acting, plan, controller=controller)
        assert report.ok, report.to_json()
        await agent.wait_ended()
    return agent


@pytest.mark.slow  # a server killed and started again
async def test_a_session_survives_kill_9_and_its_clients_get_exactly_what_they_missed(
    tmp_path: Path,
) -> None:
    plan = await oracle_plan(SCENARIO)
    assert len(plan.actions) > 1
    log = tmp_path / "server.log"
    with anyio.fail_after(120):
        # A run never interrupted: the reference.
        async with server(serve_command(tmp_path / "reference", 0), log) as (_, banner):
            url = session_url(banner, SCENARIO)
            await run_agent(url, agent_token(banner), plan)
            reference = await whole_stream(url)

        async with contextlib.AsyncExitStack() as stack:
            serving = server(serve_command(tmp_path / "state", 0), log)
            first, banner = await stack.enter_async_context(serving)
            url = session_url(banner, SCENARIO)
            port = urlsplit(url).port
            assert port is not None
            seen: dict[str, Any] = {}

            async def crash_and_restart(agent: Client) -> None:
                seen["epoch"] = agent.epoch
                first.send_signal(signal.SIGKILL)
                await first.wait()
                _, seen["banner"] = await stack.enter_async_context(
                    server(serve_command(tmp_path / "state", port), log)
                )
                # The client offers no event for a reconnect.
                await eventually(lambda: agent.reconnects > 0 and agent.connected)

            agent = await run_agent(url, agent_token(banner), plan, crash_and_restart)
            after = await whole_stream(url)

    assert seen["banner"].count(f"/sessions/{SCENARIO}") == 1  # restored, not started again
    assert agent.session_id == SCENARIO and agent.epoch == seen["epoch"]
    assert agent.reconnects >= 1 and agent.resets == 0 and agent.welcome.restored
    first_seq = agent.history[0].seq  # it attached after the stream's first items
    assert [item.seq for item in agent.history] == list(range(first_seq, len(after) + 1))
    assert frames(agent.history) == frames(after[first_seq - 1 :])
    assert len(event_log(reference)) > 2 and event_log(after) == event_log(reference)
