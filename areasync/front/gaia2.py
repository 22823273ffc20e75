"""gaia2-cli's shared port (`--gaia2-port`) in front of session workers: each connection handed,
unread, to the worker of the session its first request names, for that one request.

The shared port names the session in every request's path (`service/adapters/gaia2cli/http.py`):
`/gaia2/<session token>/...`, or `/gaia2/<admin token>/<session id>/...`. The front peeks at
the first request's head (`heads.py`), judges it here (`judge`, no I/O: the port's Host and
Origin screens, then the token), and hands the socket to the session's worker with the
verified session and role (`Handoff.gaia2_shared`). The worker's adapter serves that request
from its first byte as that session's and role's, and closes the connection after its
response (`Connection: close`).

One request per connection, not the whole keep-alive: the next request on a connection may
name a session in another worker (an orchestrator holding the admin token keeps one pool of
connections for every session), and a worker cannot give a connection back. An HTTP/1.1
client opens a new connection after `Connection: close` by itself (and gaia2-cli's commands
open one per request anyway), so no request is refused for it; routing each request here
would pass every byte through the front. The cost is a connection and a hand-off per request
(BENCHMARKS.md). The worker never learns the admin token: it serves the one request with the
front's verdict.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final
from urllib.parse import unquote

from areasync.front.heads import request_line
from areasync.protocol.frames import Role
from areasync.service.adapters.gaia2cli.paths import PREFIX, UNKNOWN_TOKEN
from areasync.service.gate.auth import Tokens
from areasync.service.gate.screens import Head, PortScreen, Refusal

__all__ = ["Gaia2Verdict", "judge"]

_NOT_OURS: Final = f"not found: the adapter's URLs are {PREFIX}..."


@dataclass(frozen=True)
class Gaia2Verdict:
    """The first request's session and the verified role of its token."""

    session_id: str
    role: Role


def judge(head: bytes, tokens: Tokens, screen: PortScreen) -> Gaia2Verdict | Refusal:
    """The session and role of a connection whose first request's head is `head`: the shared
    port's screens (`screen`'s Host and Origin) and token rule, the session's existence left to
    the front's map."""
    parsed = request_line(head)
    if isinstance(parsed, Refusal):
        return parsed
    request = Head(*parsed)
    refused = screen.check_site(request)
    if refused is not None:
        return refused
    if not request.path.startswith(PREFIX):
        return Refusal(404, "not_found", _NOT_OURS)
    token, _, tail = unquote(request.path[len(PREFIX) :]).partition("/")
    found = tokens.identify(token)
    if found is None:
        return Refusal(401, "unauthorized", UNKNOWN_TOKEN)
    role, session_id = found
    if session_id is None:  # the admin token: the session comes next
        session_id = tail.partition("/")[0]
    return Gaia2Verdict(session_id, role)
