"""The gaia2-cli adapter's HTTP server: a second port, the routes of `translate.py` per session.

Why a port of its own: gaia2-cli's harnesses POST JSON bodies and read server-sent events, a
response that stays open and grows. The WebSocket port cannot serve either: websockets answers
plain HTTP from `process_request` with one complete response, and its parser refuses request
bodies (`methods.py`). aiohttp, already a dependency of areasync (the stub model server),
serves both on the same event loop with bounded request bodies, keep-alive and streaming
responses; everything it does here is I/O: the decisions are `translate.py`'s, the messages
`feed.py`'s.

URLs carry the credential, since harnesses send no auth header: a harness's base URL (what
gaia2-cli calls `notify_url`) is `http://HOST:PORT/gaia2/<token>` for a session token, which
names its session, or `http://HOST:PORT/gaia2/<admin-token>/<session-id>`. No access log is
kept (its lines would hold tokens), and errors never echo the path.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import TYPE_CHECKING
from urllib.parse import quote

from aiohttp import web

from areasync.bridge.tools import ToolCallError
from areasync.protocol.errors import ProtocolError
from areasync.protocol.frames import CallTool as CallToolFrame
from areasync.protocol.frames import Role, SendUserMessage
from areasync.service.gaia2cli import translate as t
from areasync.service.gaia2cli.feed import MessageFeed
from areasync.service.limits import TokenBucket
from areasync.service.requests import perform
from areasync.simulation.errors import SimulationError

if TYPE_CHECKING:
    from areasync.service.config import ServiceConfig
    from areasync.service.registry import SessionRegistry
    from areasync.service.session import Session

logger = logging.getLogger("areasync.service")

PREFIX = "/gaia2/"
_HOLDER = "gaia2-cli"  # the lease holder of its tool calls: none is taken (not an agent)
_SSE_HEADERS = {
    "Content-Type": "text/event-stream",
    "Cache-Control": "no-cache",
    "X-Accel-Buffering": "no",
}


def adapter_url(base: str, token: str, session_id: str | None = None) -> str:
    """A harness's base URL on the adapter at `base` (http://HOST:PORT): `token`'s session,
    or `session_id` with the admin token."""
    path = quote(token, safe="")
    if session_id is not None:
        path += "/" + quote(session_id, safe="")
    return f"{base}{PREFIX}{path}"


class Gaia2Adapter:
    """gaia2-cli's HTTP+SSE adapter for every session of a service."""

    def __init__(self, registry: SessionRegistry, config: ServiceConfig) -> None:
        self.registry = registry
        self.config = config
        self.feeds: dict[str, MessageFeed] = {}
        # The request rate a WebSocket connection has (`config.rate`, limits.py), per session
        # and role: what may change a session is limited here as it is there.
        self._buckets: dict[tuple[str, Role], TokenBucket] = {}
        self.port: int | None = None
        self.base = ""
        self._runner: web.AppRunner | None = None

    async def start(self, host: str, port: int, shown_host: str) -> None:
        app = web.Application(client_max_size=self.config.max_frame_bytes)
        app.router.add_route("*", PREFIX + "{rest:.*}", self._handle)
        # No access log: a line per request would print the token in its path.
        # handler_cancellation: an /events client that goes away ends its handler (and its
        # subscription) at once, not at the next message of a quiet session.
        self._runner = web.AppRunner(
            app, access_log=None, handle_signals=False, handler_cancellation=True
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port, backlog=1024)
        await site.start()
        self.port = int(self._runner.addresses[0][1])
        self.base = f"http://{shown_host}:{self.port}"

    async def close(self) -> None:
        for feed in self.feeds.values():
            for client in tuple(feed.clients):
                client.end("the server is shutting down")
        if self._runner is not None:
            await self._runner.cleanup()

    def url(self, token: str, session_id: str | None = None) -> str:
        """A harness's base URL: `token`'s session, or `session_id` with the admin token."""
        return adapter_url(self.base, token, session_id)

    # -- requests ---------------------------------------------------------------------------

    def _resolve(self, rest: str) -> tuple[Session, Role, str] | t.Reply:
        """The session, the caller's role and the route of `/gaia2/<rest>`."""
        token, _, tail = rest.partition("/")
        found = self.registry.tokens.identify(token)
        if found is None:
            return t.failure(
                401,
                "the token in the URL is not valid: use http://HOST:PORT/gaia2/<session token> "
                "(a token the server printed or create_session returned)",
            )
        role, session_id = found
        if session_id is None:  # the admin token: the session comes next
            session_id, _, tail = tail.partition("/")
        session = self.registry.get(session_id)
        if session is None:
            return t.failure(
                404, f"no session {session_id[:64]!r} (it ended and was discarded, or never was)"
            )
        return session, role, "/" + tail

    def _feed(self, session: Session) -> MessageFeed:
        feed = self.feeds.get(session.id)
        if feed is None or feed.session is not session:
            # Forget the feeds of sessions the registry has discarded (their hubs go with them).
            for sid, old in list(self.feeds.items()):
                if self.registry.get(sid) is not old.session:
                    del self.feeds[sid]
            self._buckets = {key: b for key, b in self._buckets.items() if key[0] in self.feeds}
            feed = self.feeds[session.id] = MessageFeed(session)
        return feed

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        try:
            found = self._resolve(request.match_info["rest"])
            if isinstance(found, t.Reply):
                return _json(found)
            session, role, path = found
            route = t.route_of(request.method, path)
            if isinstance(route, t.Reply):
                return _json(route)
            refused = t.permission(role, route)
            if refused is not None:
                return _json(refused)
            feed = self._feed(session)
            if route is t.Route.EVENTS and request.method == "HEAD":
                return web.Response(headers=_SSE_HEADERS)
            if route is t.Route.EVENTS:
                return await self._events(request, feed)
            return _json(await self._answer(request, route, session, role, feed))
        except Exception:
            logger.exception("the gaia2-cli adapter failed to answer a %s", request.method)
            return _json(t.failure(500, "internal error in areasync's gaia2-cli adapter"))

    async def _answer(
        self, request: web.Request, route: t.Route, session: Session, role: Role, feed: MessageFeed
    ) -> t.Reply:
        match route:
            case t.Route.HEALTH:
                return t.Reply(200, t.health_of(feed.view()))
            case t.Route.STATUS:
                return t.Reply(200, t.status_of(feed.view()))
            case t.Route.MESSAGES:
                after = t.parse_after(dict(request.query))
                if isinstance(after, t.Reply):
                    return after
                return t.messages_reply(feed.messages, after)
        if not self._within_rate(session, role):
            return t.failure(
                429,
                f"more than {self.config.rate:g} requests/s (burst {self.config.burst}) that "
                "change this session; nothing was done: slow down and retry",
            )
        body = await request.read()
        act = t.parse_notify(body) if route is t.Route.NOTIFY else t.parse_action(body)
        if isinstance(act, t.Reply):
            return act
        if session.sim.ended:
            return t.failure(409, "the session has ended: it takes no more input (GET /status)")
        return await self._act(act, session, role, feed)

    def _within_rate(self, session: Session, role: Role) -> bool:
        rate = self.config.rate
        if rate is None:
            return True
        key = (session.id, role)
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = TokenBucket(rate, self.config.burst)
        return bucket.take()

    async def _act(self, act: t.Act, session: Session, role: Role, feed: MessageFeed) -> t.Reply:
        frame: SendUserMessage | CallToolFrame
        if isinstance(act, t.Notify):
            frame = SendUserMessage(id=0, content=act.message)
        else:
            missing = t.check_tool(act.tool, frozenset(x.name for x in session.sim.list_tools()))
            if missing is not None:
                return missing
            frame = CallToolFrame(id=0, tool=act.tool, args=act.args)
        try:
            value = await perform(
                frame, session=session, role=role, holder=_HOLDER, registry=self.registry
            )
        except (ToolCallError, ProtocolError, SimulationError) as exc:
            status = 409 if session.sim.ended else 200 if isinstance(act, t.Action) else 400
            return t.failure(status, str(exc))
        if not await session.hub.durable():
            return t.failure(503, "the session's journal did not confirm the input in time")
        if isinstance(act, t.Notify):
            return t.Reply(200, {"ok": True, "runId": f"{session.id}:{session.sim.log.seq}"})
        text = value if isinstance(value, str) else json.dumps(value)
        return t.Reply(200, {"ok": True, "result": text, "value": value})

    async def _events(self, request: web.Request, feed: MessageFeed) -> web.StreamResponse:
        after = t.parse_after(dict(request.query))
        if isinstance(after, t.Reply):
            return _json(after)
        response = web.StreamResponse(headers=_SSE_HEADERS)
        await response.prepare(request)
        client = feed.attach(self.config.gaia2_sse_bytes, after)
        timeout = self.config.write_timeout
        try:
            await asyncio.wait_for(response.write(t.SSE_HELLO), timeout)
            while True:
                await client.wake.wait()
                client.wake.clear()
                data = client.take()
                if data:
                    await asyncio.wait_for(response.write(data), timeout)
                if client.ended is not None:
                    await asyncio.wait_for(response.write(client.ended), timeout)
                    break
        except (TimeoutError, ConnectionError):
            # Not draining for `write_timeout`, or gone: drop the socket, nobody else waits.
            if request.transport is not None:
                request.transport.abort()
        finally:
            feed.detach(client)
        with contextlib.suppress(ConnectionError, TimeoutError):
            await asyncio.wait_for(response.write_eof(), 1.0)
        return response


def _json(reply: t.Reply) -> web.Response:
    return web.Response(status=reply.status, body=reply.encode(), content_type="application/json")
