"""An aiohttp server that holds at most a number of sockets: the ports that run on aiohttp
(gaia2-cli's adapter, the MCP endpoint) bound their connections as the WebSocket port does.

Rule: a socket accepted beyond `max_connections` is reset at once (`sockets.reset`: its
descriptor goes with it, no bytes are read), and counted in `refused`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from aiohttp import web
from aiohttp.web_protocol import RequestHandler

from areasync.service.gate import sockets


class CappedServer(web.Server):
    """aiohttp's low-level server, holding at most `max_connections` sockets."""

    def __init__(
        self,
        handler: Any,
        *,
        max_connections: int,
        on_lost: Callable[[RequestHandler], object] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(handler, **kwargs)
        self.max_connections = max_connections
        self.on_lost = on_lost  # called with each handler whose connection is lost
        self.open: set[RequestHandler] = set()
        self.refused = 0  # sockets reset at accept, since start

    def connection_made(self, handler: RequestHandler, transport: asyncio.Transport) -> None:
        if len(self.open) >= self.max_connections:
            self.refused += 1
            sockets.reset(transport)
            return
        self.open.add(handler)
        super().connection_made(handler, transport)

    def connection_lost(self, handler: RequestHandler, exc: BaseException | None = None) -> None:
        self.open.discard(handler)
        if self.on_lost is not None:
            self.on_lost(handler)
        super().connection_lost(handler, exc)
