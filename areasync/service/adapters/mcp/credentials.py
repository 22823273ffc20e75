"""Whose an MCP request is: the session its path names and the token its head carries.

The MCP port applies this rule to every request (`port.py`); the front applies it to a
connection's first request before handing the connection over (`front/mcp.py`), without
importing the port (the MCP SDK, the sessions), so it lives apart.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING
from urllib.parse import unquote

from areasync.protocol.errors import ErrorCode
from areasync.protocol.frames import Role
from areasync.service.adapters.openenv.credential import Credential
from areasync.service.gate.auth import token_from_http
from areasync.service.gate.screens import Head, Refusal

if TYPE_CHECKING:
    from areasync.service.gate.auth import Tokens

__all__ = ["PATH", "credential_of"]

PATH = "/mcp"


def credential_of(
    head: Head, tokens: Tokens, exists: Callable[[str], bool]
) -> Credential | Refusal:
    """The credential `head` carries on the session it names (`exists`: whether a session is
    here), or the refusal: the port's rule, and the front's on a first request (`front/mcp.py`)."""
    path = head.path
    if path != PATH and not path.startswith(PATH + "/"):
        return Refusal(
            404,
            "not_found",
            f"nothing here: a session's MCP endpoint is {PATH}/<session id> (or {PATH} "
            "with the session's agent token)",
        )
    named = unquote(path[len(PATH) + 1 :]) or None
    token = token_from_http("", head.first("Authorization"))
    found = None if token is None else tokens.identify(token)
    if token is None or found is None:
        return Refusal(
            401,
            ErrorCode.UNAUTHORIZED,
            "send the session's agent token (or the admin token) as Authorization: Bearer "
            "<token>; the banner and create_session give it",
        )
    role, session_id = found
    if session_id is None:  # the admin token names its session in the path
        session_id = named
    elif named is not None and named != session_id:
        session_id = None
    if session_id is None or not exists(session_id):
        return Refusal(
            404,
            "not_found",
            f"no such session for this token: the URL is {PATH}/<session id> of a live "
            "session (the admin token needs the id; a session's token opens only its own)",
        )
    if role not in (Role.AGENT, Role.ADMIN):
        return Refusal(
            403,
            ErrorCode.FORBIDDEN,
            f"the {role.value} token may not call the agent's tools: MCP serves a session's "
            "tools to its agent; use the agent's token",
        )
    return Credential(token=token, role=role, session_id=session_id)
