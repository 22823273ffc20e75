"""Creating, stopping and listing sessions (the admin token): typed results, and a way in.

`create_session` and `stop_session` are frames sent over a connection to any live session in
the admin role (:meth:`Client.create_session`, :meth:`Client.stop_session`); listing is HTTP
`GET /api/sessions`, whose sessions are `ListedSession` Structs (a front's and a cluster
router's with their ``worker``, ``node`` and ``node_host``). :func:`admin_url` finds a
session to connect to from the server's address alone, so a caller needs only
``ws://HOST:PORT`` and the admin token:

    url = await admin_url("ws://127.0.0.1:8765", token=T)
    async with connect(url, role="admin", token=T) as admin:
        created = await admin.create_session(scenario="scenario_tutorial", mode="fast")
        created.tokens["agent"], created.url
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import anyio
import msgspec

from areasync.client.errors import AreasyncError
from areasync.protocol.sessions import (
    CreatedSession,
    ListedSession,
    SessionListing,
    StoppedSession,
)

__all__ = [
    "CreatedSession",
    "ListedSession",
    "StoppedSession",
    "admin_url",
    "http_url",
    "list_sessions",
]

_HTTP_TIMEOUT_S = 10.0


def http_url(url: str) -> str:
    """The server's HTTP base (``http://HOST:PORT``) from any of its ws:// or http:// URLs."""
    parts = urlsplit(url)
    scheme = {"ws": "http", "wss": "https"}.get(parts.scheme, parts.scheme)
    if scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"{url!r} is not a server URL: expected ws://HOST:PORT")
    return urlunsplit((scheme, parts.netloc, "", "", ""))


async def list_sessions(url: str, *, token: str) -> list[ListedSession]:
    """The server's sessions as ``GET /api/sessions`` lists them (every one for the admin
    token; a session token sees its own), from a server, a front or a cluster's router.
    Read their fields by name (``session.url``); ``session["url"]`` and
    ``session.get("url")`` still read them as from the dicts this returned before."""
    body = await anyio.to_thread.run_sync(_get, http_url(url) + "/api/sessions", token)
    try:
        return msgspec.convert(body, SessionListing).sessions
    except msgspec.ValidationError as exc:
        raise AreasyncError(
            f"/api/sessions answered what is not a session listing ({exc}): is {url} an "
            "areasync server of this version?"
        ) from exc


async def admin_url(url: str, *, token: str) -> str:
    """A session URL to connect to in the admin role: ``url`` itself if it names a session,
    else the first live session the server lists."""
    if "/sessions/" in urlsplit(url).path:
        return url
    sessions = [s for s in await list_sessions(url, token=token) if s.url]
    # A live one if any: an ended session answers only while the server keeps it.
    for session in sorted(sessions, key=lambda s: s.ended):
        return session.url
    raise AreasyncError(
        f"the server at {url} has no live session to connect to, and create_session is sent "
        "over a session's connection: restart it with `areasync serve --scenario ID`"
    )


def _get(url: str, token: str) -> Any:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=_HTTP_TIMEOUT_S) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as exc:
        if exc.code == 401:
            raise AreasyncError(f"{url}: the token was refused (HTTP 401); check --token") from exc
        raise AreasyncError(f"{url}: HTTP {exc.code} {exc.reason}") from exc
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise AreasyncError(f"cannot reach {url} ({reason}); is the server up?") from exc
