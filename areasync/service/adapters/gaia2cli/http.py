"""The gaia2-cli adapter's HTTP server: a second port, the routes of `translate.py` per session.

Why a port of its own: gaia2-cli's harnesses POST JSON bodies and read server-sent events, a
response that stays open and grows. The WebSocket port cannot serve either: websockets answers
plain HTTP from `process_request` with one complete response, and its parser refuses request
bodies (`methods.py`). aiohttp, already a dependency of areasync (the stub model server),
serves both on the same event loop with keep-alive and streaming responses; everything it does
here is I/O: the decisions are `translate.py`'s and `screens.py`'s, the messages `feed.py`'s.

URLs carry the credential, since harnesses send no auth header: a harness's base URL (what
gaia2-cli calls `notify_url`) is `http://HOST:PORT/gaia2/<token>` for a session token, which
names its session, or `http://HOST:PORT/gaia2/<admin-token>/<session-id>`. With
`--gaia2-ports`, each session is also served at the bare root of a loopback port of its own,
as upstream's runner reaches an adapter (`bare.py`): the same runner serves those sockets, and
a request's local port says which session it is for. No access log is kept (its lines would
hold tokens), and errors never echo the path.

The adapter watches the registry (`SessionWatcher`): a session's feed is made when it is
registered (so its `events.jsonl` and `connected` miss nothing), its port taken then and given
back when it is discarded, and, once it has ended and its end has gone out on its stream, its
`events.jsonl` and `daemon_status.json` are written beside its trace, in a directory named as
the trace with `.gaia2-cli` for `.json` (upstream's runner keeps them under those names in a
run's directory).

The port is screened as the main port is (`screens.py`, one `PortScreen`): Host and Origin
(421, 403); a POST is judged by its head - token, role and route (401, 403, 404, 405), a
Content-Length within `max_frame_bytes` (411, 413), the bodies in flight per port and per
token (503, 429) - before a byte of its body is read, and its body must then arrive within
`handshake_timeout` (408). Every response carries `headers.API_HEADERS`, aiohttp's own
refusals of malformed requests included (`_Request`), which are logged at INFO, without their
content. Sockets: at most `gaia2_max_connections` at once (one accepted beyond is reset at once,
`service/http/capped.py`); one with no request under way for `http_idle_timeout` is closed
(aiohttp's keep-alive timer, which also runs before a first request). Event streams: at most
`gaia2_max_streams` on the port and `gaia2_streams_per_token` per token (503, 429 with a JSON
body naming the bound); one with nothing to send for `gaia2_sse_keepalive` gets a comment, one
open for `gaia2_sse_lifetime` is ended with `event: end` saying where to resume, and one whose
socket takes nothing for `write_timeout`, or leaves `gaia2_sse_bytes` unread, is ended (a TCP
reset when it cannot even take its last frame).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import os
import socket
import tempfile
import time
import weakref
from collections.abc import Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import msgspec
from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

from areasync.protocol.errors import CloseCode, ErrorCode
from areasync.protocol.frames import Role
from areasync.service.adapters.gaia2cli import artifacts
from areasync.service.adapters.gaia2cli import translate as t
from areasync.service.adapters.gaia2cli.agent import HttpAgent
from areasync.service.adapters.gaia2cli.bare import LOOPBACK, BarePorts, Bound, url
from areasync.service.adapters.gaia2cli.feed import MessageFeed, SseClient
from areasync.service.adapters.gaia2cli.paths import PREFIX, UNKNOWN_TOKEN, adapter_url
from areasync.service.connection.inprocess import InProcessClient, NotDurableError, RequestError
from areasync.service.gate import sockets
from areasync.service.gate.screens import BodyRule, Head, PortScreen, Refusal, Slots
from areasync.service.http.capped import CappedServer
from areasync.service.http.headers import API_HEADERS

if TYPE_CHECKING:
    from areasync.service.config import ServiceConfig
    from areasync.service.sessions.registry import SessionRegistry
    from areasync.service.sessions.session import Session

logger = logging.getLogger("areasync.service")

_HOLDER = "gaia2-cli"  # the lease holder of its requests: none is taken (not an agent)
_SSE_HEADERS = {
    "Content-Type": "text/event-stream",
    "Cache-Control": "no-store",
    "X-Accel-Buffering": "no",
}
_SSE_KEEPALIVE = b": keep-alive\n\n"
# The error codes of gaia2-cli's refusals, which carry none of their own (translate.py).
_CODES = {
    400: "bad_request",
    401: ErrorCode.UNAUTHORIZED,
    403: ErrorCode.FORBIDDEN,
    404: "not_found",
    405: "method_not_allowed",
    408: "request_timeout",
    409: ErrorCode.SESSION_ENDED,
}


class _Request(web.BaseRequest):
    """aiohttp's request, whose every response gets the security headers as it is prepared:
    the adapter's own, and aiohttp's refusals of requests it cannot parse (the hook aiohttp
    gives an application's `on_response_prepare`)."""

    async def _prepare_hook(self, response: web.StreamResponse) -> None:
        for name, value in API_HEADERS:
            if name not in response.headers:
                response.headers[name] = value


class _HandlerLog(logging.LoggerAdapter[logging.Logger]):
    """aiohttp's request-handler log: a request it cannot parse is the client's doing, logged
    at INFO in one line without its content (which may hold a token); anything else as is."""

    def exception(self, msg: object, *args: object, exc_info: Any = True, **kwargs: Any) -> None:
        if isinstance(exc_info, HttpProcessingError):
            self.info(
                "gaia2-cli adapter: refused a request it could not parse (%s, HTTP %s)",
                type(exc_info).__name__,
                exc_info.code,
            )
            return
        super().exception(msg, *args, exc_info=exc_info, **kwargs)


@dataclass(frozen=True)
class Verified:
    """A connection a front accepted on its shared port and handed here for its first
    request, whose session and role the front verified (`front/gaia2.py`)."""

    session_id: str
    role: Role


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
        # The agent of each session that an agent's token URL has made (`agent.py`).
        self.agents: dict[str, HttpAgent] = {}
        self.screen = PortScreen.of(self.body_rule, config)
        self.streams = Slots(
            "event streams",
            per_port=config.gaia2_max_streams,
            per_key=config.gaia2_streams_per_token,
            port_option="gaia2_max_streams",
            key_option="gaia2_streams_per_token",
        )
        self.port: int | None = None
        self.base = ""
        self.server: CappedServer | None = None
        self._runner: web.ServerRunner | None = None
        # Each session's own port (`--gaia2-ports`), its screens, and aiohttp's site on it.
        self.bare = None if config.gaia2_ports is None else BarePorts(*config.gaia2_ports)
        self.bare_screens: dict[int, PortScreen] = {}
        self.bare_sites: dict[int, web.SockSite] = {}
        # In a session worker of `serve --workers N`: the front binds the sessions' ports and
        # hands their connections here (`serve_handed`, `adopt`).
        self.handed = False
        # The connections a front handed from its shared port, each served for one request.
        self.verified: weakref.WeakKeyDictionary[asyncio.BaseTransport, Verified]
        self.verified = weakref.WeakKeyDictionary()
        self._tasks: set[asyncio.Task[None]] = set()
        if config.gaia2_port is not None or config.gaia2_ports is not None:
            registry.watchers.append(self)  # served: it follows every session from its start

    async def start(self, host: str, port: int | None, shown_host: str) -> None:
        """Serve the adapter: on `port` (None: only on the sessions' own ports)."""
        config = self.config
        # No access log: a line per request would print the token in its path.
        # handler_cancellation: an /events client that goes away ends its handler (and its
        # subscription) at once, not at the next message of a quiet session.
        self.server = CappedServer(
            self._handle,
            max_connections=config.gaia2_max_connections,
            request_factory=self._request,
            handler_cancellation=True,
            access_log=None,
            keepalive_timeout=config.http_idle_timeout,
            # A compressed body would be inflated past the length its head announced (a few
            # MiB of gzip can hold gigabytes): harnesses send plain JSON.
            auto_decompress=False,
            logger=_HandlerLog(logging.getLogger("aiohttp.server"), {}),
        )
        self._runner = web.ServerRunner(self.server, handle_signals=False)
        await self._runner.setup()
        if port is not None:
            site = web.TCPSite(self._runner, host, port, backlog=1024)
            await site.start()
            self.port = int(self._runner.addresses[0][1])
            self.base = f"http://{shown_host}:{self.port}"
            self.screen.bind(host, self.port)
        for bound in tuple(self.bare.held.values()) if self.bare is not None else ():
            await self._serve_bare(bound)

    async def serve_handed(self, shared_port: int | None = None, shown_host: str = "") -> None:
        """Serve, with no socket of its own, the connections a front accepts and hands to
        this session worker: on the sessions' own ports (`--gaia2-ports` with `serve
        --workers N`: each session's port is the front's to bind and name, `hold`, its
        connections this adapter's to serve, `adopt`, as connections of that port), and on
        the front's shared port `shared_port` (`--gaia2-port`: one request per connection,
        `adopt_shared`; its URLs name `shown_host`), screened as this port's own would be."""
        self.handed = True
        if self.bare is None:
            self.bare = BarePorts(0, -1)  # no range of its own: the front's ports, held
        if self not in self.registry.watchers:
            self.registry.watchers.append(self)
        await self.start(LOOPBACK, None, LOOPBACK)
        if shared_port is not None:
            config = self.config
            self.port = shared_port
            self.base = f"http://{shown_host}:{shared_port}"
            self.screen.bind(config.host, shared_port)

    def hold(self, session_id: str, port: int) -> bool:
        """`session_id` (registered here) is served at the front's `port`: its URL, and the
        port's screens; False if no such session is here."""
        session = self.registry.get(session_id)
        if session is None or self.bare is None:
            return False
        bound = self.bare.of_session.get(session_id)
        if bound is None or bound.port != port:
            self.bare_screens[port] = self._bare_screen(self.bare.hold(port, session_id))
        session.links.gaia2_cli_url = url(port)
        return True

    async def adopt(self, sock: socket.socket, session_id: str, port: int) -> None:
        """Serve `sock`, a connection the front accepted on `session_id`'s port `port`, from
        its first byte (closed at once if the session is not here: it moved meanwhile, and
        the runner connects again)."""
        if self.server is None or not self.hold(session_id, port):
            sock.close()
            return
        sock.setblocking(False)
        await asyncio.get_running_loop().connect_accepted_socket(self.server, sock=sock)

    async def adopt_shared(self, sock: socket.socket, session_id: str, role: Role) -> None:
        """Serve `sock`, a connection the front accepted on its shared port, from its first
        byte: its first request as `role` of `session_id` (the front verified its token),
        then closed (`front/gaia2.py`; closed at once if the session is not here: it moved
        meanwhile, and the client connects again)."""
        if self.server is None or self.registry.get(session_id) is None:
            sock.close()
            return
        sock.setblocking(False)
        loop = asyncio.get_running_loop()
        # Stored before the first byte is read: the transport reads from the next round of
        # the event loop, after this coroutine resumes.
        transport, _ = await loop.connect_accepted_socket(self.server, sock=sock)
        self.verified[transport] = Verified(session_id, role)

    def _request(self, message: Any, payload: Any, protocol: Any, writer: Any, task: Any) -> Any:
        """aiohttp's request factory: `_Request`, bodies up to `max_frame_bytes`; on a
        connection handed from a front's shared port, its one request (`Connection: close`)."""
        if protocol.transport in self.verified:
            message = message._replace(should_close=True)
        loop = asyncio.get_running_loop()
        limit = self.config.max_frame_bytes
        return _Request(message, payload, protocol, writer, task, loop, client_max_size=limit)

    async def close(self) -> None:
        for agent in tuple(self.agents.values()):
            agent.leave()
        for feed in self.feeds.values():
            for client in tuple(feed.clients):
                client.end("the server is shutting down")
        if self._runner is not None:
            await self._runner.cleanup()
        for task in tuple(self._tasks):
            task.cancel()
        if self.bare is not None:
            self.bare.close()

    # -- the registry's sessions (registry.SessionWatcher) ----------------------------------

    def created(self, session: Session) -> None:
        self._feed(session)
        if self.bare is None or self.handed:
            return
        bound = self.bare.take(session.id)
        if isinstance(bound, str):
            session.links.gaia2_cli_error = bound
            logger.warning("session %s has no gaia2-cli port: %s", session.id, bound)
            return
        session.links.gaia2_cli_url = url(bound.port)
        if self._runner is not None:
            self._spawn(self._serve_bare(bound))

    def ended(self, session: Session) -> None:
        feed = self._feed(session)
        feed.when_ended(functools.partial(self._write_artifacts, session, feed))

    def discarded(self, session: Session) -> None:
        self.feeds.pop(session.id, None)
        agent = self.agents.pop(session.id, None)
        if agent is not None:
            agent.leave()
        self.clients = {key: c for key, c in self.clients.items() if key[0] != session.id}
        bound = None if self.bare is None else self.bare.release(session.id)
        if bound is None:
            return
        self.bare_screens.pop(bound.port, None)
        site = self.bare_sites.pop(bound.port, None)
        if site is not None:
            self._spawn(site.stop())
        elif bound.sock is not None:  # a front's (None) is the front's to close
            bound.sock.close()

    async def _serve_bare(self, bound: Bound) -> None:
        assert self._runner is not None and bound.sock is not None
        self.bare_screens[bound.port] = self._bare_screen(bound)
        site = web.SockSite(self._runner, bound.sock)
        self.bare_sites[bound.port] = site
        await site.start()

    def _bare_screen(self, bound: Bound) -> PortScreen:
        config = self.config
        screen = PortScreen.of(functools.partial(self.bare_rule, bound), config)
        # Port 0: no page of any port is a same-site origin here (the port serves none).
        screen.bind(LOOPBACK, 0)
        return screen

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            logger.error("the gaia2-cli adapter failed on a port", exc_info=task.exception())

    def _write_artifacts(self, session: Session, feed: MessageFeed) -> None:
        """`events.jsonl` and `daemon_status.json` beside the session's trace (if it has one)."""
        trace = session.trace_path
        if trace is None:
            return
        directory = trace.with_name(trace.stem + ".gaia2-cli")
        try:
            directory.mkdir(exist_ok=True)
            _write(directory / artifacts.EVENTS_FILE, feed.events_jsonl())
            _write(directory / artifacts.STATUS_FILE, self._status_bytes(feed))
        except OSError:
            logger.exception("could not write the gaia2-cli artifacts of session %s", session.id)

    def url(self, token: str, session_id: str | None = None) -> str:
        """A harness's base URL: `token`'s session, or `session_id` with the admin token."""
        return adapter_url(self.base, token, session_id)

    # -- screens ----------------------------------------------------------------------------

    def body_rule(self, head: Head) -> BodyRule | None:
        """The adapter's routes with a body (screens.py): a POST, of at most `max_frame_bytes`,
        whose token, session, route and role are judged from its head."""
        if head.method != "POST" or not head.path.startswith(PREFIX):
            return None
        return self._rule(self._caller(unquote(head.path[len(PREFIX) :]), "POST"))

    def bare_rule(self, bound: Bound, head: Head) -> BodyRule | None:
        """`body_rule` on a session's own port, whose session is `bound`'s."""
        if head.method != "POST":
            return None
        return self._rule(self._bare_caller(bound, head.path.partition("?")[0], "POST"))

    def verified_rule(self, verified: Verified, head: Head) -> BodyRule | None:
        """`body_rule` for the request of a connection a front handed (`verified`)."""
        if head.method != "POST":
            return None
        return self._rule(self._verified_caller(verified, unquote(head.path), "POST"))

    def _rule(self, found: tuple[Session, Role, str, t.Route] | t.Reply) -> BodyRule:
        limit = self.config.max_frame_bytes
        if isinstance(found, t.Reply):
            return BodyRule(limit, "max_frame_bytes", key="", refused=_as_refusal(found))
        return BodyRule(limit, "max_frame_bytes", key=found[2])

    # -- requests ---------------------------------------------------------------------------

    def _resolve(self, rest: str) -> tuple[Session, Role, str, str] | t.Reply:
        """The session, the caller's role, its token and the route of `/gaia2/<rest>`."""
        token, _, tail = rest.partition("/")
        found = self.registry.tokens.identify(token)
        if found is None:
            return t.failure(401, UNKNOWN_TOKEN)
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

    def _bare_caller(
        self, bound: Bound, path: str, method: str
    ) -> tuple[Session, Role, str, t.Route] | t.Reply:
        """`_caller` on a session's own port: its user, with the admin token for its hello
        (a restored session's tokens are hashes: the admin's opens every role)."""
        session = self.registry.get(bound.session_id)
        if session is None:  # pragma: no cover - its port goes with it (`discarded`)
            return t.failure(404, "this port's session was discarded")
        return self._routed(session, Role.USER, f"port:{bound.port}", path, method)

    def _verified_caller(
        self, verified: Verified, path: str, method: str
    ) -> tuple[Session, Role, str, t.Route] | t.Reply:
        """`_caller` for a request whose session and role a front verified: its path's
        token (and, the admin's, the session's id) stand for them. The admin's token is the
        front's, unknown here: its requests act with this service's, as on a session's own
        port (a `port:` key)."""
        if not path.startswith(PREFIX):
            return t.failure(404, f"not found: the adapter's URLs are {PREFIX}...")
        token, _, tail = path[len(PREFIX) :].partition("/")
        session_id = verified.session_id
        if verified.role is Role.ADMIN:
            session_id, _, tail = tail.partition("/")
            token = f"port:{self.port}"
        session = self.registry.get(verified.session_id)
        if session is None or session_id != verified.session_id:
            return t.failure(404, f"no session {session_id[:64]!r} here: connect again")
        return self._routed(session, verified.role, token, "/" + tail, method)

    def _caller(self, rest: str, method: str) -> tuple[Session, Role, str, t.Route] | t.Reply:
        """The session, role, token and route of `method /gaia2/<rest>`, or the refusal."""
        found = self._resolve(rest)
        if isinstance(found, t.Reply):
            return found
        return self._routed(*found, method)

    def _routed(
        self, session: Session, role: Role, token: str, path: str, method: str
    ) -> tuple[Session, Role, str, t.Route] | t.Reply:
        route = t.route_of(method, path)
        if isinstance(route, t.Reply):
            return route
        refused = t.permission(role, route)
        if refused is not None:
            return refused
        return session, role, token, route

    def _bare_of(self, request: web.BaseRequest) -> Bound | None:
        """The session's own port `request` came in on, if it did."""
        if self.bare is None or request.transport is None:
            return None
        sockname = request.transport.get_extra_info("sockname")
        return None if not sockname else self.bare.at(int(sockname[1]))

    def _found(
        self, request: web.BaseRequest, bound: Bound | None, verified: Verified | None
    ) -> tuple[Session, Role, str, t.Route] | t.Reply:
        if verified is not None:
            return self._verified_caller(verified, request.path, request.method)
        if bound is not None:
            return self._bare_caller(bound, request.path, request.method)
        if not request.path.startswith(PREFIX):
            return t.failure(404, f"not found: the adapter's URLs are {PREFIX}...")
        return self._caller(request.path[len(PREFIX) :], request.method)

    async def _handle(self, request: web.BaseRequest) -> web.StreamResponse:
        raw = tuple((k.decode("latin-1"), v.decode("latin-1")) for k, v in request.raw_headers)
        bound = self._bare_of(request)
        verified = None if request.transport is None else self.verified.get(request.transport)
        screen = self.screen if bound is None else self.bare_screens[bound.port]
        rules = None if verified is None else functools.partial(self.verified_rule, verified)
        admitted = screen.check(Head(request.method, request.raw_path, raw), rules)
        if isinstance(admitted, Refusal):
            return _refused(admitted)
        try:
            with admitted.holding():
                found = self._found(request, bound, verified)
                if isinstance(found, t.Reply):
                    return _json(found)
                session, role, token, route = found
                feed = self._feed(session)
                if route is t.Route.EXECUTE:  # its body is left unread: the socket goes
                    return _json(t.NO_ENV_DISPATCH, close=True)
                if route is t.Route.EVENTS and request.method == "HEAD":
                    return web.Response(headers=_SSE_HEADERS)
                if route is t.Route.EVENTS:
                    return await self._events(request, feed, token)
                if route is t.Route.EVENTS_JSONL:
                    return _raw(feed.events_jsonl(), "application/x-ndjson")
                if route is t.Route.DAEMON_STATUS:
                    return _raw(self._status_bytes(feed), "application/json")
                body = await self._body(request, admitted.length)
                if isinstance(body, t.Reply):
                    return _json(body, close=True)
                return _json(await self._answer(request, route, session, (role, token), body))
        except ConnectionError:  # the client went away: whatever is answered goes nowhere
            return _json(t.failure(400, "the connection was lost"), close=True)
        except Exception:
            logger.exception("the gaia2-cli adapter failed to answer a %s", request.method)
            return _json(t.failure(500, t.INTERNAL))

    @staticmethod
    def _status_bytes(feed: MessageFeed) -> bytes:
        return artifacts.encode_status(t.daemon_status(feed.view()))

    async def _body(self, request: web.BaseRequest, length: int) -> bytes | t.Reply:
        """The request's body, `length` bytes (screened), arriving within handshake_timeout."""
        if not length:
            return b""
        limit = self.config.handshake_timeout
        try:
            return await asyncio.wait_for(request.content.readexactly(length), limit)
        except asyncio.IncompleteReadError as exc:
            return t.failure(400, f"the body ended after {len(exc.partial)} of its {length} bytes")
        except TimeoutError:
            return t.Reply(
                408,
                {
                    "ok": False,
                    "error": f"the body's {length} bytes did not arrive within {limit:g} s "
                    "(handshake_timeout): send it at once",
                },
            )

    async def _answer(
        self,
        request: web.BaseRequest,
        route: t.Route,
        session: Session,
        caller: tuple[Role, str],
        body: bytes,
    ) -> t.Reply:
        feed = self._feed(session)
        match route:
            case t.Route.HEALTH:
                return t.Reply(200, t.health_of(feed.view()))
            case t.Route.STATUS:
                return t.Reply(200, t.status_of(feed.view()))
            case t.Route.TOOLS:
                tools = msgspec.to_builtins(session.sim.list_tools())
                return t.Reply(200, {"ok": True, "tools": tools})
            case t.Route.MESSAGES | t.Route.NOTIFICATIONS:
                after = t.parse_after(dict(request.query))
                if isinstance(after, t.Reply):
                    return after
                if route is t.Route.MESSAGES:
                    return t.messages_reply(feed.messages, after)
                return t.messages_reply(feed.notifications, after, "notifications")
        act = t.act_of(route, body, feed.notified_at)
        if isinstance(act, t.Reply):
            return act
        try:
            value = await self._carry_out(session, *caller, act)
        except RequestError as failure:
            return self._refusal(failure, act, session)
        except NotDurableError as failure:
            return t.failure(503, failure.message)
        if isinstance(act, t.Notify):
            return t.Reply(200, {"ok": True, "runId": f"{session.id}:{session.sim.log.seq}"})
        if isinstance(act, t.Done):
            return t.Reply(200, {"ok": True})
        text = value if isinstance(value, str) else json.dumps(value)
        time = session.sim.clock_state(peek=True).time  # when it was done, simulated
        return t.Reply(200, {"ok": True, "result": text, "value": value, "time": time})

    async def _carry_out(self, session: Session, role: Role, token: str, act: t.Act) -> Any:
        """`act` as `role` would send its frame: the agent's token acts as the agent."""
        frame = t.frame_of(act)
        if role is not Role.AGENT:
            return await self._client(session, role, token).request(frame)
        agent = self._agent(session, token)
        if isinstance(act, t.Done):
            return await agent.idle(frame)
        return await agent.request(frame)

    def _agent(self, session: Session, token: str) -> HttpAgent:
        """The session's HTTP agent (a new one says hello and attaches: RequestError if
        refused; one its gate closed is replaced as `_client`'s are)."""
        agent = self.agents.get(session.id)
        if agent is not None:
            if agent.session is session and not agent.left and not self._replaced(agent.client):
                return agent
            agent.leave()
        agent = HttpAgent(self.registry, session, f"gaia2-cli@{session.id}")
        agent.join(token)
        self.agents[session.id] = agent
        return agent

    def _client(self, session: Session, role: Role, token: str) -> InProcessClient:
        """The session's client for `role` (a new one says hello: RequestError if refused).
        On a session's own port (a `port:` key, no token), or for the front's admin
        (`_verified_caller`), it says hello with this service's admin token."""
        key = (session.id, role)
        client = self.clients.get(key)
        if client is None or client.session is not session or self._replaced(client):
            name = f"gaia2-cli:{role.value}@{session.id}"
            client = InProcessClient(self.registry, name=name, holder=_HOLDER, takes_place=False)
            if token.startswith("port:"):
                token = self.registry.tokens.admin
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

    async def _events(
        self, request: web.BaseRequest, feed: MessageFeed, token: str
    ) -> web.StreamResponse:
        after = t.parse_after(dict(request.query))
        if isinstance(after, t.Reply):
            return _json(after)
        slot = self.streams.take(token)
        if isinstance(slot, Refusal):
            return _refused(slot)
        with slot:
            response = web.StreamResponse(headers=_SSE_HEADERS)
            await response.prepare(request)
            client = feed.attach(self.config.gaia2_sse_bytes, after)
            try:
                await self._stream(response, client)
            except (TimeoutError, ConnectionError):
                # Not draining for `write_timeout`, or gone: reset the socket, nobody waits.
                if request.transport is not None:
                    sockets.reset(request.transport)
                return response
            finally:
                feed.detach(client)
            with contextlib.suppress(ConnectionError, TimeoutError):
                await asyncio.wait_for(response.write_eof(), 1.0)
            return response

    async def _stream(self, response: web.StreamResponse, client: SseClient) -> None:
        """Write `client`'s messages as they come, a keep-alive comment when there has been
        nothing for `gaia2_sse_keepalive`, until it is ended (by the feed, or here once it
        has lasted `gaia2_sse_lifetime`); each write must drain within `write_timeout`."""
        config = self.config
        timeout = config.write_timeout
        loop = asyncio.get_running_loop()
        ends = loop.time() + config.gaia2_sse_lifetime
        await asyncio.wait_for(response.write(t.SSE_HELLO), timeout)
        while True:
            left = ends - loop.time()
            if left <= 0:
                client.end(
                    f"this stream has lasted {config.gaia2_sse_lifetime:g} s, its longest "
                    "(gaia2_sse_lifetime): open /events?after=<lastSeq> again to go on"
                )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(client.wake.wait(), min(config.gaia2_sse_keepalive, left))
            if not client.wake.is_set():
                await asyncio.wait_for(response.write(_SSE_KEEPALIVE), timeout)
                continue
            client.wake.clear()
            data = client.take()
            if data:
                await asyncio.wait_for(response.write(data), timeout)
            if client.ended is not None:
                await asyncio.wait_for(response.write(client.ended), timeout)
                return


def _json(reply: t.Reply, *, close: bool = False) -> web.Response:
    response = web.Response(
        status=reply.status, body=reply.encode(), content_type="application/json"
    )
    if close:
        response.force_close()
    return response


def _raw(body: bytes, content_type: str) -> web.Response:
    response = web.Response(status=200, body=body)
    response.headers["Content-Type"] = content_type
    return response


def _write(path: Path, data: bytes) -> None:
    """`data` into `path`, atomically (a reader never sees half of it), as upstream writes."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _as_refusal(reply: t.Reply) -> Refusal:
    """A refusal of translate.py's, as the screens carry it."""
    return Refusal(reply.status, _CODES.get(reply.status, "refused"), str(reply.body["error"]))


def _refused(refusal: Refusal) -> web.Response:
    """A screen's refusal in gaia2-cli's error shape (and its code); the socket is closed
    after it, so that a body it did not read is never waited for."""
    body = {"ok": False, "error": refusal.message, "code": str(refusal.code)}
    response = web.Response(
        status=refusal.status,
        body=json.dumps(body).encode(),
        content_type="application/json",
        headers=dict(refusal.headers),
    )
    response.force_close()
    return response
