"""An MCP endpoint per session: the official `mcp` SDK's Streamable HTTP server, on its own port.

Where it sits: MCP's Streamable HTTP answers a POST with a JSON body or with server-sent
events that grow while a call runs, which the WebSocket port cannot serve (websockets answers
plain HTTP with one complete response, `methods.py`). So it gets its own port
(`--mcp-port`), served by aiohttp, already areasync's HTTP server for gaia2-cli's adapter:
on the service's event loop, with no second HTTP stack to harden, no signal handlers or
logging set-up of its own (an embedded uvicorn brings both). aiohttp does the sockets; the
SDK's `StreamableHTTPServerTransport` (an ASGI application, bridged by `asgi.py`) speaks MCP;
the decisions - who may call, on which session - are made here before the SDK sees a byte.

URLs and credentials: `http://HOST:PORT/mcp` with `Authorization: Bearer <the session's agent
token>`, or `http://HOST:PORT/mcp/<session id>` with the agent's or the admin token. Tokens
travel only in the header, so no URL or log holds one. Other roles get 403: MCP serves the
session's tools to its agent. Every request passes the port's screens first (`screens.py`,
as on every port): Host and Origin (421, 403); a POST is judged by its head - token (401),
Content-Length within `max_frame_bytes` (411, 413), the bodies in flight on the port and per
token (503, 429) - before its body is read, which must arrive within `handshake_timeout`.
At most `max_connections` sockets are open at once (one beyond is reset); one idle for
`http_idle_timeout` is closed.

The SDK runs stateless (a transport per request, ended with it: no task left behind), and
each credential's state is an OpenEnv `Episode` held between requests and reaped when idle
(`openenv/held.py`), whose calls go the way a WebSocket agent's do (`openenv/toolcalls.py`). An
`initialize` also gets a session id of the port's making, with which the client opens MCP's
GET stream: the session's notifications are written there as they arrive (`listening.py`).
Each notification reaches an MCP session once, as MCP `notifications/message` (logger
`areasync.notification`, level `info`, the notification record as data): on its GET stream
while one is open, else with the answer to its next call; the wait tool returns them too.
"""

from __future__ import annotations

import asyncio
import contextvars
import hmac
import json
import logging
import socket
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import anyio
import mcp.types as types
from aiohttp import web
from mcp.server.lowlevel import Server
from mcp.server.streamable_http import StreamableHTTPServerTransport

from areasync.protocol.errors import ErrorCode
from areasync.protocol.frames import Role
from areasync.service.adapters.mcp import asgi, listening
from areasync.service.adapters.mcp.credentials import PATH, credential_of
from areasync.service.adapters.openenv import toolcalls
from areasync.service.adapters.openenv.credential import Credential
from areasync.service.adapters.openenv.episode import Episode
from areasync.service.adapters.openenv.held import HeldEpisodes
from areasync.service.adapters.openenv.messages import OpenEnvError
from areasync.service.connection.handoff import McpCredential, salted
from areasync.service.gate.auth import token_from_http
from areasync.service.gate.screens import BodyRule, Head, PortScreen, Refusal
from areasync.service.http.capped import CappedServer
from areasync.service.http.headers import API_HEADERS

if TYPE_CHECKING:
    from areasync.service.config import ServiceConfig
    from areasync.service.sessions.registry import SessionRegistry
    from areasync.service.sessions.session import Session

logger = logging.getLogger("areasync.service")

NOTIFICATION_LOGGER = listening.LOGGER
_EPISODE = "areasync.episode"  # the scope key of the caller's episode
_LISTENER = "areasync.listener"  # ...and of its listening MCP session, if it has one
SESSION_HEADER = listening.SESSION_HEADER
# The request `_handle` is screening, for `body_rule` (a contextvar: each request has its task).
_REQUEST: contextvars.ContextVar[web.BaseRequest | None] = contextvars.ContextVar(
    "areasync_mcp_request", default=None
)
_NO_SESSION = Refusal(
    405,
    "method_not_allowed",
    "GET and DELETE name an MCP session: send the Mcp-Session-Id that initialize answered",
)


def _is_initialize(body: bytes) -> bool:
    """`body` is MCP's `initialize` request (it opens a session)."""
    try:
        message = json.loads(body)
    except ValueError:
        return False
    return isinstance(message, dict) and message.get("method") == "initialize"


class McpPort:
    """The MCP endpoint of every session of a service: see the module docstring."""

    def __init__(self, registry: SessionRegistry, config: ServiceConfig) -> None:
        self.registry = registry
        self.config = config
        self.listeners = listening.Listeners()
        self.held = HeldEpisodes(
            registry, "MCP episodes", self._still_valid, on_gone=self.listeners.close_key
        )
        self.screen = PortScreen.of(self.body_rule, config)
        self.app: Server[Any, Any] = Server("areasync", instructions=_INSTRUCTIONS)
        self.app.list_tools()(self._list_tools)
        self.app.call_tool(validate_input=False)(self._call_tool)
        self.port: int | None = None
        self.base = ""
        self._runner: web.ServerRunner | None = None
        self.server: CappedServer | None = None
        self._reaper: asyncio.Task[None] | None = None  # a session worker's (`serve_handed`)
        # In a session worker of `serve --workers N`: each connection the front handed here
        # (by its handler's id), with the credential its first request carried.
        self.handed: dict[int, tuple[str, McpCredential]] = {}
        if config.mcp_port is not None:
            registry.watchers.append(self)  # each session's `mcp_url`, once the port listens

    # -- life -------------------------------------------------------------------------------

    async def start(self, host: str, port: int, shown_host: str, *, listen: bool = True) -> None:
        """Serve on `port` of `host` (`listen` False, in a session worker: the front's port,
        whose connections it hands here, `adopt`)."""
        config = self.config
        self.server = CappedServer(
            self._handle,
            max_connections=config.max_connections,
            handler_cancellation=True,
            access_log=None,
            keepalive_timeout=config.http_idle_timeout,
            auto_decompress=False,
            on_lost=lambda handler: self.handed.pop(id(handler), None),
        )
        self._runner = web.ServerRunner(
            self.server, handle_signals=False, shutdown_timeout=config.close_timeout
        )
        await self._runner.setup()
        if listen:
            site = web.TCPSite(self._runner, host, port, backlog=1024)
            await site.start()
            port = int(self._runner.addresses[0][1])
        self.port = port
        self.base = f"http://{shown_host}:{self.port}"
        self.screen.bind(host, self.port)
        for session in self.registry.sessions.values():  # those registered before it listened
            self.created(session)

    async def serve_handed(self, host: str, port: int, shown_host: str) -> None:
        """Serve, in a session worker of `serve --workers N`, the connections the front
        accepts on its MCP `port` of `host` and hands here (`adopt`): no socket of its own;
        each session's `mcp_url` names the front's port."""
        if self not in self.registry.watchers:
            self.registry.watchers.append(self)
        await self.start(host, port, shown_host, listen=False)
        self._reaper = asyncio.get_running_loop().create_task(self.held.reap_forever())

    async def adopt(self, sock: socket.socket, session_id: str, credential: McpCredential) -> None:
        """Serve `sock`, a connection the front accepted for `session_id` with `credential`
        (`front/mcp.py`), from its first byte."""
        server = self.server
        assert server is not None

        def handler() -> Any:
            made = server()
            self.handed[id(made)] = (session_id, credential)
            return made

        sock.setblocking(False)
        await asyncio.get_running_loop().connect_accepted_socket(handler, sock=sock)

    async def _stateless(self, scope: Any, receive: Any, send: Any) -> None:
        """One request on a transport of its own, ended with it (the SDK's stateless mode,
        whose session manager in `mcp` 1.11 leaves each request's server task running)."""
        transport = StreamableHTTPServerTransport(mcp_session_id=None)

        async def run_server(*, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
            async with transport.connect() as (read, write):
                task_status.started()
                options = self.app.create_initialization_options()
                await self.app.run(read, write, options, stateless=True)

        async with anyio.create_task_group() as tg:
            await tg.start(run_server)
            try:
                await transport.handle_request(scope, receive, send)
            finally:
                tg.cancel_scope.cancel()

    async def close(self) -> None:
        """Stop: the agents leave their sessions (a wait under way returns, answered), then
        the port closes, giving answers in flight `close_timeout` seconds to be written."""
        self.listeners.close_all()
        if self._reaper is not None:
            self._reaper.cancel()
        await self.held.close()
        if self._runner is not None:
            await self._runner.cleanup()

    def url(self, session_id: str) -> str:
        """The session's MCP URL (its agent's or the admin token goes in the header)."""
        return f"{self.base}{PATH}/{session_id}"

    # -- the registry's sessions (registry.SessionWatcher) ----------------------------------

    def created(self, session: Session) -> None:
        """The session's `mcp_url` in its links: the banner's, `create_session`'s result and
        `/api/sessions` show it (a cluster's router too, with its node's host)."""
        if self.port is not None:
            session.links.mcp_url = self.url(session.id)

    def ended(self, session: Session) -> None:
        pass

    def discarded(self, session: Session) -> None:
        pass

    # -- who calls --------------------------------------------------------------------------

    def _still_valid(self, key: str) -> bool:
        token, _, _ = key.partition("\x00")
        return self.registry.tokens.identify(token) is not None

    def _handed_credential(
        self, head: Head, session_id: str, handed: McpCredential
    ) -> Credential | Refusal:
        """The caller's credential on a connection the front handed for `session_id` with
        `handed`: the same token (its salted hash) and session, or the refusal."""
        path = head.path
        named = unquote(path[len(PATH) + 1 :]) if path.startswith(PATH + "/") else None
        token = token_from_http("", head.first("Authorization"))
        if token is None or not hmac.compare_digest(salted(handed.salt, token), handed.proof):
            return Refusal(
                401,
                ErrorCode.UNAUTHORIZED,
                "this connection was opened with another token: open a new connection for "
                "each token (Authorization: Bearer <token>)",
            )
        if named is not None and named != session_id:
            return Refusal(
                421,
                "misdirected_request",
                f"this connection serves session {session_id!r} (its first request's): open a "
                "new connection for another session",
            )
        if self.registry.get(session_id) is None:
            return Refusal(404, "not_found", f"no session {session_id!r} here any more")
        # The admin's hello is said with this service's own admin token (the front's never
        # comes here); an agent's token is the session's, known here.
        said = self.registry.tokens.admin if handed.role is Role.ADMIN else token
        return Credential(token=said, role=handed.role, session_id=session_id)

    def _found(self, request: web.BaseRequest, head: Head) -> Credential | Refusal:
        handed = self.handed.get(id(request.protocol))
        if handed is None:
            return self._credential(head)
        return self._handed_credential(head, *handed)

    def _credential(self, head: Head) -> Credential | Refusal:
        """The caller's credential on its session, or the refusal."""
        registry = self.registry
        return credential_of(head, registry.tokens, lambda sid: registry.get(sid) is not None)

    def body_rule(self, head: Head) -> BodyRule | None:
        if head.method != "POST":
            return None
        request = _REQUEST.get()
        found = self._credential(head) if request is None else self._found(request, head)
        limit = self.config.max_frame_bytes
        if isinstance(found, Refusal):
            return BodyRule(limit, "max_frame_bytes", key="", refused=found)
        return BodyRule(limit, "max_frame_bytes", key=found.key)

    # -- requests ---------------------------------------------------------------------------

    async def _handle(self, request: web.BaseRequest) -> web.StreamResponse:
        raw = tuple((k.decode("latin-1"), v.decode("latin-1")) for k, v in request.raw_headers)
        head = Head(request.method, request.raw_path, raw)
        _REQUEST.set(request)  # this request's task's own: `body_rule` reads it
        admitted = self.screen.check(head)
        if isinstance(admitted, Refusal):
            return _refused(admitted)
        found = self._found(request, head)
        if isinstance(found, Refusal):
            return _refused(found)
        try:
            with admitted.holding():
                body = b""
                if admitted.length:
                    body = await asyncio.wait_for(
                        request.content.readexactly(admitted.length),
                        self.config.handshake_timeout,
                    )
                key = f"{found.token}\x00{found.session_id}"
                episode = self.held.episode(key, found)
                return await self._answer(request, body, key, episode)
        except (TimeoutError, asyncio.IncompleteReadError):
            return _refused(
                Refusal(408, "request_timeout", "the body did not arrive in full in time")
            )
        except ConnectionError:
            return _refused(Refusal(400, "bad_request", "the connection was lost"))

    async def _answer(
        self, request: web.BaseRequest, body: bytes, key: str, episode: Episode
    ) -> web.StreamResponse:
        """A request past the screens: its MCP session (`listening.py`), then the SDK."""
        named = request.headers.get(SESSION_HEADER)
        listener = None if named is None else self.listeners.get(named, key)
        if named is not None and listener is None:
            return _refused(
                Refusal(
                    404,
                    "not_found",
                    "no such MCP session (it ended, or it is another token's): initialize again",
                )
            )
        if request.method == "GET":
            if listener is None:
                return _refused(_NO_SESSION)
            if listener.streaming:
                return _refused(
                    Refusal(409, "conflict", "this MCP session's GET stream is open already")
                )
            config = self.config
            return await listening.stream(
                request, listener, episode, config.mcp_sse_keepalive, config.write_timeout
            )
        if request.method == "DELETE":
            if listener is None:
                return _refused(_NO_SESSION)
            self.listeners.close(listener.id)
            return web.Response(status=200, headers=dict(API_HEADERS))
        added: dict[str, str] = {}
        async with self.held.using(episode):
            if listener is None and _is_initialize(body):
                try:
                    await toolcalls.joined(episode)
                except OpenEnvError as refused:
                    return _refused(Refusal(409, "session_error", refused.message))
                listener = self.listeners.open(key)
                listening.due(listener, episode)  # from now on
                added[SESSION_HEADER] = listener.id
            scope = {_EPISODE: episode, _LISTENER: listener}
            return await asgi.serve(self._stateless, request, body, scope, added)

    def _episode(self) -> Episode:
        request = self.app.request_context.request
        episode = None if request is None else request.scope.get(_EPISODE)
        assert isinstance(episode, Episode)
        return episode

    def _listener(self) -> listening.Listener | None:
        request = self.app.request_context.request
        return None if request is None else request.scope.get(_LISTENER)

    async def _list_tools(self) -> list[types.Tool]:
        episode = self._episode()
        try:
            listed = await toolcalls.list_tools(episode, self.config.mcp_max_wait)
        except Exception as exc:
            message = getattr(exc, "message", None) or str(exc)
            raise RuntimeError(message) from None
        return [types.Tool.model_validate(tool) for tool in listed]

    async def _call_tool(self, name: str, arguments: dict[str, Any]) -> list[types.TextContent]:
        episode = self._episode()
        outcome = await toolcalls.call_tool(episode, name, arguments, self.config.mcp_max_wait)
        context = self.app.request_context
        listener = self._listener()
        # Each notification reaches an MCP session once as a log message (`listening.py`).
        notes = outcome.notifications
        if listener is not None:
            notes = [] if listener.streaming else listening.due(listener, episode)
        for notification in notes:
            await context.session.send_log_message(
                "info", notification, NOTIFICATION_LOGGER, related_request_id=context.request_id
            )
        if outcome.error:
            raise _ToolError(outcome.text)
        return [types.TextContent(type="text", text=outcome.text)]


class _ToolError(Exception):
    """A call that failed: the SDK answers it as a result with `isError` and this text."""


_INSTRUCTIONS = (
    "An areasync session of Meta's Agents Research Environments: its apps' tools, called as the "
    "session's agent. Simulated time stands still while you act (fast mode); call "
    "areasync__wait_for_notifications to let it run until the environment answers. "
    "Notifications arrive as log messages (logger areasync.notification) and in that tool's "
    "result."
)


def _refused(refusal: Refusal) -> web.Response:
    """A refusal as JSON; the socket is closed after it, so a body it did not read is never
    waited for."""
    body = {"error": {"code": str(refusal.code), "message": refusal.message}}
    response = web.Response(
        status=refusal.status,
        body=json.dumps(body).encode(),
        content_type="application/json",
        headers={**dict(API_HEADERS), **dict(refusal.headers)},
    )
    response.force_close()
    return response
