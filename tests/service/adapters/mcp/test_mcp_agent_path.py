"""An MCP call goes the way an agent's WebSocket `call_tool` goes
(`service/connection/inprocess.py`): its answer waits for its journal record, its rate is the
gate's, it is counted in the metrics."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.service.adapters.mcp.support import mcp_client, text
from tests.service.adapters.openenv.test_openenv_durable import (
    HeldSync,
    answered_after_the_sync,
    calls_in_journal,
)
from tests.service.support import WAIT, serving

SEND = "AgentUserInterface__send_message_to_user"


async def test_an_mcp_call_is_answered_once_its_record_is_durable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = HeldSync(monkeypatch)
    async with (
        serving(state_dir=tmp_path, mcp_port=0) as service,
        mcp_client(service) as client,
    ):
        with anyio.fail_after(WAIT):
            await client.list_tools()  # joins the session: its hello is no tool call
            order = await answered_after_the_sync(
                held, lambda: client.call_tool(SEND, {"content": "hi"})
            )
    assert order == ["released", "answered"]
    assert calls_in_journal(tmp_path) == 1


async def test_an_mcp_agent_past_its_rate_is_refused_saying_so() -> None:
    async with (
        serving(rate=0.001, burst=2, rate_strikes=5, mcp_port=0) as service,  # no new token
        mcp_client(service) as client,
    ):
        with anyio.fail_after(WAIT):
            await client.list_tools()  # the burst's first request
            await client.call_tool(SEND, {"content": "a"})  # its second
            refused = await client.call_tool(SEND, {"content": "b"})
    assert refused.isError is True and "requests per second" in text(refused)


async def test_an_mcp_call_is_counted_as_a_tool_call_in_the_metrics() -> None:
    async with serving(mcp_port=0) as service, mcp_client(service) as client:
        calls = service.registry.metrics.tool_call_seconds
        with anyio.fail_after(WAIT):
            await client.list_tools()
            before = calls.count
            await client.call_tool(SEND, {"content": "a"})
        assert calls.count == before + 1
