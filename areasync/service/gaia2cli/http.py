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
import time
from typing import TYPE_CHECKING
from urllib.parse import quote

from aiohttp import web

from areasync.protocol.errors import CloseCode, ErrorCode
from areasync.protocol.frames import Role
from areasync.service.gaia2cli import translate as t
from areasync.service.gaia2cli.feed import MessageFeed
from areasync.service.inprocess import InProcessClient, NotDurableError, RequestError

if TYPE_CHECKING:
    from areasync.service.config import ServiceConfig
    from areasync.service.registry import SessionRegistry
    from areasync.service.session import Session

logger = logging.getLogger("areasync.service")

PREFIX = "/gaia2/"
_HOLDER = "gaia2-cli"  # the lease holder of its requests: none is taken (not an agent)
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
        # What changes a session goes the way a WebSocket frame goes (inprocess.py), through
        # one client per session and role: its hello, its gate (the rate limit is that
        # client's, as a connection's is), its errors, its wait for the journal.
        self.clients: dict[tuple[str, Role], InProcessClient] = {}
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

    def _resolve(self, rest: str) -> tuple[Session, Role, str, str] | t.Reply:
        """The session, the caller's role, its token and the route of `/gaia2/<rest>`."""
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
        return session, role, token, "/" + tail

    def _feed(self, session: Session) -> MessageFeed:
        feed = self.feeds.get(session.id)
        if feed is None or feed.session is not session:
            # Forget the feeds of sessions the registry has discarded (their hubs go with them).
            for sid, old in list(self.feeds.items()):
                if self.registry.get(sid) is not old.session:
                    del self.feeds[sid]
            self.clients = {key: c for key, c in self.clients.items() if key[0] in self.feeds}
            feed = self.feeds[session.id] = MessageFeed(session)
        return feed

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        try:
            found = self._resolve(request.match_info["rest"])
            if isinstance(found, t.Reply):
                return _json(found)
            session, role, token, path = found
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
            return _json(await self._answer(request, route, session, (role, token), feed))
        except Exception:
            logger.exception("the gaia2-cli adapter failed to answer a %s", request.method)
            return _json(t.failure(500, t.INTERNAL))

    async def _answer(
        self,
        request: web.Request,
        route: t.Route,
        session: Session,
        caller: tuple[Role, str],
        feed: MessageFeed,
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
        body = await request.read()
        act = t.parse_notify(body) if route is t.Route.NOTIFY else t.parse_action(body)
        if isinstance(act, t.Reply):
            return act
        try:
            value = await self._client(session, *caller).request(t.frame_of(act))
        except RequestError as failure:
            return self._refusal(failure, act, session)
        except NotDurableError as failure:
            return t.failure(503, failure.message)
        if isinstance(act, t.Notify):
            return t.Reply(200, {"ok": True, "runId": f"{session.id}:{session.sim.log.seq}"})
        text = value if isinstance(value, str) else json.dumps(value)
        return t.Reply(200, {"ok": True, "result": text, "value": value})

    def _client(self, session: Session, role: Role, token: str) -> InProcessClient:
        """The session's client for `role` (a new one says hello: RequestError if refused)."""
        key = (session.id, role)
        client = self.clients.get(key)
        if client is None or client.session is not session or self._replaced(client):
            name = f"gaia2-cli:{role.value}@{session.id}"
            client = InProcessClient(self.registry, name=name, holder=_HOLDER, takes_place=False)
            client.hello(session, role, token)
            self.clients[key] = client
        return client

    def _replaced(self, client: InProcessClient) -> bool:
        """Whether a client is replaced by a new one (a WebSocket client would reconnect).
        One closed for its rate only once a full burst is earned again, not at once: the next
        request would otherwise bring a fresh burst after every `rate_strikes` refusals."""
        if not client.closed:
            return False
        rate = self.config.rate
        if rate is None or client.close_code != CloseCode.RATE_LIMITED:
            return True
        assert client.closed_at is not None
        return time.monotonic() - client.closed_at >= self.config.burst / rate

    def _refusal(self, failure: RequestError, act: t.Act, session: Session) -> t.Reply:
        """What a WebSocket client would have got as an error, in gaia2-cli's shape."""
        message = failure.message
        if failure.code == ErrorCode.UNKNOWN_TOOL and isinstance(act, t.Action):
            # The same failure, saying what the session has (there is no list_tools here).
            tools = frozenset(x.name for x in session.sim.list_tools())
            missing = t.check_tool(act.tool, tools)
            message = message if missing is None else missing.body["error"]
        elif failure.code == ErrorCode.RATE_LIMITED and failure.closed:
            config = self.config
            message = (
                f"more than {config.rate_strikes} requests refused while rate limited (more "
                f"than {config.rate:g} requests/s, bursts up to {config.burst}); nothing was "
                "done: back off, then retry"
            )
        return t.refusal(failure.code, message, action=isinstance(act, t.Action))

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
