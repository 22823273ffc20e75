"""Plain HTTP GET on the WebSocket port: health, sessions, schema, metrics and the dashboard.

websockets hands every request to `process_request` before its WebSocket handshake; returning a
`Response` answers it as plain HTTP, returning None lets the handshake go on. So one port serves
both, with no web framework:

==================  =======  ===================================================================
path                token    answer
==================  =======  ===================================================================
/health             no       200 {"status": "ok", "protocol": "areasync/1"}
/api/sessions       yes      200 {"access": {...}, "sessions": [...]}: every session for the
                             admin token, only its own session for a session token
/api/schema         yes      200 the protocol's JSON Schema
/metrics            admin    200 Prometheus text format (server-wide counters: the admin token
                             only; a session token gets 403)
/ , /index.html     yes      200 the dashboard page (a placeholder if it is not installed)
/<asset>            no       200 a dashboard file (JS, CSS): static code, no data, and the page's
                             relative links carry no token
/sessions/<id>      (hello)  the WebSocket endpoint (503 when the server is at max_connections)
==================  =======  ===================================================================

A token is `Authorization: Bearer <token>` or `?token=<token>`; any token the server minted
(admin or a session role) opens the token-protected paths, except that a session token only
ever sees its own session. A missing or wrong token gets 401 with a JSON error body.
"""

from __future__ import annotations

import email.utils
import html
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import msgspec
from websockets.datastructures import Headers
from websockets.http11 import Request, Response

from areasync.protocol.errors import ErrorCode
from areasync.protocol.frames import PROTOCOL, Role
from areasync.protocol.schema import render_schema
from areasync.service.auth import token_from_http
from areasync.service.session import SessionRegistry

SESSIONS_PREFIX = "/sessions/"

_PROTECTED = frozenset({"/api/sessions", "/api/schema", "/metrics", "/", "/index.html"})


def _response(
    status: int, body: bytes, content_type: str, extra: dict[str, str] | None = None
) -> Response:
    headers = Headers(
        [
            ("Date", email.utils.formatdate(usegmt=True)),
            ("Connection", "close"),
            ("Content-Length", str(len(body))),
            ("Content-Type", content_type),
            ("Cache-Control", "no-store"),
            ("X-Content-Type-Options", "nosniff"),
        ]
    )
    for name, value in (extra or {}).items():
        headers[name] = value
    reason = {200: "OK", 401: "Unauthorized", 404: "Not Found", 503: "Service Unavailable"}
    return Response(status, reason.get(status, "Error"), headers, body)


def json_response(status: int, value: Any, extra: dict[str, str] | None = None) -> Response:
    return _response(status, msgspec.json.encode(value), "application/json", extra)


def error_response(status: int, code: ErrorCode | str, message: str) -> Response:
    """A JSON error body shaped like the protocol's error frame: code and message."""
    extra = {"WWW-Authenticate": 'Bearer realm="areasync"'} if status == 401 else None
    return json_response(status, {"error": {"code": str(code), "message": message}}, extra)


def session_id_of(path: str) -> str | None:
    """The session id of a WebSocket path `/sessions/<id>`, or None."""
    if not path.startswith(SESSIONS_PREFIX):
        return None
    rest = unquote(path[len(SESSIONS_PREFIX) :])
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


class HttpRoutes:
    """`process_request` for the service's websockets server."""

    def __init__(self, registry: SessionRegistry, open_connections: Callable[[], int]) -> None:
        self.registry = registry
        self.open_connections = open_connections
        self._schema = render_schema().encode()
        self._dashboard = _dashboard()

    def __call__(self, connection: Any, request: Request) -> Response | None:
        url = urlsplit(request.path)
        path = url.path
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
            return json_response(200, {"status": "ok", "protocol": PROTOCOL})
        if path in _PROTECTED:
            return self._protected(path, url.query, request.headers.get("Authorization"))
        return self._asset(path)

    def _protected(self, path: str, query: str, authorization: str | None) -> Response:
        token = token_from_http(query, authorization)
        who = self.registry.tokens.identify(token) if token else None
        if who is None:
            what = "no token was given" if not token else "the token is not valid"
            return error_response(
                401,
                ErrorCode.UNAUTHORIZED,
                f"{what}: add ?token=<token> or an `Authorization: Bearer <token>` header, with "
                "a token printed by `areasync serve` (the admin token, or a session's)",
            )
        role, session_id = who
        if path == "/api/sessions":
            return json_response(200, self.sessions(role, session_id))
        if path == "/api/schema":
            return _response(200, self._schema, "application/schema+json")
        if path == "/metrics":
            if session_id is not None:
                return error_response(
                    403,
                    ErrorCode.FORBIDDEN,
                    "/metrics counts every session on the server: it needs the admin token "
                    "(printed by `areasync serve`, or fixed with --token / AREASYNC_TOKEN), "
                    "not a session's",
                )
            return _response(
                200, self.metrics_text().encode(), "text/plain; version=0.0.4; charset=utf-8"
            )
        return self._index()

    def sessions(self, role: Role, session_id: str | None) -> dict[str, Any]:
        registry = self.registry
        shown = [
            session.describe(registry.ws_url(session.id))
            for session in registry.sessions.values()
            if session_id is None or session.id == session_id
        ]
        access = {"role": role.value, "session_id": session_id}
        return {"protocol": PROTOCOL, "access": access, "sessions": shown}

    def metrics_text(self) -> str:
        registry = self.registry
        sessions = {"live": 0.0, "ended": 0.0}
        connections = {role.value: 0.0 for role in Role}
        for session in registry.sessions.values():
            sessions["ended" if session.ended else "live"] += 1
            for role, count in session.connection_counts().items():
                connections[role] += count
        return registry.metrics.render(
            sessions=sessions, connections=connections, traces=registry.traces_written
        )

    def _index(self) -> Response:
        if self._dashboard is not None:
            asset_path, types = self._dashboard
            page = asset_path("/index.html")
            if page is not None:
                return _response(200, page.read_bytes(), types.get(".html", "text/html"))
        return _response(200, self._placeholder().encode(), "text/html; charset=utf-8")

    def _asset(self, path: str) -> Response:
        if self._dashboard is not None:
            asset_path, types = self._dashboard
            file = asset_path(path)
            if file is not None:
                content_type = types.get(file.suffix, "application/octet-stream")
                return _response(200, file.read_bytes(), content_type)
        return error_response(
            404,
            "not_found",
            f"nothing at {path!r}: try /health, /api/sessions, /api/schema, /metrics, / "
            "(dashboard) or a WebSocket at /sessions/<id>",
        )

    def _placeholder(self) -> str:
        rows = "".join(
            f"<li><code>{html.escape(s.id)}</code> {html.escape(s.scenario_id)}: "
            f"{html.escape(s.sim.state)}</li>"
            for s in self.registry.sessions.values()
        )
        sessions = json.dumps([s.id for s in self.registry.sessions.values()])
        return (
            "<!doctype html><meta charset=utf-8><title>areasync</title>"
            "<h1>areasync</h1><p>The dashboard is not installed; the sessions are:</p>"
            f"<ul>{rows}</ul><p>API: <code>/api/sessions</code>, <code>/api/schema</code>, "
            f"<code>/metrics</code>.</p><!-- {html.escape(sessions)} -->"
        )
