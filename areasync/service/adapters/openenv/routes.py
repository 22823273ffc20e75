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
GET  /state            the HTTP episode's state (a session token's session)
POST /reset            `{}` or `{"episode_id": ...}`: a new HTTP episode on the token's session
POST /step             `{"action": {...}}`: one ARE action on it (OpenEnv's StepRequest)
POST /mcp              OpenEnv's JSON-RPC tool access for `MCPToolClient` (`mcp.py`)
*    /areasync/...     OpenEnv's Task API, and GET /list_environments (`taskapi.py`)
*    /harness          501: areasync hosts no agent harness
=====================  ========================================================================

Over HTTP an OpenEnv URL opens one session: a session's token's (each credential has one HTTP
episode, whose observations carry the notifications since its previous one). OpenEnv's own
HTTP routes make and drop an environment per request, which would lose a session's state, so
the admin's URL (a fresh session per connection) is served over `/ws` only.

An HTTP episode is a client of its session (an agent's holds its turn in fast mode, so time
stands still for it) with no connection whose end would detach it: one that gets no request
for `openenv_idle_timeout` seconds is reaped as an idle `/ws` is (`held.py`, run by the
service): it leaves the session, which runs on; its next `/step` is told so, and a `/reset`
starts a new episode.

A token that opens nothing gets 401 before any upgrade, the same for every route; a POST's
body is read only once its token has opened something and its Content-Length is within
`max_frame_bytes` (`body_rule`, screens.py).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

from websockets.http11 import Request, Response

from areasync.protocol.errors import ErrorCode
from areasync.service.adapters.openenv import mcp as openenv_mcp
from areasync.service.adapters.openenv import taskapi
from areasync.service.adapters.openenv.catalog import Catalog
from areasync.service.adapters.openenv.credential import Credential
from areasync.service.adapters.openenv.episode import session_state
from areasync.service.adapters.openenv.held import HeldEpisodes
from areasync.service.adapters.openenv.messages import ErrorCode as ErrorCode_
from areasync.service.adapters.openenv.messages import (
    OpenEnvError,
    parse_action,
    parse_reset,
    schema,
    step_result,
)
from areasync.service.adapters.openenv.paths import ENV_NAME, ROUTES, locate
from areasync.service.gate.screens import BodyRule, Head, Refusal
from areasync.service.sessions.registry import SessionRegistry

logger = logging.getLogger("areasync.service")
T = TypeVar("T")


def unknown_route(route: str, error: Callable[..., Response]) -> Response | None:
    """404 for a route OpenEnv's base URL does not have (None: it has it)."""
    if route in ROUTES or taskapi.is_task_route(route):
        return None
    return error(
        404,
        "not_found",
        f"no OpenEnv route {route[:60]!r}: an OpenEnv base URL is /openenv/<token> (or "
        "/openenv with the token in Authorization: Bearer), under which are "
        f"{', '.join(sorted(ROUTES))} and the Task API's /{ENV_NAME}/...",
    )


_HTTP_STATUS = {
    ErrorCode_.INVALID_JSON: 400,
    ErrorCode_.UNKNOWN_TYPE: 400,
    ErrorCode_.VALIDATION_ERROR: 422,  # as OpenEnv's server answers a bad action
    ErrorCode_.EXECUTION_ERROR: 409,
    ErrorCode_.CAPACITY_REACHED: 503,
    ErrorCode_.SESSION_ERROR: 410,
}


_BAD_TOKEN = (
    "the token in this OpenEnv URL is not valid: use the base URL printed by `areasync serve` "
    "for a session, or /openenv/<admin token> for a fresh session per connection"
)


def _json_body(body: bytes) -> object:
    if not body.strip():
        return {}
    try:
        return json.loads(body)
    except ValueError as exc:
        raise OpenEnvError(ErrorCode_.INVALID_JSON, f"Invalid JSON: {exc}") from None


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
        self._schema = schema()
        # Each credential's HTTP episode (POST /reset, /step, /mcp), reaped when idle.
        self.held = HeldEpisodes(
            registry, "OpenEnv HTTP episodes", lambda token: self.credential(token) is not None
        )

    def credential(self, token: str) -> Credential | None:
        who = self.registry.tokens.identify(token) if token else None
        if who is None:
            return None
        role, session_id = who
        return Credential(token=token, role=role, session_id=session_id)

    def body_rule(self, head: Head) -> BodyRule | None:
        """The port's routes with a body (screens.py): a POST under /openenv/, of at most
        `max_frame_bytes`, from a token that opens something; None for any other request."""
        parts = locate(head.path, head.first("Authorization")) if head.method == "POST" else None
        if parts is None:
            return None
        token = parts[0]
        valid = self.credential(token) is not None
        refused = None if valid else Refusal(401, ErrorCode.UNAUTHORIZED, _BAD_TOKEN)
        limit = self.registry.config.max_frame_bytes
        return BodyRule(limit, "max_frame_bytes", key=token, refused=refused)

    def answer(
        self, request: Request, path: str, error: Callable[..., Response]
    ) -> Response | Awaitable[Response] | None:
        """The response to an OpenEnv request (awaitable for a POST), or None to let its
        WebSocket handshake go on."""
        parts = locate(path, request.headers.get("Authorization"))
        assert parts is not None
        token, route = parts
        unknown = unknown_route(route, error)
        if unknown is not None:
            return unknown
        credential = self.credential(token)
        if credential is None:
            return error(401, ErrorCode.UNAUTHORIZED, _BAD_TOKEN)
        return self.serve(request, route, credential, error)

    def serve(
        self, request: Request, route: str, credential: Credential, error: Callable[..., Response]
    ) -> Response | Awaitable[Response] | None:
        """`answer` for a known `route` and a `credential` checked already (here, or by the
        front of a session worker, which passes the request on: `sessionworker/handlers.py`)."""
        tasks = taskapi.is_task_route(route)
        websocket = request.headers.get("Upgrade", "").lower() == "websocket"
        if route == "/harness":
            return error(
                501,
                "not_implemented",
                "/harness runs an agent harness process inside the environment (OpenEnv's "
                "harness environments); areasync hosts no agent: connect your harness as the "
                "session's agent over <base>/ws, or over MCP (areasync serve --mcp-port)",
            )
        if tasks and not websocket:
            return self._tasks(request, route)
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
        if request.method == "POST" and route == "/mcp":
            return self._mcp(credential, getattr(request, "body", b""))
        if request.method == "POST":
            return self._post(route, credential, getattr(request, "body", b""))
        return self._get(route, credential, error)

    async def _mcp(self, credential: Credential, body: bytes) -> Response:
        """OpenEnv's `/mcp` JSON-RPC (`mcp.py`), run to its end like a step."""
        work = openenv_mcp.answer(self.held, credential, body, self.registry.config.mcp_max_wait)
        try:
            return self._respond(200, await self._whole(work))
        except OpenEnvError as exc:
            return self._respond(200, openenv_mcp.failure(exc.message))

    async def _tasks(self, request: Request, route: str) -> Response:
        config = self.registry.config
        catalog = Catalog(config.scenario_dir, config.max_scenario_bytes)
        body = getattr(request, "body", b"")
        status, value = await taskapi.answer(catalog, request.method, route, body)
        return self._respond(status, value)

    def _get(self, route: str, credential: Credential, error: Callable[..., Response]) -> Response:
        if route == "/health":
            return self._respond(200, {"status": "healthy"})
        if route == "/schema":
            return self._respond(200, self._schema)
        if route == "/metadata":
            return self._respond(200, self.metadata())
        if route == "/state":
            episode = self.held.get(credential.key)
            if episode is not None:
                return self._respond(200, episode.state())
            session = (
                None if credential.session_id is None else self.registry.get(credential.session_id)
            )
            return self._respond(200, session_state(session, None, 0))
        return error(
            405,
            "method_not_allowed",
            f"{route} is served over OpenEnv's WebSocket (<base>/ws); over HTTP this server "
            "answers GET /health, /schema, /metadata and /state, POST /reset and /step",
            {"Allow": "GET, HEAD, POST"},
        )

    async def _post(self, route: str, credential: Credential, body: bytes) -> Response:
        """OpenEnv's `POST /reset` and `POST /step` on the credential's HTTP episode."""
        try:
            if route not in ("/reset", "/step"):
                raise OpenEnvError(ErrorCode_.VALIDATION_ERROR, f"POST {route} is not a route")
            if credential.fresh:
                raise OpenEnvError(
                    ErrorCode_.EXECUTION_ERROR,
                    "over HTTP an OpenEnv URL opens one session: use a session's OpenEnv URL "
                    "(printed by `areasync serve`), or <base>/ws for a fresh session per "
                    "connection",
                )
            data = _json_body(body)
            if route == "/reset":
                initialize, episode_id = parse_reset(data)
                self.held.restart(credential.key)
                episode = self.held.episode(credential.key, credential)
                async with self.held.using(episode):
                    observation = await self._whole(episode.reset(initialize, episode_id))
            else:
                if not isinstance(data, dict) or "action" not in data:
                    raise OpenEnvError(
                        ErrorCode_.VALIDATION_ERROR, 'a step is {"action": {"action_type": ...}}'
                    )
                action = parse_action(data["action"])
                if self.held.was_reaped(credential.key):
                    raise self._was_reaped()
                episode = self.held.episode(credential.key, credential)
                async with self.held.using(episode):
                    observation = await self._whole(episode.step(action))
        except OpenEnvError as exc:
            return self._respond(_HTTP_STATUS[exc.code], {"detail": exc.data()})
        return self._respond(200, step_result(*observation))

    def _was_reaped(self) -> OpenEnvError:
        timeout = self.registry.config.openenv_idle_timeout
        return OpenEnvError(
            ErrorCode_.SESSION_ERROR,
            f"this HTTP episode got no request for {timeout:g} s (openenv_idle_timeout) and "
            "was reaped (the session runs on): POST <base>/reset to start a new one",
        )

    async def _whole(self, work: Coroutine[Any, Any, T]) -> T:
        """`work`, run to its end however long it takes. websockets answers HTTP requests under
        its handshake timeout and cancels what is still running then: a step cut there would
        have run in part, and a client retrying it would run it twice. So the step runs on its
        own, and past `handshake_timeout - 0.5` s the caller is told it still runs."""
        task = asyncio.ensure_future(work)
        task.add_done_callback(_retrieve)
        limit = max(self.registry.config.handshake_timeout - 0.5, 0.1)
        try:
            return await asyncio.wait_for(asyncio.shield(task), limit)
        except TimeoutError:
            raise OpenEnvError(
                ErrorCode_.EXECUTION_ERROR,
                f"the action is still running after {limit:g} s, the longest an HTTP request "
                "is answered in here; it will finish: GET <base>/state shows where the "
                "session is (do not send it again), and <base>/ws has no such limit",
            ) from None

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


def _retrieve(task: asyncio.Future[Any]) -> None:
    """A step's outcome nobody awaits any more (its request gave up): logged, not lost."""
    if not task.cancelled() and task.exception() is not None:
        logger.warning("an OpenEnv HTTP action failed after its request: %r", task.exception())
