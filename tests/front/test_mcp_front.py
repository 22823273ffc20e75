"""MCP's port (`--mcp-port`) with `serve --workers 2`, as real processes.

The front peeks at each connection's first request head, verifies its token, and hands the
socket, unread, to the worker of the session it names (`front/mcp.py`); the worker's MCP port
serves the connection (the official `mcp` client, below). The admin token never reaches the
worker, yet an admin's later requests on the connection are served; a request for another
session on the same connection is refused 421; a wrong token is refused by the front.
"""

from __future__ import annotations

import http.client
import json
import re
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client

from tests.front.support import (
    ADMIN,
    REAL_PROCESSES,
    WAIT,
    Front,
    front,
    held_by_worker_only,
)

pytestmark = REAL_PROCESSES

TUTORIAL = "scenario_tutorial"
SECOND = "scenario_tutorial-2"
SEND = "AgentUserInterface__send_message_to_user"


def _mcp_url(served: Front, session_id: str) -> str:
    block = served.banner.split(f"session {session_id} ", 1)[1]
    found = re.search(r"MCP\s+(http://\S+)", block)
    assert found, served.banner
    return found[1]


async def _call(url: str, token: str) -> types.CallToolResult:
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        streamablehttp_client(url, headers=headers, timeout=WAIT) as (read, write, _),
        ClientSession(read, write) as client,
    ):
        await client.initialize()
        return await client.call_tool(SEND, {"content": "hi through the front"})


def _post(conn: http.client.HTTPConnection, path: str, token: str) -> tuple[int, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {
        "Authorization": f"Bearer {token}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    conn.request("POST", path, body=json.dumps(body).encode(), headers=headers)
    response = conn.getresponse()
    return response.status, response.read()


async def test_an_agent_calls_a_tool_over_mcp_through_the_front(tmp_path: Path) -> None:
    async with front("--mcp-port", "0", log=tmp_path / "log") as served:
        url = _mcp_url(served, TUTORIAL)
        result = await _call(url, served.token(TUTORIAL, "agent"))
        assert not result.isError, (result, served.said())


async def test_the_admin_token_opens_an_mcp_endpoint_over_one_connection_held_by_the_worker(
    tmp_path: Path,
) -> None:
    async with front("--mcp-port", "0", log=tmp_path / "log") as served:
        url = _mcp_url(served, TUTORIAL)
        port = int(url.split(":")[2].split("/")[0])
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=WAIT)
        try:
            for _ in range(2):  # the second on the same connection: the worker checks it
                status, body = await anyio.to_thread.run_sync(
                    _post, conn, f"/mcp/{TUTORIAL}", ADMIN
                )
                assert status == 200, (body, served.said())
            assert conn.sock is not None
            peer = conn.sock.getsockname()[1]
            assert await held_by_worker_only(served, TUTORIAL, port, peer)
        finally:
            conn.close()


async def test_a_request_for_another_session_on_a_handed_connection_is_refused_421(
    tmp_path: Path,
) -> None:
    scenarios = ("--scenario", TUTORIAL, "--scenario", TUTORIAL)
    async with front("--mcp-port", "0", *scenarios, log=tmp_path / "log") as served:
        port = int(_mcp_url(served, TUTORIAL).split(":")[2].split("/")[0])
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=WAIT)
        try:
            status, _ = await anyio.to_thread.run_sync(_post, conn, f"/mcp/{TUTORIAL}", ADMIN)
            assert status == 200
            status, body = await anyio.to_thread.run_sync(_post, conn, f"/mcp/{SECOND}", ADMIN)
            assert status == 421, body
            assert b"open a new connection" in body
        finally:
            conn.close()


async def test_a_wrong_token_on_the_mcp_port_is_refused_401_by_the_front(tmp_path: Path) -> None:
    async with front("--mcp-port", "0", log=tmp_path / "log") as served:
        port = int(_mcp_url(served, TUTORIAL).split(":")[2].split("/")[0])
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=WAIT)
        try:
            status, body = await anyio.to_thread.run_sync(
                _post, conn, f"/mcp/{TUTORIAL}", "not-a-token"
            )
        finally:
            conn.close()
        assert status == 401
        assert b"Authorization: Bearer" in body


async def test_a_request_with_another_token_on_a_handed_connection_is_refused_401(
    tmp_path: Path,
) -> None:
    async with front("--mcp-port", "0", log=tmp_path / "log") as served:
        port = int(_mcp_url(served, TUTORIAL).split(":")[2].split("/")[0])
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=WAIT)
        try:
            status, _ = await anyio.to_thread.run_sync(_post, conn, f"/mcp/{TUTORIAL}", ADMIN)
            assert status == 200
            agent = served.token(TUTORIAL, "agent")  # valid, but not the connection's
            status, body = await anyio.to_thread.run_sync(_post, conn, f"/mcp/{TUTORIAL}", agent)
            assert status == 401, body
            assert b"opened with another token" in body
        finally:
            conn.close()
