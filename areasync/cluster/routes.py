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
                                     admin token, or a token of that session
/api/sessions               admin    200 every node's `/api/sessions`, merged: each session with
                                     its `node` and its node's URL (the dashboard's list), and
                                     "nodes": [{node_id, url, live, rss}]
/health                     no       200 {"status": "ok" | "degraded", "nodes", "lost_nodes",
                                     "restoring"}
/ , the dashboard's files    no       the one-machine dashboard (`service/http.py`'s `Dashboard`),
                                     its CSP's connect-src naming every node's server: its list
                                     is the merged one above, and a session opens on its node
                                     (the session's `url`: browsers cannot follow a 307 on a
                                     WebSocket)
==========================  =======  ============================================================

Host and Origin headers are checked as an areasync server checks them (`service/origin.py`).
"""

from __future__ import annotations

import asyncio
import hmac
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import unquote, urlsplit

from websockets.datastructures import Headers
from websockets.http11 import Request, Response

from areasync.protocol.errors import ErrorCode
from areasync.protocol.frames import PROTOCOL
from areasync.service.auth import token_from_http
from areasync.service.http import Dashboard, error_response, json_response, session_id_of
from areasync.service.origin import SitePolicy

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


__all__ = ["Routes", "redirect"]

_URL_SUFFIX = "/url"
_RETRY_AFTER_S = "1"


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
        self.site: SitePolicy | None = None
        self.dashboard = Dashboard()

    def bound(self, host: str, port: int) -> None:
        config = self.router.config
        self.site = SitePolicy.for_server(host, port, config.allow_hosts, config.allow_origins)

    async def __call__(self, connection: Any, request: Request) -> Response:
        refused = self._screen(request)
        if refused is not None:
            return refused
        url = urlsplit(request.path)
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
        if url.path.startswith("/api/"):
            return error_response(
                404,
                "not_found",
                f"nothing at {url.path!r} on the cluster's router: try /health, /api/sessions, "
                "/api/sessions/<id>/url or a WebSocket at /sessions/<id>",
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
        return json_response(
            200,
            {
                "session_id": session_id,
                "url": f"{link.info.ws_base}/sessions/{session_id}",
                "node": link.node_id,
                "router_url": router.ws_url(session_id),
            },
        )

    async def sessions(self) -> dict[str, Any]:
        """Every node's sessions (the admin's view of each), merged."""
        links = list(self.router.hosts.values())
        answers = await asyncio.gather(
            *(self.router.call(link.actor.sessions.remote()) for link in links),
            return_exceptions=True,
        )
        shown: list[dict[str, Any]] = []
        refused: dict[str, str] = dict(self.router.refused)
        nodes = []
        for link, answer in zip(links, answers, strict=True):
            node = {"node_id": link.node_id, "url": link.info.http_url, "answered": True}
            node.update(live=link.load.live, rss=link.load.rss)
            if isinstance(answer, BaseException):
                node["answered"] = False
            else:
                shown += [{**s, "node": link.node_id} for s in answer["sessions"]]
                refused.update(answer.get("refused_journals", {}))
            nodes.append(node)
        return {
            "protocol": PROTOCOL,
            "access": {"role": "admin", "session_id": None},
            "sessions": shown,
            "nodes": nodes,
            "restoring": sorted(self.router.restoring),
            "refused_journals": refused,
        }

    def health(self) -> dict[str, Any]:
        router = self.router
        degraded = not router.hosts or bool(router.restoring) or bool(router.refused)
        return {
            "status": "degraded" if degraded else "ok",
            "protocol": PROTOCOL,
            "nodes": len(router.hosts),
            "lost_nodes": len(router.lost),
            "restoring": len(router.restoring),
        }

    def _is_admin(self, token: str | None) -> bool:
        admin = self.router.admin_token
        return (
            bool(token) and bool(admin) and hmac.compare_digest(str(token).encode(), admin.encode())
        )

    def _screen(self, request: Request) -> Response | None:
        """The Host and Origin checks of an areasync server (`service/origin.py`)."""
        site = self.site
        if site is None:
            return None
        hosts = request.headers.get_all("Host")
        origins = request.headers.get_all("Origin")
        if len(hosts) > 1 or len(origins) > 1:
            return error_response(
                400, "bad_request", "a request has at most one Host and one Origin header"
            )
        host = hosts[0] if hosts else None
        if not site.host_allowed(host):
            return error_response(421, "host_not_allowed", site.host_refusal(host or ""))
        origin = origins[0] if origins else None
        if not site.origin_allowed(origin, host):
            return error_response(403, "origin_not_allowed", site.origin_refusal(origin or ""))
        return None


def _unauthorized(what: str) -> Response:
    return error_response(
        401,
        ErrorCode.UNAUTHORIZED,
        f"{what} needs a token: add ?token=<token> or an `Authorization: Bearer <token>` "
        "header (the cluster's admin token, or a token of that session)",
    )
