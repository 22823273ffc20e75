"""`HttpRoutes`: plain HTTP on a server's WebSocket port (health, sessions, schema, metrics, page).

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
before a byte of its body is read (`gate/screened.py`); then its method (GET and HEAD,
OpenEnv's POSTs; anything else gets 405 with `Allow: GET, HEAD`, see `gate/methods.py` for
requests websockets' parser would drop). HEAD is answered as GET without the body. Every
response carries the security headers of `headers.py`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

from websockets.http11 import Request, Response

from areasync.bridge.scenarios.loading import registered_ids
from areasync.protocol.errors import ErrorCode
from areasync.protocol.frames import PROTOCOL, Role
from areasync.protocol.merged import JournalHealth, ServerHealth
from areasync.protocol.schema import render_schema
from areasync.protocol.sessions import AgentAccess, ListingAccess, ScenarioList, SessionListing
from areasync.service.adapters.openenv.paths import PREFIX as OPENENV_PREFIX
from areasync.service.adapters.openenv.routes import OpenEnvRoutes
from areasync.service.gate.auth import token_from_http
from areasync.service.gate.methods import ALLOW, ALLOWED_METHODS
from areasync.service.gate.origin import show_host
from areasync.service.gate.screened import PostRequest, RefusedRequest, admit_messages
from areasync.service.gate.screens import PortScreen
from areasync.service.http.answers import (
    AGENT_SUFFIX,
    PROTECTED,
    SESSIONS_PREFIX,
    Dashboard,
    error_response,
    head_of,
    json_response,
    metrics_response,
    plain_response,
    protected_refusal,
    refusal_response,
    secure,
    source_session_of,
    upgrade_required,
    without_body,
)
from areasync.service.sessions.registry import SessionRegistry


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
        # Refused from its head, its body unread (gate/screened.py).
        if isinstance(request, RefusedRequest):
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
            path in PROTECTED
            or source_session_of(path) is not None
            or source_session_of(path, AGENT_SUFFIX) is not None
        ):
            return self._protected(path, url.query, request.headers.get("Authorization"))
        return self.dashboard.answer(path, [self._socket_host(request)])

    def _socket_host(self, request: Request) -> str:
        # The WebSocket the page will open goes where the page came from: the accepted Host.
        hosts = request.headers.get_all("Host")
        return hosts[0].strip().lower() if len(hosts) == 1 else self._own_host

    def _health(self) -> ServerHealth:
        """`ok`, or `degraded` when a session was ended because its journal failed (how many,
        not which: /health needs no token, and session ids are not for everyone)."""
        journals = self.registry.journals
        if journals is None:
            return ServerHealth(status="ok", protocol=PROTOCOL)
        failed = sum(1 for s in self.registry.sessions.values() if s.journal_error)
        refused = len(journals.refused)
        return ServerHealth(
            status="degraded" if failed or refused else "ok",
            protocol=PROTOCOL,
            journal=JournalHealth(failed_sessions=failed, refused_journals=refused),
        )

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
            return plain_response(200, self._schema, "application/schema+json")
        restarted = source_session_of(path)
        agent_of = source_session_of(path, AGENT_SUFFIX)
        if restarted is not None:
            return self.source(restarted)
        if agent_of is not None:
            return self.agent(agent_of)
        if path == "/api/scenarios":
            max_bytes = self.registry.config.max_scenario_bytes
            return json_response(
                200, ScenarioList(scenarios=registered_ids(), max_scenario_bytes=max_bytes)
            )
        if path == "/metrics":
            return metrics_response(self.metrics_text())
        raise AssertionError(path)  # pragma: no cover - PROTECTED lists the paths above

    def sessions(self, role: Role, session_id: str | None) -> SessionListing:
        registry = self.registry
        shown = [
            session.describe(registry.ws_url(session.id))
            for session in registry.sessions.values()
            if session_id is None or session.id == session_id
        ]
        listing = SessionListing(
            protocol=PROTOCOL, access=ListingAccess(role.value, session_id), sessions=shown
        )
        if registry.journals is not None and session_id is None:  # the admin's view only
            listing.refused_journals = dict(registry.journals.refused)
        return listing

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
        return json_response(200, session.recipe.source_of(session.id))

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
        return json_response(200, AgentAccess(session_id=session_id, url=url, token=token))

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
