"""`areasync serve --mcp-port` in a real process: the banner's MCP line and the agent token it
prints are all an MCP client needs.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import anyio
from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client

from tests.service.durable_support import agent_token, server
from tests.service.support import TUTORIAL, WAIT

SERVE = [sys.executable, "-m", "areasync.cli", "serve", "--port", "0", "--mode", "manual"]


async def test_the_banner_s_mcp_url_and_agent_token_open_the_session(tmp_path: Path) -> None:
    command = [*SERVE, "--mcp-port", "0", "--trace-dir", str(tmp_path / "traces")]
    async with server(command, tmp_path / "serve.log") as (_, banner):
        found = re.search(rf"^  MCP\s+(http://\S+/mcp/{TUTORIAL})\s", banner, re.MULTILINE)
        assert found, banner
        headers = {"Authorization": f"Bearer {agent_token(banner)}"}
        with anyio.fail_after(WAIT * 3):
            async with (
                streamablehttp_client(found[1], headers=headers) as (read, write, _),
                ClientSession(read, write) as client,
            ):
                await client.initialize()
                tools = (await client.list_tools()).tools
    assert any(tool.name == "AgentUserInterface__send_message_to_user" for tool in tools)
