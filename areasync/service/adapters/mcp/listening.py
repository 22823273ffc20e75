"""MCP sessions that listen: the session id an `initialize` gets, and the GET stream it opens.

The SDK's transport runs stateless here (`port.py`), which gives a client no session id, so
MCP's own way for a server to speak first - the client opens `GET` on the endpoint with its
`Mcp-Session-Id` and reads server-sent events - would never open. So the port gives each
`initialize` a session id of its own making (`Listeners.open`, sent in the answer's
`Mcp-Session-Id` header) and serves that GET stream itself: every notification of the
areasync session is written there as MCP's `notifications/message` as soon as it arrives,
without waiting for the agent's next request. Requests go on through the stateless transport,
which ignores the header.

Each notification reaches each MCP session once, as a log message: on its GET stream while one
is open, else with the answer to its next request (`due`, the listener's cursor in the
session's stream). The tools' own results (the wait tool's list) are the episode's, apart.

Bounds: at most `PER_KEY` listening sessions per credential (an `initialize` beyond them ends
the oldest, its stream closed); one GET stream per session (409); a stream with nothing to say
for `mcp_sse_keepalive` seconds gets a comment (which also keeps its episode from being reaped
as idle: a client listening is a client still there); `DELETE` ends a session; an unknown or
another credential's session id gets 404 (the client starts again with `initialize`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import secrets
from collections.abc import Callable, Iterator
from typing import Any

import anyio
import msgspec
from aiohttp import web

from areasync.protocol.frames import NotificationItem
from areasync.service.adapters.openenv.episode import Episode
from areasync.service.http.headers import API_HEADERS

PER_KEY = 8
LOGGER = "areasync.notification"


@dataclasses.dataclass(slots=True, eq=False)
class Listener:
    """One MCP session of a credential (`key`): its stream cursor and its GET stream."""

    id: str
    key: str
    cursor: int | None = None  # the session stream's seq delivered up to (None: from now)
    streaming: bool = False  # its GET stream is open
    ended: bool = False
    wake: Callable[[], None] | None = None  # its GET stream's, while open


class Listeners:
    """The listening MCP sessions of one port."""

    def __init__(self) -> None:
        self._by_id: dict[str, Listener] = {}

    def open(self, key: str) -> Listener:
        """A new session for `key`; its oldest beyond `PER_KEY` ends."""
        mine = [listener for listener in self._by_id.values() if listener.key == key]
        for old in mine[: max(0, len(mine) - PER_KEY + 1)]:
            self.close(old.id)
        listener = Listener(id=secrets.token_urlsafe(16), key=key)
        self._by_id[listener.id] = listener
        return listener

    def get(self, session_id: str, key: str) -> Listener | None:
        """`session_id` if it is `key`'s (another credential's is no session for it)."""
        listener = self._by_id.get(session_id)
        return listener if listener is not None and listener.key == key else None

    def close(self, session_id: str) -> bool:
        """End `session_id` (its GET stream closes); whether there was one."""
        listener = self._by_id.pop(session_id, None)
        if listener is None:
            return False
        listener.ended = True
        if listener.wake is not None:
            listener.wake()
        return True

    def close_key(self, key: str) -> None:
        """End `key`'s sessions: its episode is gone (reaped, dropped)."""
        for listener in list(self._by_id.values()):
            if listener.key == key:
                self.close(listener.id)

    def streaming(self) -> int:
        """How many GET streams are open."""
        return sum(1 for listener in self._by_id.values() if listener.streaming)

    def close_all(self) -> None:
        for session_id in list(self._by_id):
            self.close(session_id)


def due(listener: Listener, episode: Episode) -> list[dict[str, Any]]:
    """The notifications `listener` has not been given yet; its cursor moves past them."""
    session = episode.session
    if session is None:
        return []
    end = session.hub.seq
    start = end if listener.cursor is None else min(listener.cursor, end)
    found = [
        msgspec.to_builtins(item.notification)
        for item in session.sim.log.after(start)[: end - start]
        if isinstance(item, NotificationItem)
    ]
    listener.cursor = end
    return found


def log_message(notification: dict[str, Any]) -> dict[str, Any]:
    """One notification as MCP's `notifications/message` (a JSON-RPC notification)."""
    return {
        "jsonrpc": "2.0",
        "method": "notifications/message",
        "params": {"level": "info", "logger": LOGGER, "data": notification},
    }


def events(notifications: list[dict[str, Any]]) -> Iterator[bytes]:
    """Server-sent events, as the SDK's client reads them (`event: message`)."""
    for notification in notifications:
        data = json.dumps(log_message(notification), ensure_ascii=False)
        yield f"event: message\ndata: {data}\n\n".encode()


KEEPALIVE = b": keep-alive\n\n"
SESSION_HEADER = "Mcp-Session-Id"
_SSE_HEADERS = {"Content-Type": "text/event-stream", "Cache-Control": "no-store"}


async def stream(
    request: web.BaseRequest,
    listener: Listener,
    episode: Episode,
    keepalive: float,
    write_timeout: float,
) -> web.StreamResponse:
    """A listening session's GET stream: each notification as it arrives, until the session,
    the episode or the MCP session ends, or the client goes or takes nothing for
    `write_timeout` seconds."""
    headers = {**dict(API_HEADERS), **_SSE_HEADERS, SESSION_HEADER: listener.id}
    response = web.StreamResponse(headers=headers)
    await response.prepare(request)
    woken = anyio.Event()

    def wake() -> None:
        woken.set()

    listener.streaming, listener.wake = True, wake
    episode.watchers.add(wake)
    try:
        while True:
            woken = anyio.Event()
            for chunk in events(due(listener, episode)):
                await asyncio.wait_for(response.write(chunk), write_timeout)
            session = episode.session
            if listener.ended or episode.closed or session is None or session.sim.ended:
                break  # all said
            with anyio.move_on_after(keepalive) as idle:
                await woken.wait()
            if idle.cancelled_caught:
                episode.touch()  # a client listening is still there
                await asyncio.wait_for(response.write(KEEPALIVE), write_timeout)
    except (ConnectionError, TimeoutError):
        pass  # the client went away, or takes nothing: the stream ends
    finally:
        listener.streaming, listener.wake = False, None
        episode.watchers.discard(wake)
    return response
