"""The OpenEnv URL layout on areasync's port: `/openenv/<token>/...`.

OpenEnv's client takes nothing but a base URL (it appends `/ws`, `/reset`... and sends no
header), so the credential is a path segment of the base URL,
`http://HOST:PORT/openenv/<token>`: the admin token gives a fresh session per connection, a
session's token opens that session with its role (`episode.py`). The token never reaches a log
(`redact.py` masks the segment in websockets' lines; areasync logs no paths).

=====================  ========================================================================
route under the base   answer
=====================  ========================================================================
WS   /ws               OpenEnv's WebSocket: reset, step, state, close (`socket.py`)
GET  /health           {"status": "healthy"}
GET  /schema           OpenEnv's SchemaResponse: action, observation, state (`messages.py`)
GET  /metadata         OpenEnv's EnvironmentMetadata
GET  /state            a session token's session (the admin's has no session over HTTP)
=====================  ========================================================================

A token that opens nothing gets 401 before any upgrade, the same for every route.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

from websockets.http11 import Request, Response

from areasync.protocol.errors import ErrorCode
from areasync.service.openenv.episode import Credential, session_state
from areasync.service.openenv.messages import schema
from areasync.service.registry import SessionRegistry

PREFIX = "/openenv/"
_ROUTES = frozenset({"/ws", "/health", "/schema", "/metadata", "/state", "/reset", "/step"})


def split(path: str) -> tuple[str, str] | None:
    """(token, route) of `/openenv/<token><route>`, or None if `path` is not OpenEnv's."""
    if not path.startswith(PREFIX):
        return None
    token, slash, route = path[len(PREFIX) :].partition("/")
    return unquote(token), slash + route


def base_url(http_url: str, token: str) -> str:
    """The OpenEnv base URL to paste into `EnvClient(base_url=...)`."""
    from urllib.parse import quote

    return f"{http_url}{PREFIX}{quote(token, safe='')}"


class OpenEnvRoutes:
    """The `/openenv/...` part of `process_request` (called by `HttpRoutes`)."""

    def __init__(
        self,
        registry: SessionRegistry,
        open_connections: Callable[[], int],
        respond: Callable[..., Response],
    ) -> None:
        self.registry = registry
        self.open_connections = open_connections
        self._respond = respond  # (status, value) -> a JSON response with the security headers
        self._error: Callable[..., Response] | None = None
        self._schema = schema()

    def credential(self, token: str) -> Credential | None:
        who = self.registry.tokens.identify(token) if token else None
        if who is None:
            return None
        role, session_id = who
        return Credential(token=token, role=role, session_id=session_id)

    def answer(
        self, request: Request, path: str, error: Callable[..., Response]
    ) -> Response | None:
        """The response to an OpenEnv request, or None to let its WebSocket handshake go on."""
        parts = split(path)
        assert parts is not None
        token, route = parts
        if route not in _ROUTES:
            return error(
                404,
                "not_found",
                f"no OpenEnv route {route[:60]!r}: an OpenEnv base URL is /openenv/<token>, "
                f"under which are {', '.join(sorted(_ROUTES))}",
            )
        credential = self.credential(token)
        if credential is None:
            return error(
                401,
                ErrorCode.UNAUTHORIZED,
                "the token in this OpenEnv URL is not valid: use the base URL printed by "
                "`areasync serve` for a session, or /openenv/<admin token> for a fresh session "
                "per connection",
            )
        websocket = request.headers.get("Upgrade", "").lower() == "websocket"
        if route == "/ws":
            if not websocket:
                return error(
                    426,
                    "upgrade_required",
                    "/ws is OpenEnv's WebSocket: open it with a WebSocket client",
                    {"Upgrade": "websocket"},
                )
            limit = self.registry.config.max_connections
            if self.open_connections() >= limit:
                return error(
                    503,
                    ErrorCode.CAPACITY,
                    f"the server has {limit} open connections, its limit (max_connections); "
                    "close an environment or retry later",
                )
            return None
        if websocket:
            return error(404, "not_found", "OpenEnv's WebSocket is at <base>/ws")
        return self._get(route, credential, error)

    def _get(self, route: str, credential: Credential, error: Callable[..., Response]) -> Response:
        if route == "/health":
            return self._respond(200, {"status": "healthy"})
        if route == "/schema":
            return self._respond(200, self._schema)
        if route == "/metadata":
            return self._respond(200, self.metadata())
        if route == "/state":
            session = (
                None if credential.session_id is None else self.registry.get(credential.session_id)
            )
            return self._respond(200, session_state(session, None, 0))
        return error(
            405,
            "method_not_allowed",
            f"{route} is served over OpenEnv's WebSocket (<base>/ws); over HTTP this server "
            "answers GET /health, /schema, /metadata and /state",
            {"Allow": "GET, HEAD"},
        )

    def metadata(self) -> dict[str, Any]:
        return {
            "name": "areasync",
            "description": (
                "Meta's Agents Research Environments (ARE) on a virtual clock: actions "
                "initialize, tick, list_apps, call_tool, get_state (GET <base>/schema)"
            ),
            "readme_content": None,
            "version": "0.1.0",
            "author": None,
            "documentation_url": None,
        }
