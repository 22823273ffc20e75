"""The HTTP answers every port's routes share: JSON responses and errors, the screens'
refusals as responses, the dashboard's files, `create_session` over HTTP, and the paths.

Three sets of routes build on these: the server's (`routes.py`, the table of what its port
answers), the front's (`front/routes.py`) and a cluster router's (`cluster/routes.py`). This
module imports no session, no registry and no ARE, so that the front process does not.
"""

from __future__ import annotations

import email.utils
from collections.abc import Callable
from http import HTTPStatus
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import msgspec
from websockets.datastructures import Headers
from websockets.http11 import Request, Response

from areasync.protocol.errors import ErrorCode, ProtocolError
from areasync.protocol.frames import CreateSession, Role
from areasync.service.gate.methods import ALLOW, ALLOWED_METHODS
from areasync.service.gate.screened import PostRequest
from areasync.service.gate.screens import BodyRule, Head, Refusal
from areasync.service.http.headers import API_CSP, BASE_HEADERS, dashboard_csp

SESSIONS_PREFIX = "/sessions/"

PROTECTED = frozenset({"/api/sessions", "/api/schema", "/metrics", "/api/scenarios"})
_SOURCE_SUFFIX = "/source"
AGENT_SUFFIX = "/agent"
_ADMIN_ONLY_WHY = {
    "/metrics": "/metrics counts every session on the server",
    "/api/scenarios": "/api/scenarios is for creating sessions, which only the admin may do",
    _SOURCE_SUFFIX: "a session's source is for restarting it, which only the admin may do",
    AGENT_SUFFIX: "a session's agent token is handed out only to the admin",
}
_PAGES = frozenset({"/", "/index.html"})


def plain_response(
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
    return plain_response(status, msgspec.json.encode(value), "application/json", extra)


def metrics_response(text: str) -> Response:
    """200 with `text`, a Prometheus text exposition."""
    return plain_response(200, text.encode(), "text/plain; version=0.0.4; charset=utf-8")


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
                return plain_response(200, file.read_bytes(), content_type, csp)
        if path == "/index.html":
            return plain_response(200, _PLACEHOLDER.encode(), "text/html; charset=utf-8", csp)
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
