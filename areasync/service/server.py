"""`Service`: the areasync server, sessions and clients on one port, started and stopped cleanly.

    async with Service(ServiceConfig(port=0), scenarios=["scenario_tutorial"]) as service:
        print(service.banner())
        ...                       # clients connect to service.ws_url("scenario_tutorial")

or, as `areasync serve` does, `await service.serve()` until `service.shutdown()` (the CLI calls
it on SIGINT/SIGTERM). Shutting down ends every live session (its clients receive `ended`, its
trace is written), then closes every socket with 1001 (going away) after a short grace to
flush, then stops listening for good. With a state dir (`--state-dir`) it *suspends* every
journaled live session instead: a deploy (SIGTERM, start again) must lose no session, so its
journal is made complete and durable without `Ended`, no trace is written, and its clients are
closed 1001 "the server is restarting" to reconnect, with `since`, to the next server, which
resumes the session from its journal (`Session.suspend`, `restore.py`).

The WebSocket server is `websockets.asyncio.server`, with permessage-deflate off: compressing
would cost CPU per subscriber per frame and defeat encode-once fan-out, and frames are small.
Sessions run in the service's anyio task group; each connection runs in its own (see
`connection/websocket.py`).

Sockets that have not said hello are admitted through a pool of their own (`admission.py`:
`max_pending_hellos`, idle ones evicted with 4408, newcomers parked unread while none may be),
so only authenticated connections count against `max_connections`; one task for the whole
server closes sockets that take no bytes for `write_timeout` with 4008 (`stalls.py`).
"""

from __future__ import annotations

import asyncio
import logging
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import anyio
import anyio.abc
from websockets.asyncio.server import Server, ServerConnection, serve

from areasync.bridge.scenarios.loading import registered_ids
from areasync.engine.clock import REAL_WALL, Wall
from areasync.protocol.errors import CloseCode, ProtocolError
from areasync.protocol.frames import Role
from areasync.service import background
from areasync.service.adapters.gaia2cli.bare import banner_lines
from areasync.service.adapters.gaia2cli.http import Gaia2Adapter
from areasync.service.adapters.mcp.port import McpPort
from areasync.service.adapters.openenv.credential import Credential
from areasync.service.adapters.openenv.paths import base_url as openenv_base_url
from areasync.service.adapters.openenv.paths import locate as openenv_locate
from areasync.service.adapters.openenv.socket import serve_socket as serve_openenv
from areasync.service.config import ServiceConfig
from areasync.service.connection.handoff import Handoff
from areasync.service.connection.redact import RedactingLogger
from areasync.service.connection.websocket import Connection
from areasync.service.durability.restore import restore_sessions
from areasync.service.durability.state_dir import Journals, StateDirError
from areasync.service.fanout.stalls import StallSweep
from areasync.service.gate import screened, sockets
from areasync.service.gate.admission import Admission, connection_class
from areasync.service.gate.auth import Tokens
from areasync.service.http.answers import session_id_of
from areasync.service.http.routes import HttpRoutes
from areasync.service.metrics import Metrics
from areasync.service.sessions.registry import SessionRegistry
from areasync.service.sessions.session import Session
from areasync.service.starting import (
    ServiceError,
    display_host,
    is_file,
    listen_error,
    natural_id,
)
from areasync.simulation.loading import Loadable

logger = logging.getLogger("areasync.service")

DEFAULT_SCENARIOS: tuple[str, ...] = ("scenario_tutorial",)

# Frames a connection may have read but not yet handled. The reader handles each frame at once,
# so a short queue is enough, and it bounds what one client can make the server buffer
# (about _MAX_QUEUE x 2 x max_frame_bytes; websockets then stops reading the socket).
_MAX_QUEUE = 4
_BACKLOG = 1024


class _Started:
    """An anyio TaskStatus that resolves an asyncio future (see `Service.__aenter__`)."""

    def __init__(self, future: asyncio.Future[None]) -> None:
        self.future = future

    def started(self, value: Any = None) -> None:
        if not self.future.done():
            self.future.set_result(None)


class Service:
    """The areasync WebSocket + HTTP service. See the module docstring."""

    def __init__(
        self,
        config: ServiceConfig | None = None,
        scenarios: Sequence[Loadable] = DEFAULT_SCENARIOS,
        *,
        restore_at_start: bool = True,
        listen: bool = True,
        ws_base: str | None = None,
        keep_admin_token: bool = True,
        wall: Wall = REAL_WALL,
    ) -> None:
        self.config = config or ServiceConfig()
        # False when the state dir is shared with other servers (a cluster's hosts,
        # `areasync.cluster`, a front's workers): this one restores only the sessions it is
        # assigned (`restore`).
        self.restore_at_start = restore_at_start
        # False in a session worker (`areasync/sessionworker/`): it opens no port; its
        # connections are handed over by the front (`adopt`), whose URL is `ws_base`, and the
        # state dir's admin token is the front's alone (`keep_admin_token=False`).
        self.listens = listen
        self.keep_admin_token = keep_admin_token
        # False: the journals' directory is gone after this run (a front's private one), so
        # live sessions are stopped (traces written) rather than suspended.
        self.suspend_at_shutdown = True
        self.tokens = Tokens(self.config.admin_token)
        self.metrics = Metrics()
        # The wall the sessions it starts read and wait on, and its connections' rate limits
        # read (a test's own, to move by hand).
        self.registry = SessionRegistry(self.config, self.tokens, self.metrics, wall)
        self.connections: dict[Connection, None] = {}
        self.openenv_sockets: dict[ServerConnection, None] = {}  # OpenEnv's /ws connections
        # Sockets before hello (a pool of their own) and authenticated connections (what
        # max_connections counts, at the handshake's 503): see admission.py.
        self.admission = Admission(self.config.max_pending_hellos, self.config.max_connections)
        self.http = HttpRoutes(self.registry, lambda: self.admission.authenticated)
        # gaia2-cli's HTTP+SSE adapter, on a port of its own when `gaia2_port` is set.
        self.gaia2 = Gaia2Adapter(self.registry, self.config)
        # Each session's MCP endpoint, on a port of its own when `mcp_port` is set.
        self.mcp = McpPort(self.registry, self.config)
        self.port: int | None = None
        self._scenarios = list(scenarios)
        self._files: dict[str, Path] = {}  # the JSON file of each session started from one
        self._stop: anyio.Event | None = None
        self._closing = False
        self._numbers = 0
        self._runner: asyncio.Task[None] | None = None
        self.suspended = 0  # sessions the shutdown suspended in their journals
        self._no_connections = anyio.Event()  # set whenever the last connection ends
        if ws_base is not None:
            self.registry.ws_base = ws_base

    # -- addresses ---------------------------------------------------------------------------

    @property
    def http_url(self) -> str:
        return f"http://{display_host(self.config.host)}:{self.port}"

    def ws_url(self, session_id: str) -> str:
        return self.registry.ws_url(quote(session_id, safe=""))

    def openenv_url(self, token: str | None = None) -> str:
        """An OpenEnv base URL (`EnvClient(base_url=...)`): a session's token opens that
        session, the admin's (the default) a fresh session per connection."""
        return openenv_base_url(self.http_url, token or self.tokens.admin)

    def dashboard_url(self, token: str | None = None) -> str:
        # The token rides in the fragment, which browsers never send: not in the request line,
        # a Referer or a log. The page moves it out of the address bar (and history) at once.
        return f"{self.http_url}/#token={quote(token or self.tokens.admin, safe='')}"

    # -- running -----------------------------------------------------------------------------

    async def serve(self, *, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
        """Start the sessions, listen, and serve until `shutdown()`; then shut down cleanly."""
        self._stop = anyio.Event()
        async with anyio.create_task_group() as tg:
            self.registry.bind(tg)
            if self.config.state_dir is not None:
                await self._open_state_dir(tg)
            if self.config.judge is not None:
                await self._prepare_judge()
            # ARE discovers its registered scenarios by importing every scenario module (about
            # a second) on the first lookup; /api/scenarios and create_session look them up on
            # the loop, so the discovery happens here, in a worker thread, before serving.
            await anyio.to_thread.run_sync(registered_ids)
            restored: list[str] = []
            if self.registry.journals is not None and not self.restore_at_start:
                self.registry.journals.hold_none()
            elif self.registry.journals is not None:
                restored = await restore_sessions(self.registry)
            for source in self._scenarios:
                if natural_id(source) in restored:
                    # The same command run again after a crash: its session is back already.
                    logger.info("session %s was restored: not starting it again", source)
                    continue
                try:
                    # The operator's own sessions start whatever the memory ceiling says.
                    session = await self.registry.create_async(source, ceiling=False)
                except ProtocolError as exc:
                    raise ServiceError(exc.message) from exc
                self.opened(session, source)
            server: Server | None = None
            if self.listens:
                try:
                    server = await self._listen()
                except (OSError, OverflowError) as exc:
                    raise ServiceError(
                        listen_error(self.config.host, self.config.port, exc)
                    ) from exc
                if self.config.gaia2_port is not None or self.config.gaia2_ports is not None:
                    await self._listen_gaia2(server)
                if self.config.mcp_port is not None:
                    await self._listen_mcp(server, tg)
            stalls = StallSweep(self.connections, self.config.write_timeout)
            background.start(tg, stalls.run, what="the stalled-connection sweep")
            background.start(
                tg, self.http.openenv.held.reap_forever, what="the OpenEnv episode reaper"
            )
            try:
                task_status.started(self)
                await self._stop.wait()
            finally:
                with anyio.CancelScope(shield=True):
                    await self._shutdown(server)
                tg.cancel_scope.cancel()

    async def _open_state_dir(self, tg: anyio.abc.TaskGroup) -> None:
        """Open `--state-dir` (off the loop): its journals, its retention sweep, and the admin
        token it keeps (`durability/state_dir.py`)."""
        journals = Journals(self.config)
        try:
            kept = await journals.open(self.config.admin_token, keep=self.keep_admin_token)
            self.tokens.admin = kept or self.tokens.admin
        except StateDirError as exc:
            raise ServiceError(str(exc)) from exc
        journals.shared = not self.restore_at_start
        self.registry.journals = journals
        background.start(tg, journals.sweep_forever, what="the journal retention sweep")

    async def _prepare_judge(self) -> None:
        """Build the judge's LLM engine once, in a worker thread, before anything is served:
        its imports (litellm: seconds) are paid at start-up rather than by the first session,
        and a judge ARE cannot build stops the start-up with the reason."""
        from areasync.bridge.judge.llm import prepare

        judge = self.config.judge
        assert judge is not None
        try:
            await anyio.to_thread.run_sync(prepare, judge)
        except Exception as exc:
            raise ServiceError(
                f"cannot set up the judge ({judge.describe()}): {type(exc).__name__}: {exc}"
            ) from exc

    async def _listen(self) -> Server:
        config = self.config
        server = await serve(
            self._on_connection,
            config.host,
            config.port,
            process_request=self.http,
            process_response=self.http.after,
            logger=RedactingLogger(logging.getLogger("websockets.server")),  # no token in logs
            compression=None,
            max_size=2 * config.max_frame_bytes,
            max_queue=_MAX_QUEUE,
            write_limit=config.write_limit,
            ping_interval=config.ping_interval,
            # No pong in time is a write stall, closed 4008 by the sweep (stalls.py), not 1011.
            ping_timeout=None,
            close_timeout=config.close_timeout,
            open_timeout=config.handshake_timeout,
            # Counted in the pre-hello pool from accept (admission.py); requests other than GET
            # are screened from their heads (screens.py), then reach process_request, to be
            # answered (OpenEnv's POSTs) or refused 405 (methods.py); every abort is a reset.
            create_connection=connection_class(
                self.admission, screened.screened_connection(self.http.screen)
            ),
            # The kernel's queue of connections not yet accepted (capped by somaxconn): asyncio's
            # default of 100 overflows under a burst of connects, and an overflowing queue drops
            # SYNs, which a client retries only after a second.
            backlog=_BACKLOG,
        )
        self.port = int(server.sockets[0].getsockname()[1])
        self.http.bound(config.host, self.port, display_host(config.host))
        self.registry.ws_base = f"ws://{display_host(config.host)}:{self.port}"
        logger.info("areasync listening on %s", self.http_url)
        return server

    async def _listen_gaia2(self, server: Server) -> None:
        config = self.config
        try:
            await self.gaia2.start(config.host, config.gaia2_port, display_host(config.host))
        except (OSError, OverflowError) as exc:
            server.close()
            port = config.gaia2_port or 0
            raise ServiceError(
                listen_error(config.host, port, exc).replace("--port", "--gaia2-port")
            ) from exc
        if self.gaia2.port is not None:
            logger.info("gaia2-cli adapter listening on %s/gaia2/", self.gaia2.base)

    async def _listen_mcp(self, server: Server, tg: anyio.abc.TaskGroup) -> None:
        config = self.config
        assert config.mcp_port is not None
        try:
            await self.mcp.start(config.host, config.mcp_port, display_host(config.host))
        except (OSError, OverflowError) as exc:
            server.close()
            raise ServiceError(
                listen_error(config.host, config.mcp_port, exc).replace("--port", "--mcp-port")
            ) from exc
        background.start(tg, self.mcp.held.reap_forever, what="the MCP episode reaper")
        logger.info("MCP endpoint listening on %s/mcp/", self.mcp.base)

    def gaia2_url(self, session_id: str, role: Role = Role.USER) -> str:
        """The gaia2-cli adapter's base URL for `session_id` with its `role` token (`role`
        admin: the admin token and the session's id)."""
        if role is Role.ADMIN:
            return self.gaia2.url(self.tokens.admin, session_id)
        return self.gaia2.url(self.tokens.of(session_id)[role])

    async def restore(
        self, session_ids: Sequence[str], abandon: Mapping[str, int] | None = None
    ) -> tuple[list[str], dict[str, str]]:
        """Restore `session_ids` from their journals in the state dir, while serving (a
        cluster's router assigns a lost node's sessions to this server, a front a lost
        worker's; `abandon`: `restore_sessions`'): the ids restored, and why each other one
        was not."""
        journals = self.registry.journals
        if journals is None:
            raise ServiceError("restore needs a state dir (--state-dir)")
        await journals.load(session_ids)
        restored = await restore_sessions(self.registry, set(session_ids), abandon)
        refused = {sid: journals.refused[sid] for sid in session_ids if sid in journals.refused}
        return restored, refused

    def shutdown(self) -> None:
        """Ask the service to shut down (sessions suspended in their journals with a state
        dir, else ended with their traces written; sockets closed 1001)."""
        if self._stop is not None:
            self._stop.set()

    async def _shutdown(self, server: Server | None) -> None:
        self._closing = True
        if server is not None:
            server.close(close_connections=False)  # no new connections from here on
        # Journaled sessions are suspended (resumed by the next start); the others end: their
        # clients get `ended` and their traces are written.
        self.suspended = await self.registry.shutdown(suspend=self.suspend_at_shutdown)
        await self.gaia2.close()
        await self.mcp.close()
        reason = (
            "the server is restarting; reconnect with since"
            if self.suspended
            else "the server is shutting down; reconnect later with since"
        )
        for connection in list(self.connections):
            connection.request_close(CloseCode.GOING_AWAY, reason, flush=True)
        config = self.config
        with anyio.move_on_after(config.close_timeout):
            async with anyio.create_task_group() as tg:
                for ws in list(self.openenv_sockets):
                    tg.start_soon(ws.close, CloseCode.GOING_AWAY, "the server is shutting down")
        with anyio.move_on_after(config.shutdown_grace + config.close_timeout + 1.0):
            if server is not None:
                await server.wait_closed()
                return
            if self.connections:  # handed-over connections: no server of their own
                await self._no_connections.wait()
            return
        for connection in list(self.connections):  # pragma: no cover - a handler that hangs
            sockets.abort(connection.ws)

    async def __aenter__(self) -> Service:
        # The service runs in a task of its own, so that entering and leaving this context may
        # happen in different tasks (pytest fixtures do that) without crossing cancel scopes.
        loop = asyncio.get_running_loop()
        started: asyncio.Future[None] = loop.create_future()

        async def main() -> None:
            try:
                await self.serve(task_status=_Started(started))
            except BaseException as exc:
                if not started.done():
                    started.set_exception(exc)
                    return
                raise

        self._runner = loop.create_task(main(), name="areasync service")
        try:
            await started
        except BaseException:
            await asyncio.gather(self._runner, return_exceptions=True)
            raise
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.shutdown()
        if self._runner is not None:
            await self._runner

    # -- connections -------------------------------------------------------------------------

    async def _on_connection(self, ws: ServerConnection) -> None:
        if self._closing:
            await ws.close(CloseCode.GOING_AWAY, "the server is shutting down; retry later")
            return
        request = ws.request
        path = urlsplit(request.path if request is not None else "/").path
        authorization = None if request is None else request.headers.get("Authorization")
        openenv = openenv_locate(path, authorization)
        if openenv is not None:
            await self._on_openenv(ws, openenv[0])
            return
        await self._serve_client(ws, session_id_of(path) or "")

    async def serve_handed(self, ws: ServerConnection, handoff: Handoff) -> None:
        """Serve a connection the front handed over (`handoff.py`): its hello was read and its
        token checked there, so it starts from that hello (which holds no token)."""
        if self._closing:
            await ws.close(CloseCode.GOING_AWAY, "the server is shutting down; retry later")
            return
        if handoff.openenv:
            credential = Credential(None, handoff.role, handoff.session_id or None)
            await self._serve_openenv(ws, credential, admission=None)
            return
        hello = handoff.hello.decode() if handoff.text else handoff.hello
        await self._serve_client(ws, handoff.session_id, hello)

    async def _serve_client(
        self, ws: ServerConnection, session_id: str, hello: str | bytes | None = None
    ) -> None:
        self._numbers += 1
        admission = self.admission if hello is None else None  # the front's pool counted it
        connection = Connection(
            ws, self.registry, session_id, self._numbers, admission=admission, hello=hello
        )
        self.connections[connection] = None
        self._no_connections = anyio.Event()
        self.metrics.connections_opened += 1
        try:
            await connection.run()
        finally:
            self.connections.pop(connection, None)
            if not self.connections:
                self._no_connections.set()

    async def _on_openenv(self, ws: ServerConnection, token: str) -> None:
        credential = self.http.openenv.credential(token)
        if credential is None:  # checked before the upgrade; a token revoked since
            await ws.close(CloseCode.UNAUTHORIZED, "the token is not valid")
            return
        await self._serve_openenv(ws, credential, self.admission)

    async def _serve_openenv(
        self, ws: ServerConnection, credential: Credential, admission: Admission | None
    ) -> None:
        self.openenv_sockets[ws] = None
        self.metrics.connections_opened += 1
        try:
            await serve_openenv(ws, self.registry, credential, admission)
        finally:
            self.openenv_sockets.pop(ws, None)

    # -- start-up banner ---------------------------------------------------------------------

    def banner(self) -> str:
        """What `areasync serve` prints: URLs and tokens, as Jupyter does."""
        config = self.config
        lines = [
            f"areasync serving on {self.http_url} (WebSocket protocol areasync/1)",
            "",
            f"  dashboard:   {self.dashboard_url()}",
            f"  OpenEnv:     {self.openenv_url()}  (a fresh session per connection)",
            f"  admin token: {self.tokens.admin}  (every role of every session; "
            "fix it with --token or AREASYNC_TOKEN)",
            "",
        ]
        lines += self.judge_lines()
        ended = 0
        for session in self.registry.sessions.values():
            if session.ended:  # kept for replay (rebuilt by a restart): no URL to hand out
                ended += 1
            else:
                lines += self._session_banner(session)
        if config.state_dir is not None:
            lines.append(
                f"journals: {config.state_dir.resolve()} (durability {config.durability}; "
                f"ended sessions' journals kept {config.retention:g} s)"
            )
            if ended:
                lines.append(f"  {ended} ended session(s) kept for replay (GET /api/sessions)")
            journals = self.registry.journals
            for session_id, why in ({} if journals is None else journals.refused).items():
                lines.append(f"  not restored: {session_id}: {why}")
        traces = "not written" if config.trace_dir is None else str(config.trace_dir.resolve())
        lines.append(f"traces: {traces}")
        if config.state_dir is not None:
            lines.append(
                "Ctrl-C stops the server: live sessions are suspended in their journals and "
                "resume at the next start with this --state-dir."
            )
        else:
            lines.append("Ctrl-C stops the server: sessions end and their traces are written.")
        return "\n".join(lines)

    def opened(self, session: Session, source: Loadable) -> None:
        """The operator's `source` (a `--scenario`) became `session`: a JSON file's path is
        kept, for the oracle command the banner prints."""
        if is_file(source):
            self._files[session.id] = Path(str(source))

    def judge_lines(self) -> list[str]:
        """The banner's lines on the judge (none without one)."""
        judge = self.config.judge
        if judge is None:
            return []
        return [
            f"  judge:       {judge.describe()}: Gaia2 JSON imported the benchmark "
            "way is preprocessed and judged as by are-benchmark run",
            "",
        ]

    def summary(self, session: Session) -> str:
        """The banner's words on how `session` runs: its scenario, clock mode, import..."""
        clock = session.sim.clock_state(peek=True)
        how = f"{clock.mode}" + (f" x{clock.speed:g}" if clock.mode == "realtime" else "")
        extra = ", oracle" if session.oracle else ""
        extra += f", {session.import_mode} import" if session.import_mode else ""
        extra += ", judged" if session.judge else ""
        extra += ", waiting for an agent" if session.waiting_for_agent else ""
        extra += ", restored from its journal" if session.sim.restored else ""
        return f"scenario {session.scenario_id}, {how}{extra}"

    def waiting_lines(self, session: Session) -> list[str]:
        """The banner's lines for a session waiting for its agent: the command that plays
        its oracle (none once it is not waiting)."""
        if not session.waiting_for_agent:
            return []
        return [
            "  waiting for an agent (time stands still until one connects):",
            f"    {self._oracle_command(session)}",
            "    (or your own agent, or an OpenEnv client; or press Start on the dashboard)",
        ]

    def _oracle_command(self, session: Session) -> str:
        """The command that plays `session`'s oracle, as printed: a session of a JSON file
        names its file (the oracle plans from it) and how it was imported."""
        words = ["areasync", "agent", "oracle", "--url", self.ws_url(session.id)]
        words += ["--token", session.tokens[Role.AGENT]]
        path = self._files.get(session.id)
        if path is not None:
            words += ["--scenario", str(path.resolve())]
            if session.import_mode is not None:
                words += ["--import-mode", session.import_mode]
        return shlex.join(words)

    def _session_banner(self, session: Session) -> list[str]:
        """The banner's lines for one session: its URLs and tokens."""
        lines = [f"session {session.id}  ({self.summary(session)})"]
        lines.append(f"  {self.ws_url(session.id)}")
        if not session.tokens:  # restored: its tokens were printed by the run that made it
            return [*lines, "  its tokens are those it had before the restart", ""]
        for role in (Role.AGENT, Role.USER, Role.OBSERVER, Role.CONTROLLER):
            lines.append(f"  {role.value:<11} {session.tokens[role]}")
        # OpenEnv's client takes only a base URL: the agent's token rides in its path.
        lines.append(f"  OpenEnv     {self.openenv_url(session.tokens[Role.AGENT])}")
        if self.gaia2.port is not None:
            lines.append(f"  gaia2-cli   {self.gaia2_url(session.id)}  (the user's token)")
        lines += [f"  gaia2-cli   {line}" for line in banner_lines(session.links)]
        if self.mcp.port is not None:
            lines.append(
                f"  MCP         {self.mcp.url(session.id)}  (Authorization: Bearer <agent token>)"
            )
        return [*lines, *self.waiting_lines(session), ""]
