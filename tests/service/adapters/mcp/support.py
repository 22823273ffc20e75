"""The official MCP client (the `mcp` package's Streamable HTTP client) on a session's endpoint."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp.types as types
from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client

from areasync.protocol.frames import Role
from areasync.service import Service
from tests.service.support import TUTORIAL, WAIT, tokens


class Logged:
    """The MCP notifications (`notifications/message`) a client received, in order."""

    def __init__(self) -> None:
        self.messages: list[types.LoggingMessageNotificationParams] = []
        self._more = anyio.Event()

    async def __call__(self, params: types.LoggingMessageNotificationParams) -> None:
        self.messages.append(params)
        self._more.set()

    async def until(self, count: int) -> None:
        """Return once `count` messages have arrived."""
        while len(self.messages) < count:
            self._more = anyio.Event()
            await self._more.wait()

    def data(self, logger: str) -> list[Any]:
        return [m.data for m in self.messages if m.logger == logger]


@asynccontextmanager
async def mcp_client(
    service: Service,
    session: str = TUTORIAL,
    token: str | None = None,
    logged: Logged | None = None,
) -> AsyncIterator[ClientSession]:
    """An initialized MCP client session on `session`'s endpoint (the agent's token)."""
    token = tokens(service, session)[Role.AGENT] if token is None else token
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        streamablehttp_client(service.mcp.url(session), headers=headers, timeout=WAIT) as (
            read,
            write,
            _,
        ),
        ClientSession(read, write, logging_callback=logged) as client,
    ):
        await client.initialize()
        yield client


def text(result: types.CallToolResult) -> str:
    (content,) = result.content
    assert isinstance(content, types.TextContent)
    return content.text
