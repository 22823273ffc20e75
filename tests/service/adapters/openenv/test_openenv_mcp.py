"""OpenEnv's `/mcp` route serves a session's tools to today's `MCPToolClient` (production
mode: JSON-RPC over HTTP beside `/ws`), the same tools and calls as the MCP endpoint.
"""

from __future__ import annotations

import anyio
import pytest

from areasync.protocol.frames import EventItem, Role
from areasync.service.adapters.openenv.tools import WAIT as WAIT_TOOL
from tests.service.adapters.openenv.test_openenv_today import bare_url, bearer
from tests.service.adapters.openenv.today import MCPToolClient
from tests.service.support import TUTORIAL, WAIT, attach, serving, tokens

SEND = "AgentUserInterface__send_message_to_user"


async def test_mcp_tool_client_lists_the_session_s_tools_with_their_schemas() -> None:
    async with serving() as service:
        agent = tokens(service)[Role.AGENT]
        async with MCPToolClient(base_url=bare_url(service), headers=bearer(agent)) as env:
            with anyio.fail_after(WAIT):
                tools = {tool.name: tool for tool in await env.list_tools()}
    assert SEND in tools and WAIT_TOOL in tools
    assert tools[SEND].input_schema["type"] == "object"
    assert "content" in tools[SEND].input_schema["properties"]


async def test_mcp_tool_client_calls_a_tool_as_the_agent() -> None:
    async with serving() as service:
        agent = tokens(service)[Role.AGENT]
        async with (
            attach(service, Role.OBSERVER) as observer,
            MCPToolClient(base_url=service.openenv_url(agent)) as env,
        ):
            with anyio.fail_after(WAIT):
                await env.call_tool(SEND, content="hi over OpenEnv's /mcp")
                event = await observer.until(lambda f: isinstance(f, EventItem))
    assert isinstance(event, EventItem) and event.event.event_type == "AGENT"


async def test_mcp_tool_client_gets_a_failed_call_as_its_error() -> None:
    async with serving() as service:
        agent = tokens(service)[Role.AGENT]
        session = service.registry.get(TUTORIAL)
        assert session is not None
        before = len(session.sim.env.event_log)
        async with MCPToolClient(base_url=bare_url(service), headers=bearer(agent)) as env:
            with anyio.fail_after(WAIT), pytest.raises(RuntimeError, match="NoApp__nothing"):
                await env.call_tool("NoApp__nothing")
        assert len(session.sim.env.event_log) == before


async def test_the_admin_url_s_mcp_route_asks_for_a_session_s_token() -> None:
    async with serving() as service:
        env = MCPToolClient(base_url=service.openenv_url())
        with anyio.fail_after(WAIT), pytest.raises(RuntimeError, match="session's OpenEnv URL"):
            await env.connect()
        await env.close()


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b"{not json", -32700),
        (b"[1]", -32600),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "resources/list"}', -32601),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": 3}}', -32602),
    ],
)
async def test_a_malformed_mcp_request_gets_its_json_rpc_error(body: bytes, code: int) -> None:
    import httpx

    async with serving() as service:
        agent = tokens(service)[Role.AGENT]
        async with httpx.AsyncClient(timeout=WAIT, headers=bearer(agent)) as http:
            response = await http.post(f"{bare_url(service)}/mcp", content=body)
    assert response.status_code == 200 and response.json()["error"]["code"] == code
