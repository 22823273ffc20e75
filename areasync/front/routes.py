"""What the front answers over HTTP, and which WebSocket handshakes it lets through.

The front is a websockets server whose `process_request` answers every plain HTTP request
here, from the front's own state or by asking the session workers over the pool's channel:

==========================  =======  ============================================================
path                        token    answer
==========================  =======  ============================================================
/sessions/<id> (WebSocket)  (hello)  the upgrade; the hello is read and judged by the front, then
                                     the socket goes to the session's worker (`server.py`)
/health                     no       200 {"status": "ok" | "degraded", "workers", "restoring",
                                     "lost", "journal": {"failed_sessions", "refused_journals"}}
                                     (failed: as the workers' last heartbeats said); 503
                                     {"status": "starting", ...} until the
                                     start-up sessions are placed (a hello sent then would
                                     find no session)
/api/sessions               yes      200 the admin's: every worker's list, merged, each session
                                     with its `worker`; a session token's: its worker's answer
                                     for it
POST /api/sessions          admin    201 a session created on the least loaded worker, from a JSON
                                     body of `create_session`'s fields (screened as a server's)
/api/scenarios, /api/schema admin    a worker's answer
/api/sessions/<id>/source   admin    the session's worker's answer (the fields that restart it)
/api/sessions/<id>/agent    admin    the session's worker's answer (its agent token and URL)
/metrics                    admin    200 every worker's, merged: each sample summed, and
                                     `areasync_front_worker_up{worker}` (`metrics.py`)
/openenv/<token>/ws         (path)   the upgrade, the socket handed to the session's worker (an
                                     admin's token: the least loaded, fresh sessions there)
/openenv/<token>/<route>    (path)   OpenEnv's HTTP routes (reset, step, state, schema, mcp...):
                                     the answer of the worker holding the token's session (the
                                     admin's token: any worker's, which is not given the token)
/ , the dashboard's files   no       the dashboard (its WebSockets open on this port)
==========================  =======  ============================================================

Its own answers (the merged listing, a created session, /health) are the Structs of
`protocol/merged.py`; a worker's answer comes as plain data and is decoded on arrival.

An admin's WebSocket (hello role `admin`) is not handed over but relayed, its
`create_session`, `stop_session` and `fork_session` carried out by the front (`admin.py`).

Every request passes the screens a server's port applies (`service/gate/screens.py`), methods
(`service/gate/methods.py`) and the security headers (`service/http/headers.py`), as on a server.
"""

from __future__ import annotations

import hmac
from http import HTTPStatus
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

import msgspec
from websockets.datastructures import Headers
from websockets.http11 import Request, Response

from areasync.front.metrics import merge
from areasync.protocol.errors import ErrorCode, ProtocolError
from areasync.protocol.frames import PROTOCOL, Role
from areasync.protocol.merged import (
    FrontHealth,
    FrontListing,
    JournalHealth,
    ListedWorker,
    PlacedSession,
)
from areasync.protocol.sessions import (
    ListedSession,
    ListingAccess,
    SessionListing,
)
from areasync.service.adapters.openenv.paths import PREFIX as OPENENV_PREFIX
from areasync.service.adapters.openenv.paths import locate as locate_openenv
from areasync.service.gate.auth import token_from_http
from areasync.service.gate.origin import show_host
from areasync.service.gate.screened import PostRequest, RefusedRequest
from areasync.service.gate.screens import BodyRule, Head, PortScreen
from areasync.service.http.answers import (
    AGENT_SUFFIX,
    CREATE_NEEDS_ADMIN,
    SESSIONS_PREFIX,
    Dashboard,
    create_body_rule,
    create_fields,
    create_refused,
    error_response,
    head_of,
    json_response,
    method_refused,
    metrics_response,
    protected_refusal,
    refusal_response,
    secure,
    source_session_of,
    token_required,
    upgrade_required,
    without_body,
)
from areasync.workers.pool import CallFailed, WorkerLost

if TYPE_CHECKING:
    from areasync.front.supervisor import Supervisor
    from areasync.service.config import ServiceConfig
    from areasync.service.gate.auth import Tokens
    from areasync.workers.pool import Worker, WorkerPool


class FrontView(Protocol):
    """What the routes read of the front (`server.Front`)."""

    config: ServiceConfig
    tokens: Tokens
    pool: WorkerPool
    restoring: set[str]
    serving: bool  # the start-up sessions are placed
    refused: dict[str, str]
    lost: list[str]
    supervisor: Supervisor  # its `failed`: what the workers' last beats said

    def up(self) -> list[Worker]: ...

    async def locate(self, session_id: str) -> Worker | None: ...

    async def call(self, worker: Worker, method: str, *args: Any) -> Any: ...

    async def create_session(self, **request: Any) -> PlacedSession: ...


__all__ = ["FrontRoutes"]

_PASSED_ON = frozenset({"/api/scenarios", "/api/schema"})
_WHOSE = "the admin token, or a token of that session"


def _no_worker(session_id: str | None) -> Response:
    """No worker holds `session_id` (None: no worker is up, for a request any may answer)."""
    if session_id is not None:
        return error_response(
            404,
            ErrorCode.SESSION_NOT_FOUND,
            f"no worker holds session {session_id!r}: GET /api/sessions lists them",
        )
    return error_response(503, ErrorCode.CAPACITY, "no session worker is up yet; retry later")


def _unauthorized(what: str) -> Response:
    return refusal_response(token_required(what, _WHOSE))


class FrontRoutes:
    """The front's `process_request` (module docstring)."""

    def __init__(self, front: FrontView) -> None:
        self.front = front
        self.dashboard = Dashboard()
        config = front.config
        self.screen = PortScreen.of(self.body_rule, config)
        self._own_host = ""

    def bound(self, host: str, port: int, display: str) -> None:
        self.screen.bind(host, port)
        self._own_host = show_host(display.strip("[]"), port)

    def body_rule(self, head: Head) -> BodyRule | None:
        """The routes with a body: `POST /api/sessions`, from the admin token, and OpenEnv's
        POSTs, from a token that opens something (as a server's, `openenv/routes.py`)."""
        limit = self.front.config.max_frame_bytes
        parts = locate_openenv(head.path, head.first("Authorization"))
        if head.method == "POST" and parts is not None:
            valid = self.front.tokens.identify(parts[0]) is not None if parts[0] else False
            refused = None if valid else token_required("an OpenEnv POST", _WHOSE)
            return BodyRule(limit, "max_frame_bytes", key=parts[0], refused=refused)
        admin = self._is_admin(token_from_http(head.query, head.first("Authorization")))
        return create_body_rule(head, admin, limit, _WHOSE)

    async def __call__(self, connection: Any, request: Request) -> Response | None:
        response = await self._answer(request)
        if response is not None and request.method == "HEAD":
            return without_body(response)
        return response

    def after(self, connection: Any, request: Request, response: Response) -> None:
        if response.status_code != 101:
            secure(response)

    async def _answer(self, request: Request) -> Response | None:
        if isinstance(request, RefusedRequest):
            return refusal_response(request.refusal)
        refused = self.screen.check_site(head_of(request))
        if refused is not None:
            return refusal_response(refused)
        refused_method = method_refused(request, "this server")
        if refused_method is not None:
            return refused_method
        url = urlsplit(request.path)
        path = url.path
        token = token_from_http(url.query, request.headers.get("Authorization"))
        if path.startswith(OPENENV_PREFIX):
            return await self.openenv(request, path)
        if isinstance(request, PostRequest):
            return await self.create(request.body, token)
        if path.startswith(SESSIONS_PREFIX):
            if request.method == "HEAD":
                return upgrade_required(path)
            return None  # the upgrade goes on; the front reads the hello
        if request.headers.get("Upgrade", "").lower() == "websocket":
            return error_response(
                404, "not_found", f"no WebSocket endpoint at {path!r}: connect to /sessions/<id>"
            )
        if path == "/health":
            health = self.health()
            return json_response(503 if health.status == "starting" else 200, health)
        if path == "/api/sessions":
            return await self.sessions(token)
        restarted = source_session_of(path) or source_session_of(path, AGENT_SUFFIX)
        if path == "/metrics" or restarted is not None or path in _PASSED_ON:
            # A server's own rule: 401 without a valid token, 403 for a session's where the
            # route is the admin's.
            forbidden = protected_refusal(path, token, self.front.tokens.identify(token))
            if forbidden is not None:
                return forbidden
            if path == "/metrics":
                return await self.metrics()
            return await self.passed_on(path, restarted)
        return self.dashboard.answer(path, [self._socket_host(request)])

    async def openenv(self, request: Request, path: str) -> Response | None:
        """OpenEnv's routes under a token that opens something: `/ws` upgrades (the socket
        then goes to a worker, `server.py`); an HTTP route is the worker's answer (the one
        holding the token's session; any worker for the admin's, whose token it is not
        given: its fresh sessions have no HTTP episode)."""
        parts = locate_openenv(path, request.headers.get("Authorization"))
        assert parts is not None
        token, route = parts
        front = self.front
        who = front.tokens.identify(token) if token else None
        if who is None:
            return error_response(
                401,
                ErrorCode.UNAUTHORIZED,
                "the token in this OpenEnv URL opens nothing here; use the base URL printed "
                "for a session (or the admin's)",
            )
        if route == "/ws" and request.headers.get("Upgrade", "").lower() == "websocket":
            return None
        session_id = who[1]
        worker = await front.locate(session_id) if session_id is not None else None
        if worker is None and session_id is None and front.up():
            worker = front.up()[0]
        if worker is None:
            return _no_worker(session_id)
        passed = None if session_id is None else token  # never the admin's
        body = request.body if isinstance(request, PostRequest) else b""
        try:
            status, headers, answer = await front.call(
                worker, "openenv_http", request.method, route, passed, body
            )
        except (WorkerLost, CallFailed) as exc:
            return error_response(
                503,
                ErrorCode.CAPACITY,
                f"the session's worker failed ({exc}); retry in a second",
                {"Retry-After": "1"},
            )
        return Response(status, HTTPStatus(status).phrase, Headers(headers), answer)

    def _socket_host(self, request: Request) -> str:
        hosts = request.headers.get_all("Host")
        return hosts[0].strip().lower() if len(hosts) == 1 else self._own_host

    def health(self) -> FrontHealth:
        front = self.front
        up = len(front.up())
        failed = sum(front.supervisor.failed.values())
        degraded = (
            up < len(front.pool.workers)
            or bool(front.restoring)
            or bool(front.refused)
            or failed > 0
        )
        return FrontHealth(
            status="starting" if not front.serving else "degraded" if degraded else "ok",
            protocol=PROTOCOL,
            workers=up,
            restoring=len(front.restoring),
            lost=len(front.lost),
            # A server's fields: sessions ended by a failed journal (as the workers' last beats
            # said, `supervisor.py`), and journals no worker holds for not reading back.
            journal=JournalHealth(failed_sessions=failed, refused_journals=len(front.refused)),
        )

    async def sessions(self, token: str | None) -> Response:
        front = self.front
        who = front.tokens.identify(token) if token else None
        if who is None:
            unknown = protected_refusal("/api/sessions", token, None)
            assert unknown is not None
            return unknown
        role, session_id = who
        if role is not Role.ADMIN:
            assert session_id is not None
            worker = await front.locate(session_id)
            if worker is None:
                return _unauthorized("/api/sessions")
            view = await front.call(worker, "sessions", role.value, session_id)
            return json_response(200, view)
        return json_response(200, await self.admin_sessions())

    async def admin_sessions(self) -> FrontListing:
        """`/api/sessions` as the admin sees it: every worker's list, merged (a cluster's
        node answers its router with it). A worker's answer comes as plain data, decoded here."""
        front = self.front
        shown: list[ListedSession] = []
        refused = dict(front.refused)
        for worker in front.up():
            try:
                answer = await front.call(worker, "sessions", Role.ADMIN.value, None)
            except (WorkerLost, CallFailed):
                continue
            listing = msgspec.convert(answer, SessionListing)
            shown += [msgspec.structs.replace(s, worker=worker.name) for s in listing.sessions]
            refused.update(listing.refused_journals or {})
        return FrontListing(
            protocol=PROTOCOL,
            access=ListingAccess("admin", None),
            sessions=shown,
            restoring=sorted(front.restoring),
            refused_journals=refused,
            workers=[
                ListedWorker(w.name, w.pid, w.restarts, list(w.starts)) for w in front.pool.workers
            ],
        )

    async def metrics(self) -> Response:
        """Every worker's `/metrics`, merged (`metrics.py`)."""
        front = self.front
        texts: list[str] = []
        up = {worker.name: False for worker in front.pool.workers}
        for worker in front.up():
            try:
                texts.append(await front.call(worker, "metrics"))
            except (WorkerLost, CallFailed):
                continue
            up[worker.name] = True
        return metrics_response(merge(texts, up))

    async def create(self, body: bytes, token: str | None) -> Response:
        if not self._is_admin(token):
            return _unauthorized(CREATE_NEEDS_ADMIN)
        fields = create_fields(body)
        if isinstance(fields, Response):
            return fields
        try:
            created = await self.front.create_session(**fields)
        except ProtocolError as exc:
            return create_refused(exc)
        except (WorkerLost, CallFailed) as exc:
            return error_response(
                503,
                ErrorCode.CAPACITY,
                f"the worker chosen for the session failed ({exc}); retry: GET /api/sessions "
                "shows whether it was created meanwhile",
                {"Retry-After": "1"},
            )
        return json_response(201, created)

    async def passed_on(self, path: str, session_id: str | None) -> Response:
        front = self.front
        worker = await front.locate(session_id) if session_id is not None else None
        if worker is None and session_id is None and front.up():
            worker = front.up()[0]
        if worker is None:
            return _no_worker(session_id)
        status, body = await front.call(worker, "admin_get", path)
        return json_response(status, msgspec.json.decode(body))

    def _is_admin(self, token: str | None) -> bool:
        admin = self.front.tokens.admin
        return bool(token) and hmac.compare_digest(str(token).encode(), admin.encode())
