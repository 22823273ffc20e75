"""What the router answers: a 307 for every session handshake, and a few HTTP routes.

The router is a websockets server whose `process_request` answers every request, so no socket
is ever upgraded on it (module docstring of `router.py`):

==========================  =======  ============================================================
path                        token    answer
==========================  =======  ============================================================
/sessions/<id> (WebSocket)  (hello)  307 to `ws://NODE:PORT/sessions/<id>` (the query kept): the
                                     node holding the session, or, for an id no node holds, any
                                     node, which refuses its hello as for a bad token (so the
                                     router tells nobody which ids exist); 503 + Retry-After
                                     while its node was lost and it is being restored
/api/sessions/<id>/url      yes      200 {"session_id", "url" (the node's), "node", "router_url"}
                                     for clients that cannot follow a redirect (browsers): the
                                     admin token, or a token of that session; with --gaia2-port
                                     also "gaia2_url", the session's gaia2-cli adapter URL on its
                                     node with the token asked with (a harness dials the node)
/api/sessions               admin    200 every node's `/api/sessions`, merged: each session with
                                     its `node` and its node's URL (the dashboard's list), and
                                     "nodes": [{node_id, url, live, rss}]
POST /api/sessions          admin    201 {"session_id", "url" (the router's), "node", "tokens"}:
                                     a session created on the least loaded node
                                     (`Router.create_session`) from a JSON body of
                                     `create_session`'s fields (at most `max_frame_bytes`, with a
                                     Content-Length); 400/401/413/503 saying why, nothing created
/api/scenarios              admin    a host's answer (the scenarios "New session" offers)
/api/sessions/<id>/source   admin    the session's host's answer (the fields that restart it)
/api/sessions/<id>/agent    admin    the session's host's answer (its agent token and URL)
/health                     no       200 {"status": "ok" | "degraded", "nodes", "lost_nodes",
                                     "restoring"}
/ , the dashboard's files    no       the one-machine dashboard (`Dashboard`, in
                                     `service/http/answers.py`), its CSP's connect-src naming
                                     every node's server: its list
                                     is the merged one above, and a session opens on its node
                                     (the session's `url`: browsers cannot follow a 307 on a
                                     WebSocket)
==========================  =======  ============================================================

Its own answers (the merged listing, a created session, /health) are the Structs of
`protocol/merged.py`; a host's answer comes over Ray as plain data and is decoded on arrival.

Every request passes the screens an areasync server's port applies (`service/gate/screens.py`):
Host and Origin (`service/gate/origin.py`), and for `POST /api/sessions`, the one route with a body,
the admin token (401), a Content-Length within `max_frame_bytes` (411, 413) and the bodies in
flight (429, 503), all judged from its head before a byte of its body is read (`gate/screened.py`'s
screen, which reads it once admitted: websockets' own parser would drop a request with a body).
Then methods (`service/gate/methods.py`): GET and HEAD, and POST on `/api/sessions` only; any other
gets 405. Every response carries the security headers (`service/http/headers.py`), websockets' own
refusals and the 307s included (`process_response`).

Why the router creates sessions itself rather than leaving it to an admin's `create_session`
frame: a frame goes to the node of the session its socket was redirected for, so the session
would land there, whatever the nodes' loads.
"""

from __future__ import annotations

import asyncio
import hmac
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import unquote, urlsplit

import msgspec
from ray.exceptions import RayError
from websockets.datastructures import Headers
from websockets.http11 import Request, Response

from areasync.protocol.errors import ErrorCode, ProtocolError
from areasync.protocol.frames import PROTOCOL
from areasync.protocol.merged import ClusterHealth, ClusterListing, ListedNode, PlacedSession
from areasync.protocol.sessions import ListedSession, ListingAccess, SessionListing
from areasync.service.adapters.gaia2cli.paths import adapter_url
from areasync.service.gate.auth import token_from_http
from areasync.service.gate.screened import PostRequest, RefusedRequest
from areasync.service.gate.screens import BodyRule, Head, PortScreen
from areasync.service.http.answers import (
    AGENT_SUFFIX,
    CREATE_NEEDS_ADMIN,
    Dashboard,
    create_body_rule,
    create_fields,
    create_refused,
    error_response,
    head_of,
    json_response,
    method_refused,
    refusal_response,
    secure,
    session_id_of,
    source_session_of,
    token_required,
)

if TYPE_CHECKING:
    from areasync.cluster.host import HostLink
    from areasync.service.config import ServiceConfig


class RouterView(Protocol):
    """What the routes read of the router (`router.Router`)."""

    config: ServiceConfig
    admin_token: str
    hosts: dict[str, HostLink]
    restoring: set[str]
    refused: dict[str, str]
    lost: list[str]

    def ws_url(self, session_id: str) -> str: ...

    async def locate(self, session_id: str) -> HostLink | None: ...

    async def call(self, ref: Any, limit: float | None = None) -> Any: ...

    async def create_session(self, **request: Any) -> PlacedSession: ...


__all__ = ["Routes", "redirect"]

_URL_SUFFIX = "/url"
_RETRY_AFTER_S = "1"
_SCENARIOS_PATH = "/api/scenarios"
_WHOSE = "the cluster's admin token, or a token of that session"


def redirect(location: str) -> Response:
    """A 307 to `location`: the handshake is repeated there, as it was (GET, headers)."""
    headers = Headers([("Location", location), ("Content-Length", "0"), ("Connection", "close")])
    return Response(307, "Temporary Redirect", headers, b"")


def url_session_of(path: str) -> str | None:
    """The session id of `/api/sessions/<id>/url`, or None."""
    prefix = "/api/sessions/"
    if not (path.startswith(prefix) and path.endswith(_URL_SUFFIX)):
        return None
    rest = unquote(path[len(prefix) : -len(_URL_SUFFIX)])
    return rest if rest and "/" not in rest else None


class Routes:
    """The router's `process_request` (module docstring)."""

    def __init__(self, router: RouterView) -> None:
        self.router = router
        self.dashboard = Dashboard()
        config = router.config
        self.screen = PortScreen.of(self.body_rule, config)

    def bound(self, host: str, port: int) -> None:
        self.screen.bind(host, port)

    def body_rule(self, head: Head) -> BodyRule | None:
        """The router's one route with a body (screens.py): `POST /api/sessions`, of at most
        `max_frame_bytes`, from the admin token."""
        admin = self._is_admin(token_from_http(head.query, head.first("Authorization")))
        return create_body_rule(head, admin, self.router.config.max_frame_bytes, _WHOSE)

    async def __call__(self, connection: Any, request: Request) -> Response:
        if isinstance(request, RefusedRequest):  # refused from its head, body unread
            return refusal_response(request.refusal)
        refused = self.screen.check_site(head_of(request))
        if refused is not None:
            return refusal_response(refused)
        method = self._method(request)
        if method is not None:
            return method
        url = urlsplit(request.path)
        if isinstance(request, PostRequest):
            token = token_from_http(url.query, request.headers.get("Authorization"))
            return await self.create(request.body, token)
        session_id = session_id_of(url.path)
        if session_id is not None:
            return await self.handshake(session_id, request.path)
        if request.headers.get("Upgrade", "").lower() == "websocket":
            return error_response(
                404, "not_found", f"no WebSocket endpoint at {url.path!r}: use /sessions/<id>"
            )
        if url.path == "/health":
            return json_response(200, self.health())
        token = token_from_http(url.query, request.headers.get("Authorization"))
        looked_up = url_session_of(url.path)
        if looked_up is not None:
            return await self.lookup(looked_up, token)
        if url.path == "/api/sessions":
            if not self._is_admin(token):
                return _unauthorized("/api/sessions on the router lists every node's sessions")
            return json_response(200, await self.sessions())
        restarted = source_session_of(url.path)
        if restarted is None:  # its agent token, for the dashboard's agent command
            restarted = source_session_of(url.path, AGENT_SUFFIX)
        if restarted is not None or url.path == _SCENARIOS_PATH:
            if not self._is_admin(token):
                return _unauthorized(f"{url.path} on the router")
            return await self.passed_on(url.path, restarted)
        if url.path.startswith("/api/"):
            return error_response(
                404,
                "not_found",
                f"nothing at {url.path!r} on the cluster's router: try /health, /api/sessions "
                "(GET, or POST to create one), /api/sessions/<id>/url or a WebSocket at "
                "/sessions/<id>",
            )
        return self.dashboard.answer(url.path, self.socket_hosts(request))

    def socket_hosts(self, request: Request) -> list[str]:
        """Where the router's dashboard may open WebSockets: every node's server (a session
        opens straight on its node), and the router itself (`host:port` each)."""
        hosts = [urlsplit(link.info.ws_base).netloc for link in self.router.hosts.values()]
        own = request.headers.get_all("Host")
        return [*own[:1], *hosts]

    async def handshake(self, session_id: str, path: str) -> Response:
        """Where a client's handshake for `session_id` goes (module docstring)."""
        router = self.router
        if session_id in router.restoring:
            return error_response(
                503,
                ErrorCode.CAPACITY,
                f"session {session_id!r} is being restored on another node (its node was "
                "lost); retry in a second: it resumes with since/epoch",
                {"Retry-After": _RETRY_AFTER_S},
            )
        link = await router.locate(session_id)
        if link is None and router.hosts:
            link = min(router.hosts.values(), key=lambda h: h.load.key(h.node_id))
        if link is None:
            return error_response(
                503,
                ErrorCode.CAPACITY,
                "the cluster has no live node yet; retry later",
                {"Retry-After": _RETRY_AFTER_S},
            )
        return redirect(link.info.ws_base + path)

    async def lookup(self, session_id: str, token: str | None) -> Response:
        """`/api/sessions/<id>/url`: the node's URL of a session, for its token or the
        admin's; an unknown id is answered as a bad token."""
        router = self.router
        link = await router.locate(session_id)
        allowed = self._is_admin(token)
        if not allowed and link is not None and token:
            who = await router.call(link.actor.identify.remote(token))
            allowed = who is not None and who[1] == session_id
        if not allowed or link is None:
            if allowed:  # the admin may learn that it does not exist
                return error_response(
                    404,
                    ErrorCode.SESSION_NOT_FOUND,
                    f"no node holds session {session_id!r}: GET /api/sessions lists them",
                )
            return _unauthorized(f"the URL of session {session_id!r}")
        answer = {
            "session_id": session_id,
            "url": f"{link.info.ws_base}/sessions/{session_id}",
            "node": link.node_id,
            "router_url": router.ws_url(session_id),
        }
        gaia2 = link.info.gaia2_base
        if gaia2 is not None and token:  # the caller's own token: it names the session
            admin = self._is_admin(token)
            answer["gaia2_url"] = adapter_url(gaia2, token, session_id if admin else None)
        return json_response(200, answer)

    async def create(self, body: bytes, token: str | None) -> Response:
        """POST /api/sessions (module docstring): every refusal comes before anything is
        created, and a refused placement creates nothing either."""
        if not self._is_admin(token):
            return _unauthorized(CREATE_NEEDS_ADMIN)
        fields = create_fields(body)
        if isinstance(fields, Response):
            return fields
        try:
            created = await self.router.create_session(**fields)
        except ProtocolError as exc:
            return create_refused(exc)
        except (RayError, TimeoutError) as exc:  # the node chosen was lost or did not answer
            return error_response(
                503,
                ErrorCode.CAPACITY,
                f"the node chosen for the session did not answer ({type(exc).__name__}); "
                "retry: GET /api/sessions shows whether it was created meanwhile",
                {"Retry-After": _RETRY_AFTER_S},
            )
        return json_response(201, created, {"Location": f"/api/sessions/{created.session_id}/url"})

    async def passed_on(self, path: str, session_id: str | None) -> Response:
        """An admin GET a host answers: the session's host for its source, else any host."""
        router = self.router
        link = await router.locate(session_id) if session_id is not None else None
        if link is None and session_id is None and router.hosts:
            link = next(iter(router.hosts.values()))
        if link is None:
            if session_id is not None:
                return error_response(
                    404,
                    ErrorCode.SESSION_NOT_FOUND,
                    f"no node holds session {session_id!r}: GET /api/sessions lists them",
                )
            return error_response(
                503,
                ErrorCode.CAPACITY,
                "the cluster has no live node yet; retry later",
                {"Retry-After": _RETRY_AFTER_S},
            )
        status, body = await router.call(link.actor.admin_get.remote(path))
        return json_response(status, msgspec.json.decode(body))

    async def sessions(self) -> ClusterListing:
        """Every node's sessions (the admin's view of each), merged; each node's answer comes
        as plain data over Ray, decoded here."""
        links = list(self.router.hosts.values())
        answers = await asyncio.gather(
            *(self.router.call(link.actor.sessions.remote()) for link in links),
            return_exceptions=True,
        )
        shown: list[ListedSession] = []
        refused: dict[str, str] = dict(self.router.refused)
        nodes = []
        for link, answer in zip(links, answers, strict=True):
            answered = not isinstance(answer, BaseException)
            nodes.append(
                ListedNode(
                    link.node_id, link.info.http_url, answered, link.load.live, link.load.rss
                )
            )
            if answered:
                listing = msgspec.convert(answer, SessionListing)
                shown += [msgspec.structs.replace(s, **link.shown()) for s in listing.sessions]
                refused.update(listing.refused_journals or {})
        return ClusterListing(
            protocol=PROTOCOL,
            access=ListingAccess("admin", None),
            sessions=shown,
            nodes=nodes,
            restoring=sorted(self.router.restoring),
            refused_journals=refused,
        )

    def health(self) -> ClusterHealth:
        router = self.router
        degraded = not router.hosts or bool(router.restoring) or bool(router.refused)
        return ClusterHealth(
            status="degraded" if degraded else "ok",
            protocol=PROTOCOL,
            nodes=len(router.hosts),
            lost_nodes=len(router.lost),
            restoring=len(router.restoring),
        )

    def _is_admin(self, token: str | None) -> bool:
        admin = self.router.admin_token
        return (
            bool(token) and bool(admin) and hmac.compare_digest(str(token).encode(), admin.encode())
        )

    def _method(self, request: Request) -> Response | None:
        """405 for a method other than GET and HEAD, but the POST the screen read."""
        return method_refused(request, "the router")

    def after(self, connection: Any, request: Request, response: Response) -> None:
        """`process_response`: every response (307s, websockets' own refusals) gets the
        security headers."""
        secure(response)


def _unauthorized(what: str) -> Response:
    return refusal_response(token_required(what, _WHOSE))
