"""A listening MCP session: `initialize` gets a session id, the client's GET stream gets each
notification as it arrives, without a request; each notification reaches a session once;
sessions are bounded per token, end on DELETE and are a token's own.
"""

from __future__ import annotations

from typing import Any

import anyio
import httpx

from areasync.protocol.frames import Jump, NotificationItem, Role
from areasync.service import Service
from areasync.service.adapters.mcp.listening import PER_KEY
from areasync.service.adapters.mcp.port import NOTIFICATION_LOGGER, SESSION_HEADER
from tests.service.adapters.mcp.support import Logged, mcp_client
from tests.service.support import TUTORIAL, WAIT, attach, serving, tokens
from tests.waiting import eventually

SEND = "AgentUserInterface__send_message_to_user"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"},
    },
}
ACCEPT = {"Accept": "application/json, text/event-stream"}


async def until_streaming(service: Service) -> None:
    await eventually(service.mcp.listeners.streaming)


async def test_a_notification_reaches_a_listening_client_without_a_request() -> None:
    logged = Logged()
    async with (
        serving(mcp_port=0) as service,
        mcp_client(service, logged=logged) as client,
        attach(service, Role.CONTROLLER) as controller,
    ):
        with anyio.fail_after(WAIT):
            await client.call_tool(SEND, {"content": "hello"})
        await until_streaming(service)
        with anyio.fail_after(WAIT):
            while not any(isinstance(i, NotificationItem) for i in controller.items):
                await controller.request(Jump, next_event=True)  # the user's answer comes
            await logged.until(1)  # over the GET stream: the agent sent nothing since
        session = service.registry.get(TUTORIAL)
        assert session is not None
        expected = [n.message for n in session.sim.notifications()]
        assert [m["message"] for m in logged.data(NOTIFICATION_LOGGER)] == expected
        with anyio.fail_after(WAIT):
            await client.call_tool(SEND, {"content": "again"})  # its answer repeats none
        assert len(logged.messages) == len(expected)


async def initialize(http: httpx.AsyncClient, service: Service, token: str) -> str:
    response = await http.post(
        service.mcp.url(TUTORIAL),
        json=INITIALIZE,
        headers={**ACCEPT, "Authorization": f"Bearer {token}"},
    )
    assert response.status_code == 200
    return response.headers[SESSION_HEADER]


async def listen(http: httpx.AsyncClient, service: Service, token: str, sid: str) -> Any:
    headers = {**ACCEPT, "Authorization": f"Bearer {token}", SESSION_HEADER: sid}
    return await http.request("GET", service.mcp.url(TUTORIAL), headers=headers)


async def test_an_initialize_beyond_the_bound_per_token_ends_the_oldest_session() -> None:
    async with serving(mcp_port=0) as service, httpx.AsyncClient(timeout=WAIT) as http:
        agent = tokens(service)[Role.AGENT]
        ids = [await initialize(http, service, agent) for _ in range(PER_KEY + 1)]
        gone = await listen(http, service, agent, ids[0])
    assert len(set(ids)) == PER_KEY + 1
    assert gone.status_code == 404 and "initialize again" in gone.json()["error"]["message"]


async def test_delete_ends_a_session() -> None:
    async with serving(mcp_port=0) as service, httpx.AsyncClient(timeout=WAIT) as http:
        agent = tokens(service)[Role.AGENT]
        sid = await initialize(http, service, agent)
        headers = {"Authorization": f"Bearer {agent}", SESSION_HEADER: sid}
        deleted = await http.delete(service.mcp.url(TUTORIAL), headers=headers)
        after = await listen(http, service, agent, sid)
    assert deleted.status_code == 200 and after.status_code == 404


async def test_a_session_id_is_its_token_s_own() -> None:
    async with serving(mcp_port=0) as service, httpx.AsyncClient(timeout=WAIT) as http:
        sid = await initialize(http, service, service.tokens.admin)
        other = await listen(http, service, tokens(service)[Role.AGENT], sid)
    assert other.status_code == 404


async def test_a_listening_stream_ends_with_its_session() -> None:
    async with serving(mcp_port=0) as service, mcp_client(service) as client:
        with anyio.fail_after(WAIT):
            await client.list_tools()
        await until_streaming(service)
        with anyio.fail_after(WAIT):
            await service.registry.stop(TUTORIAL)
        await eventually(lambda: not service.mcp.listeners.streaming())
