"""The MCP port (`--mcp-port`) in front of session workers: each connection handed, unread, to
the worker of the session its first request names.

MCP's Streamable HTTP has one port and names the session per request: `/mcp/<id>` with the
agent's or the admin token, or `/mcp` with the agent's (`service/adapters/mcp/port.py`). The front
decides per connection, not per request: it peeks at the first request's head
(`heads.py`), judges it here (`judge`, no I/O), and hands the socket to that session's
worker with the verified credential (`Handoff.mcp`). The worker serves the connection from
its first byte, every request of its keep-alive for the session and credential the front
verified: one for another session is answered 421 (open a new connection), one with another
token 401 (`service/adapters/mcp/port.py`). Per connection because per request would pass every
request through the front; the SDK's client keeps one connection pool per MCP session URL,
so its connections name one session.

The worker never learns the admin token: the front sends, per connection, a random salt and
the SHA-256 of salt and token, so that the worker can tell the same credential again on
later requests of the connection, and the verified role.

Bounds: `heads.py`'s.
"""

from __future__ import annotations

import logging
import secrets
import socket
from dataclasses import dataclass

from areasync.front.heads import close_with, request_line
from areasync.service.adapters.mcp.credentials import credential_of
from areasync.service.connection.handoff import Handoff, McpCredential, salted
from areasync.service.gate.auth import Tokens
from areasync.service.gate.screens import Head, Refusal

__all__ = ["McpVerdict", "judge", "refuse"]

logger = logging.getLogger("areasync.front")


@dataclass(frozen=True)
class McpVerdict:
    """The first request's session and verified credential."""

    session_id: str
    credential: McpCredential

    def handoff(self) -> Handoff:
        """What the session's worker is sent with the socket: the session, the verified role
        and the credential (its salt and proof, never the token)."""
        return Handoff(session_id=self.session_id, role=self.credential.role, mcp=self.credential)


def judge(head: bytes, tokens: Tokens) -> McpVerdict | Refusal:
    """The session and credential of a connection whose first request's head is `head`: the
    MCP port's own rule (`credential_of`), the session's existence left to the front's map."""
    parsed = request_line(head)
    if isinstance(parsed, Refusal):
        return parsed
    found = credential_of(Head(*parsed), tokens, lambda _session: True)
    if isinstance(found, Refusal):
        return found
    assert found.token is not None and found.session_id is not None  # `credential_of`'s
    salt = secrets.token_bytes(16)
    proof = salted(salt, found.token)
    return McpVerdict(found.session_id, McpCredential(role=found.role, salt=salt, proof=proof))


async def refuse(
    conn: socket.socket, refused: Refusal, *, linger: float, headers: dict[str, str] | None = None
) -> None:
    """Answer `refused` as MCP's port does (JSON `{"error": {code, message}}`), unread, and
    close the connection (`heads.close_with`, lingering at most `linger` seconds)."""
    error = {"error": {"code": refused.code, "message": refused.message}}
    merged = {**dict(refused.headers), **(headers or {})}
    await close_with(conn, refused.status, error, merged, linger=linger)
