"""`kill -9` of a real `areasync serve --state-dir` in the middle of an oracle agent's run: the
journal it leaves reads back, with every tool call the agent had a reply for.

The server is a real subprocess; the oracle agent (`areasync.agents.oracle.agent`) runs here over
real sockets, through a client that notes each tool call whose result came back and kills the server
with SIGKILL right after the first one (the plan has more), so the crash lands mid-run.
"""

from __future__ import annotations

import contextlib
import re
import signal
import sys
from pathlib import Path
from typing import Any, cast

import anyio
import msgspec
from anyio.abc import Process

from areasync.agents.oracle.agent import oracle_plan, run_oracle_agent
from areasync.client import Client, connect
from areasync.journal import JournalStore
from areasync.service.durability.restore import inputs_of
from areasync.simulation import input_records as kinds
from tests.service.durable_support import read_banner

SCENARIO = "scenario_apps_tutorial"  # two oracle tool calls
TOKEN = "crash-admin"


async def banner_url(process: Process) -> str:
    text = await read_banner(process)
    found = re.search(rf"ws://127\.0\.0\.1:\d+/sessions/{SCENARIO}", text)
    assert found, f"no session URL in the banner: {text!r}"
    return found[0]


class KillingAgent:
    """The agent's client, noting each tool call answered; the server dies after the first."""

    def __init__(self, client: Client, process: Process) -> None:
        self._client = client
        self._process = process
        self.answered: list[tuple[str, Any]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    async def call_tool(self, tool: str, args: dict[str, Any] | None = None) -> Any:
        result = await self._client.call_tool(tool, args)
        self.answered.append((tool, msgspec.to_builtins(args or {})))
        if len(self.answered) == 1:
            self._process.send_signal(signal.SIGKILL)
        return result


async def test_kill_9_mid_run_leaves_a_journal_with_every_answered_tool_call(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    command = [
        *(sys.executable, "-m", "areasync.cli", "serve", "--workers", "0", "--port", "0"),
        *("--token", TOKEN),
        *("--scenario", SCENARIO, "--mode", "fast", "--trace-dir", ""),
        *("--state-dir", str(state), "--durability", "group:0"),
    ]
    plan = await oracle_plan(SCENARIO)
    assert len(plan.actions) > 1
    async with await anyio.open_process(command) as process:
        url = await banner_url(process)
        options: dict[str, Any] = {"token": TOKEN, "reconnect": False}
        async with (
            connect(url, role="agent", **options) as agent,
            connect(url, role="controller", **options) as controller,
        ):
            killing = KillingAgent(agent, process)
            with anyio.fail_after(60):
                with contextlib.suppress(Exception):  # the server is gone: that is the point
                    await run_oracle_agent(cast(Client, killing), plan, controller=controller)
                assert await process.wait() == -signal.SIGKILL
    assert len(killing.answered) == 1  # killed mid-run
    journal = JournalStore(state).read(SCENARIO)
    assert journal.created is not None and journal.ended is None
    calls = [(r.tool, r.args) for r in inputs_of(journal) if isinstance(r, kinds.CallTool)]
    assert calls[: len(killing.answered)] == killing.answered
