"""Plain HTTP GET on the WebSocket port: health, sessions, schema, metrics and the dashboard.

websockets hands every request to `process_request` before its WebSocket handshake; returning a
`Response` answers it as plain HTTP, returning None lets the handshake go on. So one port serves
both, with no web framework:

==================  =======  ===================================================================
path                token    answer
==================  =======  ===================================================================
/health             no       200 {"status": "ok", "protocol": "areasync/1"}; with --state-dir also
                             "journal": {"failed_sessions": N, "refused_journals": M}, and
                             status "degraded" if N or M > 0 (M: journals not restored)
/api/sessions       yes      200 {"access": {...}, "sessions": [...]}: every session for the
                             admin token, only its own session for a session token; with
                             --state-dir the admin also gets "refused_journals": {id: why}
/api/schema         yes      200 the protocol's JSON Schema
/metrics            admin    200 Prometheus text format (server-wide counters: the admin token
                             only; a session token gets 403)
/api/scenarios      admin    200 {"scenarios": [registered ids], "max_scenario_bytes": N}: what
                             the dashboard's "New session" offers (create_session is admin-only)
/api/sessions/<id>  admin    200 the `create_session` fields that make session <id> again (its
 /source                     registered id or JSON text, mode, speed, oracle, import mode): the
                             dashboard's "Restart"; 404 saying why when it kept none
/ , /index.html     no       200 the dashboard page (a placeholder if it is not installed): static,
                             no data; it reads its token from the URL's `#token=` (or `?token=`)
                             and sends it only in headers and in the WebSocket hello
/<asset>            no       200 a dashboard file (JS, CSS): static code, no data
/openenv/<token>/   (path)   OpenEnv's routes (`openenv/routes.py`): /ws, /health, /schema,
 ...                         /metadata, /state; the token is the URL's, for OpenEnv's client
/sessions/<id>      (hello)  the WebSocket endpoint (503 when the server is at max_connections);
                             which sessions exist is told only to a hello with a valid token
==================  =======  ===================================================================

A token is `Authorization: Bearer <token>` or `?token=<token>`; any token the server minted
(admin or a session role) opens the token-protected paths, except that a session token only
ever sees its own session. A missing or wrong token gets 401 with a JSON error body, the same
whatever the query names.

Before any route, every request passes the port's screens (`screens.py`, once per request or
handshake, never per frame): its Host header (DNS rebinding: 421) and its Origin header (pages
of other sites: 403), see `origin.py`; a request for a route with a body (OpenEnv's POSTs) is
judged by its head - its token (401), its length (411, 413), the bodies in flight (429, 503) -
before a byte of its body is read (`wire.py`); then its method (GET and HEAD, OpenEnv's POSTs;
anything else gets 405 with `Allow: GET, HEAD`, see `methods.py` for requests websockets'
parser would drop). HEAD is answered as GET without the body. Every response carries the
security headers of `headers.py`.
"""

from __future__ import annotations

import email.utils
from collections.abc import Awaitable, Callable
from http import HTTPStatus
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import msgspec
from websockets.datastructures import Headers
from websockets.http11 import Request, Response

from areasync.bridge.scenarios import registered_ids
from areasync.protocol.errors import ErrorCode, ProtocolError
from areasync.protocol.frames import PROTOCOL, CreateSession, Role
from areasync.protocol.schema import render_schema
from areasync.service.auth import token_from_http
from areasync.service.headers import API_CSP, BASE_HEADERS, dashboard_csp
from areasync.service.methods import ALLOW, ALLOWED_METHODS
from areasync.service.openenv.routes import PREFIX as OPENENV_PREFIX
from areasync.service.openenv.routes import OpenEnvRoutes
from areasync.service.origin import show_host
from areasync.service.registry import SessionRegistry
from areasync.service.screens import BodyRule, Head, PortScreen, Refusal
from areasync.service.wire import PostRequest, RefusedRequest, admit_messages

SESSIONS_PREFIX = "/sessions/"

_PROTECTED = frozenset({"/api/sessions", "/api/schema", "/metrics", "/api/scenarios"})
_SOURCE_SUFFIX = "/source"
AGENT_SUFFIX = "/agent"
_ADMIN_ONLY_WHY = {
    "/metrics": "/metrics counts every session on the server",
    "/api/scenarios": "/api/scenarios is for creating sessions, which only the admin may do",
    _SOURCE_SUFFIX: "a session's source is for restarting it, which only the admin may do",
    AGENT_SUFFIX: "a session's agent token is handed out only to the admin",
}
_PAGES = frozenset({"/", "/index.html"})


def _response(
    status: int, body: bytes, content_type: str, extra: dict[str, str] | None = None
) -> Response:
    headers = Headers(
        [
            ("Date", email.utils.formatdate(usegmt=True)),
            ("Connection", "close"),
            ("Content-Length", str(len(body))),
            ("Content-Type", content_type),
            *BASE_HEADERS,
            ("Content-Security-Policy", API_CSP),
        ]
    )
    for name, value in (extra or {}).items():
        if name in headers:  # a websockets Headers adds a value on assignment: replace
            del headers[name]
        headers[name] = value
    return Response(status, HTTPStatus(status).phrase, headers, body)


def secure(response: Response) -> None:
    """Give a response made elsewhere (websockets' own refusals) the security headers it lacks."""
    headers = response.headers
    for name, value in (*BASE_HEADERS, ("Content-Security-Policy", API_CSP)):
        if name not in headers:
            headers[name] = value


def without_body(response: Response) -> Response:
    """The answer to HEAD: GET's status and headers (Content-Length included), no body."""
    return Response(response.status_code, response.reason_phrase, response.headers, b"")


def json_response(status: int, value: Any, extra: dict[str, str] | None = None) -> Response:
    return _response(status, msgspec.json.encode(value), "application/json", extra)


def metrics_response(text: str) -> Response:
    """200 with `text`, a Prometheus text exposition."""
    return _response(200, text.encode(), "text/plain; version=0.0.4; charset=utf-8")


def error_response(
    status: int, code: ErrorCode | str, message: str, extra: dict[str, str] | None = None
) -> Response:
    """A JSON error body shaped like the protocol's error frame: code and message."""
    headers = dict(extra or {})
    if status == 401:
        headers["WWW-Authenticate"] = 'Bearer realm="areasync"'
    return json_response(status, {"error": {"code": str(code), "message": message}}, headers)


def session_id_of(path: str) -> str | None:
    """The session id of a WebSocket path `/sessions/<id>`, or None."""
    if not path.startswith(SESSIONS_PREFIX):
        return None
    rest = unquote(path[len(SESSIONS_PREFIX) :])
    return rest if rest and "/" not in rest else None


def source_session_of(path: str, suffix: str = _SOURCE_SUFFIX) -> str | None:
    """The session id of `/api/sessions/<id>/source` (or of another `suffix`), or None."""
    prefix = "/api/sessions/"
    if not (path.startswith(prefix) and path.endswith(suffix)):
        return None
    rest = unquote(path[len(prefix) : -len(suffix)])
    return rest if rest and "/" not in rest else None


def _dashboard() -> tuple[Callable[[str], Path | None], dict[str, str]] | None:
    # The dashboard package is optional (built separately); without it `/` is a placeholder.
    try:
        from areasync.service import dashboard
    except ImportError:
        return None
    asset_path = getattr(dashboard, "asset_path", None)
    types = getattr(dashboard, "CONTENT_TYPES", None)
    if asset_path is None or types is None:
        return None
    return asset_path, dict(types)


class Dashboard:
    """The dashboard's page and files, each with the CSP that lets it open WebSockets to
    `socket_hosts` (`host:port`): this server's (`HttpRoutes`), or a cluster's nodes (its
    router, `areasync/cluster/routes.py`)."""

    def __init__(self) -> None:
        self._files = _dashboard()

    def answer(self, path: str, socket_hosts: list[str]) -> Response:
        """The page at `/` and `/index.html`, a file elsewhere, or 404 saying what is here."""
        csp = {"Content-Security-Policy": dashboard_csp(socket_hosts)}
        if path in _PAGES:
            path = "/index.html"
        if self._files is not None:
            asset_path, types = self._files
            file = asset_path(path)
            if file is not None:
                # A worker runs under the policy its script came with: the page's, so that
                # socket-worker.js may open the WebSocket.
                content_type = types.get(file.suffix, "application/octet-stream")
                return _response(200, file.read_bytes(), content_type, csp)
        if path == "/index.html":
            return _response(200, _PLACEHOLDER.encode(), "text/html; charset=utf-8", csp)
        return error_response(
            404,
            "not_found",
            f"nothing at {path!r}: try /health, /api/sessions, /api/schema, /metrics, / "
            "(dashboard) or a WebSocket at /sessions/<id>",
        )


def upgrade_required(path: str) -> Response:
    """426: `path` is a WebSocket endpoint (asked for with HEAD)."""
    return error_response(
        426,
        "upgrade_required",
        f"{path!r} is a WebSocket endpoint: open it with a WebSocket client (GET)",
        {"Upgrade": "websocket"},
    )


def head_of(request: Request) -> Head:
    """A websockets request as the screens read it (screens.py)."""
    return Head(request.method, request.path, tuple(request.headers.raw_items()))


def refusal_response(refusal: Refusal) -> Response:
    """A screen's refusal (screens.py) as a JSON error response."""
    return error_response(refusal.status, refusal.code, refusal.message, dict(refusal.headers))


class HttpRoutes:
    """`process_request` (and `process_response`) for the service's websockets server."""

    def __init__(self, registry: SessionRegistry, open_connections: Callable[[], int]) -> None:
        self.registry = registry
        self.open_connections = open_connections
        self._schema = render_schema().encode()
        self.openenv = OpenEnvRoutes(registry, open_connections, json_response)
        self.dashboard = Dashboard()
        config = registry.config
        # The port's screens (screens.py): its site policy is set by `bound`; its only routes
        # with a body are OpenEnv's POSTs.
        self.screen = PortScreen.of(self.openenv.body_rule, config)
        self._own_host = ""

    def bound(self, host: str, port: int, display: str) -> None:
        """The server listens on `host`:`port` (shown as `display`): set the Host/Origin policy."""
        self.screen.bind(host, port)
        self._own_host = show_host(display.strip("[]"), port)

    def __call__(self, connection: Any, request: Request) -> Response | Awaitable[Response] | None:
        response = self._answer(request)
        if response is None and urlsplit(request.path).path.startswith(OPENENV_PREFIX):
            # OpenEnv's /ws, its token checked: its first message is no anonymous hello.
            admit_messages(connection)
        if isinstance(response, Response) and request.method == "HEAD":
            return without_body(response)
        return response

    def after(self, connection: Any, request: Request, response: Response) -> None:
        """`process_response`: websockets' own refusals (426, 400...) get the security headers."""
        if response.status_code != 101:
            secure(response)

    def _answer(self, request: Request) -> Response | Awaitable[Response] | None:
        if isinstance(request, RefusedRequest):  # refused from its head, body unread (wire.py)
            return refusal_response(request.refusal)
        refused = self.screen.check_site(head_of(request))
        if refused is not None:
            return refusal_response(refused)
        if request.method not in ALLOWED_METHODS and not isinstance(request, PostRequest):
            return error_response(
                405,
                "method_not_allowed",
                f"method {request.method[:40]!r} is not allowed here: this server answers "
                f"{' and '.join(ALLOWED_METHODS)} only",
                {"Allow": ALLOW},
            )
        url = urlsplit(request.path)
        path = url.path
        if path.startswith(OPENENV_PREFIX):
            return self.openenv.answer(request, path, error_response)
        if path.startswith(SESSIONS_PREFIX) and request.method == "HEAD":
            return upgrade_required(path)
        if path.startswith(SESSIONS_PREFIX):
            limit = self.registry.config.max_connections
            if self.open_connections() >= limit:
                return error_response(
                    503,
                    ErrorCode.CAPACITY,
                    f"the server has {limit} open connections, its limit (max_connections); "
                    "retry later",
                )
            return None  # the WebSocket handshake goes on; hello checks session and token
        if request.headers.get("Upgrade", "").lower() == "websocket":
            return error_response(
                404,
                "not_found",
                f"no WebSocket endpoint at {path!r}: connect to /sessions/<session id>",
            )
        if path == "/health":
            return json_response(200, self._health())
        if (
            path in _PROTECTED
            or source_session_of(path) is not None
            or source_session_of(path, AGENT_SUFFIX) is not None
        ):
            return self._protected(path, url.query, request.headers.get("Authorization"))
        return self.dashboard.answer(path, [self._socket_host(request)])

    def _socket_host(self, request: Request) -> str:
        # The WebSocket the page will open goes where the page came from: the accepted Host.
        hosts = request.headers.get_all("Host")
        return hosts[0].strip().lower() if len(hosts) == 1 else self._own_host

    def _health(self) -> dict[str, Any]:
        """`ok`, or `degraded` when a session was ended because its journal failed (how many,
        not which: /health needs no token, and session ids are not for everyone)."""
        body: dict[str, Any] = {"status": "ok", "protocol": PROTOCOL}
        journals = self.registry.journals
        if journals is not None:
            failed = sum(1 for s in self.registry.sessions.values() if s.journal_error)
            refused = len(journals.refused)
            body["journal"] = {"failed_sessions": failed, "refused_journals": refused}
            if failed or refused:
                body["status"] = "degraded"
        return body

    def answer_for(self, path: str, token: str) -> Response:
        """A token-protected GET route's answer for `token` (a cluster's host answers the
        router's `/api/scenarios` and `/api/sessions/<id>/source` with it)."""
        return self._protected(path, "", f"Bearer {token}")

    def _protected(self, path: str, query: str, authorization: str | None) -> Response:
        token = token_from_http(query, authorization)
        who = self.registry.tokens.identify(token) if token else None
        refused = protected_refusal(path, token, who)
        if refused is not None:
            return refused
        assert who is not None  # `protected_refusal`'s
        role, session_id = who
        if path == "/api/sessions":
            return json_response(200, self.sessions(role, session_id))
        if path == "/api/schema":
            return _response(200, self._schema, "application/schema+json")
        restarted = source_session_of(path)
        agent_of = source_session_of(path, AGENT_SUFFIX)
        if restarted is not None:
            return self.source(restarted)
        if agent_of is not None:
            return self.agent(agent_of)
        if path == "/api/scenarios":
            return json_response(
                200,
                {
                    "scenarios": registered_ids(),
                    "max_scenario_bytes": self.registry.config.max_scenario_bytes,
                },
            )
        if path == "/metrics":
            return metrics_response(self.metrics_text())
        raise AssertionError(path)  # pragma: no cover - _PROTECTED lists the paths above

    def sessions(self, role: Role, session_id: str | None) -> dict[str, Any]:
        registry = self.registry
        shown = [
            session.describe(registry.ws_url(session.id))
            for session in registry.sessions.values()
            if session_id is None or session.id == session_id
        ]
        access = {"role": role.value, "session_id": session_id}
        body: dict[str, Any] = {"protocol": PROTOCOL, "access": access, "sessions": shown}
        if registry.journals is not None and session_id is None:  # the admin's view only
            body["refused_journals"] = dict(registry.journals.refused)
        return body

    def source(self, session_id: str) -> Response:
        """What `create_session` needs to make `session_id` again (admin token only)."""
        session = self.registry.get(session_id)
        if session is None:
            return error_response(
                404,
                ErrorCode.SESSION_NOT_FOUND,
                f"no session {session_id!r} (ended sessions are forgotten after keep_ended "
                "more have ended): GET /api/sessions lists the sessions",
            )
        if session.recipe is None:
            return error_response(
                404,
                "no_source",
                f"session {session_id!r} cannot be restarted from here: {session.no_recipe}; "
                "create a new session from its JSON instead",
            )
        return json_response(200, {"session_id": session.id, **session.recipe.as_request()})

    def agent(self, session_id: str) -> Response:
        """Session `session_id`'s agent token and WebSocket URL (admin token only): what the
        dashboard puts in the agent command it shows the admin."""
        session = self.registry.get(session_id)
        if session is None:
            return error_response(
                404,
                ErrorCode.SESSION_NOT_FOUND,
                f"no session {session_id!r}: GET /api/sessions lists the sessions",
            )
        token = self.registry.tokens.of(session_id).get(Role.AGENT)
        if token is None:
            return error_response(
                404,
                "no_token",
                f"session {session_id!r} was restored from its journal, which keeps only hashes "
                "of its tokens: use the agent token printed when it was created",
            )
        url = self.registry.ws_url(session_id)
        return json_response(200, {"session_id": session_id, "url": url, "token": token})

    def metrics_text(self) -> str:
        registry = self.registry
        sessions = {"live": 0.0, "ended": 0.0}
        connections = {role.value: 0.0 for role in Role}
        for session in registry.sessions.values():
            sessions["ended" if session.ended else "live"] += 1
            for role, count in session.connection_counts().items():
                connections[role] += count
        journals = registry.journals
        return registry.metrics.render(
            sessions=sessions,
            connections=connections,
            traces=registry.traces_written,
            journal=None if journals is None or journals.store is None else journals.store.stats,
        )


# Served at / without a token, so it shows no session data: the API does, with a token.
_PLACEHOLDER = (
    "<!doctype html><meta charset=utf-8><title>areasync</title>"
    "<h1>areasync</h1><p>The dashboard is not installed. With a token: "
    "<code>/api/sessions</code>, <code>/api/schema</code>, <code>/metrics</code>.</p>"
)


def create_fields(body: bytes) -> dict[str, Any] | Response:
    """The `create_session` fields of a POST /api/sessions body (a cluster's router, a
    front of workers) (its size was screened from
    its head), checked as the frame is (`protocol/frames.py`), or the 4xx that says what is
    wrong with it."""
    try:
        fields = msgspec.json.decode(body)
    except msgspec.DecodeError as exc:
        return error_response(
            400, ErrorCode.BAD_FRAME, f"the body is not JSON ({exc}): send a JSON object"
        )
    if not isinstance(fields, dict):
        return error_response(
            400,
            ErrorCode.BAD_FRAME,
            "the body must be a JSON object of create_session's fields, e.g. "
            '{"scenario": "scenario_tutorial", "mode": "fast"}',
        )
    for frame_only in ("id", "type"):
        if frame_only in fields:
            return error_response(
                400,
                ErrorCode.INVALID_FIELD,
                f"unknown field {frame_only!r}: the body holds create_session's fields only "
                "(scenario or scenario_json, mode, speed, oracle, import_mode)",
            )
    try:
        msgspec.convert({"id": 0, **fields}, CreateSession)
    except (msgspec.ValidationError, ValueError) as exc:
        return error_response(
            400,
            ErrorCode.INVALID_FIELD,
            f"create_session: {exc}; its fields are scenario or scenario_json, mode, speed, "
            "oracle, import_mode",
        )
    return fields


# -- the admin's routes of a front of servers (a cluster's router, a front of workers) ---------

CREATE_PATH = "/api/sessions"
# What a refused create_session becomes over HTTP (anything else: 400).
CREATE_STATUS = {
    ErrorCode.UNAUTHORIZED: 401,
    ErrorCode.FORBIDDEN: 403,
    ErrorCode.TOO_LARGE: 413,
    ErrorCode.RATE_LIMITED: 429,
    ErrorCode.CAPACITY: 503,
    ErrorCode.INTERNAL: 500,
}
CREATE_NEEDS_ADMIN = "POST /api/sessions (creating a session) needs the admin token"


def protected_refusal(
    path: str, token: str | None, who: tuple[Role, str | None] | None
) -> Response | None:
    """The 401 or 403 that a token-protected GET `path` answers `token` (held by `who`, None:
    by nobody), or None when it may be answered: the same rule on a server's port and on a
    front's."""
    if who is None:
        what = "no token was given" if not token else "the token is not valid"
        return error_response(
            401,
            ErrorCode.UNAUTHORIZED,
            f"{what}: add ?token=<token> or an `Authorization: Bearer <token>` header, with "
            "a token printed by `areasync serve` (the admin token, or a session's)",
        )
    admin_only = path
    if source_session_of(path) is not None:
        admin_only = _SOURCE_SUFFIX
    elif source_session_of(path, AGENT_SUFFIX) is not None:
        admin_only = AGENT_SUFFIX
    if admin_only in _ADMIN_ONLY_WHY and who[1] is not None:
        return error_response(
            403,
            ErrorCode.FORBIDDEN,
            f"{_ADMIN_ONLY_WHY[admin_only]}: it needs the admin token (printed by "
            "`areasync serve`, or fixed with --token / AREASYNC_TOKEN), not a session's",
        )
    return None


def token_required(what: str, whose: str) -> Refusal:
    """401: `what` needs a token (`whose`: which tokens open it)."""
    return Refusal(
        401,
        ErrorCode.UNAUTHORIZED,
        f"{what} needs a token: add ?token=<token> or an `Authorization: Bearer <token>` "
        f"header ({whose})",
    )


def create_body_rule(head: Head, admin: bool, limit: int, whose: str) -> BodyRule | None:
    """The one route with a body of a front of servers: `POST /api/sessions`, of at most
    `limit` bytes (`max_frame_bytes`), from the admin token (`admin`: this request's is)."""
    if head.method != "POST" or head.path != CREATE_PATH:
        return None
    refused = None if admin else token_required(CREATE_NEEDS_ADMIN, whose)
    return BodyRule(limit, "max_frame_bytes", key="admin", refused=refused)


def create_refused(exc: ProtocolError) -> Response:
    """A refused create_session as its HTTP answer (Retry-After when it may be retried)."""
    extra = {"Retry-After": "1"} if exc.code.retryable else None
    return error_response(CREATE_STATUS.get(exc.code, 400), exc.code, exc.message, extra)


def method_refused(request: Request, who: str) -> Response | None:
    """405 for a method other than GET and HEAD, but the POST the screen read (`who`: what
    answers here, for the message)."""
    if request.method in ALLOWED_METHODS or isinstance(request, PostRequest):
        return None
    return error_response(
        405,
        "method_not_allowed",
        f"method {request.method[:40]!r} is not allowed here: {who} answers "
        f"{' and '.join(ALLOWED_METHODS)}, and POST on {CREATE_PATH} (a new session)",
        {"Allow": ALLOW},
    )
