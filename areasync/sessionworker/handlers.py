"""A session worker's handlers: what the front calls over the pool's channel.

`serving(side)` is the pool's `serve` (`workers/worker.py`): it yields the handlers, and the
first call, `start`, runs the worker's `Service` on the worker's event loop and starts taking
hand-offs from `side` (the front's side channel: one packet and one socket per connection,
`service/connection/handoff.py`). Each handler answers plain data (lists, dicts, msgspec structs),
so nothing of ARE crosses the channel.

* `beat()`: answered at once by the event loop with how many of its sessions ended because
  their journal failed (what the front's `/health` counts): the front's supervisor sends one
  every interval, and kills a worker whose loop has not answered within its budget
  (`front/supervisor.py`).
* `create(request)`, `restore(ids)`: sessions made here; each answers the `Seat` of what it
  made (its id and the credentials the front checks hellos with: the tokens, or a restored
  session's salted hashes).
* `gaia2_port(id, port)`: the session's gaia2-cli port (`--gaia2-ports`), bound by the front,
  whose connections it hands here like WebSockets (`Handoff.gaia2_port`).
* `banner(ids)`: the banner's words on these sessions and on the judge, which the front
  prints as a server prints its own.
* `seats()`, `live_journals()`, `sessions(role, id)`, `admin_get(path)`, `load()`: what the
  front reads to place sessions, merge `/api/sessions` and answer the dashboard.
* `stop_session(id)`, `fork_session(id, at_seq, at_time)`: an admin's controls, which the
  front carries out for the admin wherever the session is (`front/admin.py`); a refusal comes
  back as plain data, as `create`'s. Nothing in a worker calls the front: the channel carries
  the front's calls and their answers only.
* `metrics()`: this worker's `/metrics` text, which the front merges (`front/metrics.py`).
* `openenv_http(method, route, token, body)`: OpenEnv's HTTP routes for a token the front
  checked (a session's; None for the admin's, which it never passes on).
* `stop()`: shut the service down (live sessions suspended in their journals).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from collections.abc import Awaitable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import msgspec
from websockets.datastructures import Headers
from websockets.http11 import Response

from areasync.bridge.sandbox.paths import own_are_sandboxes
from areasync.protocol.errors import ProtocolError
from areasync.protocol.frames import Role
from areasync.service import Service, ServiceConfig
from areasync.service.adapters.openenv.credential import Credential
from areasync.service.adapters.openenv.routes import unknown_route
from areasync.service.connection.handoff import adopt, adopting_server, handoff_of, receive
from areasync.service.connection.requests import (
    create_from_fields,
    created_result,
    refused_as_plain_data,
    stop_session,
)
from areasync.service.gate.memory import resident_bytes
from areasync.service.gate.screened import PostRequest
from areasync.service.http.answers import error_response
from areasync.service.starting import display_host
from areasync.sessionworker.answers import Banner, Described, Seat
from areasync.sessionworker.busy import BUSY_DIR, Busy
from areasync.workers.worker import Handler

__all__ = ["SessionWorker", "serving"]

logger = logging.getLogger("areasync.sessionworker")


class SessionWorker:
    """One worker's service and its hand-offs (module docstring)."""

    def __init__(self, side: socket.socket) -> None:
        self.side = side
        self.service: Service | None = None
        self.handed = 0  # connections handed over to this worker

    # -- life ---------------------------------------------------------------------------------

    async def start(
        self,
        config: ServiceConfig,
        ws_base: str,
        gaia2_ports: bool = False,
        mcp_port: int | None = None,
        gaia2_port: int | None = None,
    ) -> int:
        """Start the service (no port, no admin token of the front's) and take hand-offs
        (`gaia2_ports`: connections of the sessions' gaia2-cli ports too; `mcp_port`: of the
        front's MCP port, on `config.host`; `gaia2_port`: of the front's shared gaia2-cli
        port, on `config.host`); the process id."""
        if self.service is not None:
            return os.getpid()
        assert config.state_dir is not None
        service = Service(
            config,
            scenarios=(),
            restore_at_start=False,
            listen=False,
            ws_base=ws_base,
            keep_admin_token=False,
        )
        service.registry.calls = Busy(config.state_dir / BUSY_DIR / str(os.getpid()))
        await service.__aenter__()
        if gaia2_ports or gaia2_port is not None:
            await service.gaia2.serve_handed(gaia2_port, display_host(config.host))
        if mcp_port is not None:
            await service.mcp.serve_handed(config.host, mcp_port, display_host(config.host))
        self.service = service
        server = adopting_server(self._serve, logging.getLogger("websockets.server"))
        loop = asyncio.get_running_loop()
        self.side.setblocking(False)
        loop.add_reader(self.side.fileno(), self._take, server)
        return os.getpid()

    def _take(self, server: Any) -> None:
        """The side channel is readable: adopt every socket waiting there."""
        config = self._service().config
        while True:
            try:
                taken = receive(self.side)
            except EOFError:
                asyncio.get_running_loop().remove_reader(self.side.fileno())
                return
            if taken is None:
                return
            handoff, sock = taken
            self.handed += 1
            served: Awaitable[Any] | None = None  # HTTP, for an adapter
            if handoff.gaia2_port is not None:
                served = self._service().gaia2.adopt(sock, handoff.session_id, handoff.gaia2_port)
            elif handoff.gaia2_shared:
                gaia2 = self._service().gaia2
                served = gaia2.adopt_shared(sock, handoff.session_id, handoff.role)
            elif handoff.mcp is not None:
                served = self._service().mcp.adopt(sock, handoff.session_id, handoff.mcp)
            if served is not None:
                asyncio.ensure_future(served).add_done_callback(_report_failure)
                continue
            adopting = adopt(
                server,
                sock,
                handoff,
                max_size=2 * config.max_frame_bytes,
                max_queue=4,
                write_limit=config.write_limit,
                ping_interval=config.ping_interval,
                close_timeout=config.close_timeout,
            )
            task = asyncio.ensure_future(adopting)
            task.add_done_callback(_report_failure)

    async def _serve(self, ws: Any) -> None:
        await self._service().serve_handed(ws, handoff_of(ws))

    def _service(self) -> Service:
        if self.service is None:
            raise RuntimeError("the session worker has not been started: call start first")
        return self.service

    # -- handlers -----------------------------------------------------------------------------

    async def beat(self) -> int:
        """How many of this worker's sessions ended because their journal failed."""
        return sum(1 for s in self._service().registry.sessions.values() if s.journal_error)

    async def create(self, request: dict[str, Any]) -> dict[str, Any]:
        """`create_session` as the admin's frame does it; a refusal as
        `{"error": {"code", "message"}}`."""
        return await create_from_fields(request, self._service().registry)

    async def open_scenario(self, source: str) -> dict[str, Any]:
        """A session of the operator's `--scenario` (a registered id or a JSON file's path),
        made as a server makes its own at start-up: the configuration's mode, speed and
        oracle, whatever the memory ceiling says. A refusal as `create`'s."""
        registry = self._service().registry
        try:
            session = await registry.create_async(source, ceiling=False)  # reads the ids taken
        except ProtocolError as exc:
            return refused_as_plain_data(exc)
        self._service().opened(session, source)
        return msgspec.to_builtins(created_result(session, registry))

    async def stop_session(self, session_id: str) -> dict[str, Any]:
        """An admin's `stop_session` of a session here: its end state, or a refusal as
        `create`'s."""
        try:
            return msgspec.to_builtins(await stop_session(session_id, self._service().registry))
        except ProtocolError as exc:
            return refused_as_plain_data(exc)

    async def fork_session(
        self, session_id: str, at_seq: int | None, at_time: float | None
    ) -> dict[str, Any]:
        """An admin's `fork_session` of a session here, the fork made here too, its id free
        of those the other workers gave (read from the journals first): `create`'s answer."""
        registry = self._service().registry
        try:
            if registry.journals is not None:
                await registry.journals.refresh_taken()
            forked = await registry.fork(session_id, at_seq=at_seq, at_time=at_time)
        except ProtocolError as exc:
            return refused_as_plain_data(exc)
        return msgspec.to_builtins(created_result(forked, registry))

    async def openenv_http(
        self, method: str, route: str, token: str | None, body: bytes
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        """OpenEnv's HTTP `route` (`service/adapters/openenv/routes.py`), its URL's token checked by
        the front: a session's token (whose HTTP episode it names), or None for the admin's
        (which the worker never sees: a fresh session's routes). (status, headers, body)."""
        openenv = self._service().http.openenv
        credential = Credential(None, Role.ADMIN, None) if token is None else None
        if token is not None:
            credential = openenv.credential(token)
        response: Response | Awaitable[Response] | None
        response = unknown_route(route, error_response)
        if response is None and credential is None:  # revoked since the front checked it
            response = error_response(401, "unauthorized", "the token is not valid")
        if response is None:
            assert credential is not None
            request = PostRequest(route, Headers(), method=method, body=body)
            response = openenv.serve(request, route, credential, error_response)
        if response is not None and not isinstance(response, Response):
            response = await response
        assert response is not None  # no WebSocket upgrade comes this way
        return response.status_code, list(response.headers.raw_items()), bytes(response.body)

    async def metrics(self) -> str:
        """This worker's `/metrics` (Prometheus text)."""
        return self._service().http.metrics_text()

    async def restore(
        self, session_ids: list[str], abandon: dict[str, int] | None = None
    ) -> tuple[list[Seat], dict[str, str]]:
        """Restore these sessions from their journals (`abandon`: `Service.restore`'s): their
        seats, and why each other one was not."""
        service = self._service()
        restored, refused = await service.restore(session_ids, abandon)
        return [self._seat(sid) for sid in restored], refused

    async def gaia2_port(self, session_id: str, port: int) -> bool:
        """`session_id` is served at the front's gaia2-cli `port`: its URL in its links, the
        port's screens; False if it is not here."""
        return self._service().gaia2.hold(session_id, port)

    async def seats(self) -> list[Seat]:
        return [self._seat(sid) for sid in self._service().registry.sessions]

    def _seat(self, session_id: str) -> Seat:
        service = self._service()
        session = service.registry.sessions.get(session_id)
        live = session is not None and not session.ended
        return Seat(session_id, live, service.tokens.credentials(session_id))

    async def banner(self, session_ids: list[str]) -> Banner:
        """The banner's words on these sessions (those held here, live) and on the judge:
        the front prints them as a server prints its own (`front/cli.py`)."""
        service = self._service()
        described = {}
        for session_id in session_ids:
            session = service.registry.sessions.get(session_id)
            if session is not None and not session.ended:
                described[session_id] = Described(
                    service.summary(session), service.waiting_lines(session)
                )
        return Banner(service.judge_lines(), described)

    async def live_journals(self) -> list[str]:
        journals = self._service().registry.journals
        return [] if journals is None else await journals.live_ids()

    async def sessions(self, role: str, session_id: str | None) -> dict[str, Any]:
        """`/api/sessions` as `role` (of `session_id`) sees it here."""
        return msgspec.to_builtins(self._service().http.sessions(Role(role), session_id))

    async def admin_get(self, path: str) -> tuple[int, bytes]:
        """(status, JSON body) of GET `path` as the admin."""
        service = self._service()
        response = service.http.answer_for(path, service.tokens.admin)
        return response.status_code, bytes(response.body)

    async def load(self) -> tuple[int, int]:
        """(live sessions, resident bytes) of this worker."""
        return len(self._service().registry.live()), resident_bytes() or 0

    async def stop(self, suspend: bool = True) -> int:
        """Shut the service down: live sessions suspended in their journals (`suspend`), else
        stopped with their traces written; how many were suspended."""
        service = self.service
        self.service = None
        if service is None:
            return 0
        service.suspend_at_shutdown = suspend
        with contextlib.suppress(OSError, ValueError):
            asyncio.get_running_loop().remove_reader(self.side.fileno())
        await service.__aexit__(None, None, None)
        return service.suspended

    def handlers(self) -> Mapping[str, Handler]:
        return {
            "start": self.start,
            "beat": self.beat,
            "create": self.create,
            "open_scenario": self.open_scenario,
            "restore": self.restore,
            "seats": self.seats,
            "banner": self.banner,
            "gaia2_port": self.gaia2_port,
            "live_journals": self.live_journals,
            "sessions": self.sessions,
            "admin_get": self.admin_get,
            "load": self.load,
            "stop_session": self.stop_session,
            "fork_session": self.fork_session,
            "metrics": self.metrics,
            "openenv_http": self.openenv_http,
            "stop": self.stop,
        }


def _report_failure(task: asyncio.Future[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        logger.error("a handed-over socket could not be adopted: %r", task.exception())


@contextmanager
def serving(side: socket.socket) -> Iterator[Mapping[str, Handler]]:
    """The pool's `serve` for session workers (module docstring), ARE's file-system sandboxes
    made in the worker's own temp dir (the one its confinement lets it write: `confine.py`)."""
    with own_are_sandboxes():
        yield SessionWorker(side).handlers()
