"""The MCP port (`--mcp-port`) in front of session workers: each connection handed, unread, to
the worker of the session its first request names.

MCP's Streamable HTTP has one port and names the session per request: `/mcp/<id>` with the
agent's or the admin token, or `/mcp` with the agent's (`service/mcp/port.py`). The front
decides per connection, not per request: it peeks at the first request's head (`MSG_PEEK`:
no byte is taken from the socket; `SO_RCVLOWAT` makes the socket readable only once more
than what was seen has come, so a head arriving in pieces costs no busy loop), judges it
here (`judge`, no I/O), and hands the socket to that session's worker with the verified
credential (`Handoff.mcp`). The worker serves the connection from its first byte, every
request of its keep-alive for the session and credential the front verified: one for
another session is answered 421 (open a new connection), one with another token 401
(`service/mcp/port.py`). Per connection because per request would pass every request
through the front; the SDK's client keeps one connection pool per MCP session URL, so its
connections name one session.

The worker never learns the admin token: the front sends, per connection, a random salt and
the SHA-256 of salt and token, so that the worker can tell the same credential again on
later requests of the connection, and the verified role.

Bounds: the head within `HEAD_BYTES` (431 past it) and `handshake_timeout` (408); at most
`max_pending_hellos` connections being judged at once (one more is reset).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import socket
from dataclasses import dataclass
from typing import Any, Final

from areasync.service.auth import Tokens
from areasync.service.handoff import McpCredential, salted
from areasync.service.mcp.port import credential_of
from areasync.service.screens import Head, Refusal

__all__ = [
    "HEAD_BYTES",
    "McpVerdict",
    "close_with",
    "judge",
    "peek_head",
    "refuse",
]

logger = logging.getLogger("areasync.front")

# A request head (request line and headers) the front reads at most before handing.
HEAD_BYTES: Final = 16 * 1024


@dataclass(frozen=True)
class McpVerdict:
    """The first request's session and verified credential."""

    session_id: str
    credential: McpCredential


def judge(head: bytes, tokens: Tokens) -> McpVerdict | Refusal:
    """The session and credential of a connection whose first request's head is `head`: the
    MCP port's own rule (`credential_of`), the session's existence left to the front's map."""
    try:
        lines = head.decode("latin-1").split("\r\n")
        method, target, _version = lines[0].split(" ")
    except ValueError:
        return Refusal(400, "bad_request", "a malformed request line: send HTTP/1.1")
    fields = tuple(
        (name.strip(), value.strip())
        for name, _, value in (line.partition(":") for line in lines[1:])
    )
    found = credential_of(Head(method, target, fields), tokens, lambda _session: True)
    if isinstance(found, Refusal):
        return found
    assert found.token is not None and found.session_id is not None  # `credential_of`'s
    salt = secrets.token_bytes(16)
    proof = salted(salt, found.token)
    return McpVerdict(found.session_id, McpCredential(role=found.role, salt=salt, proof=proof))


async def peek_head(conn: socket.socket, within: float) -> bytes | Refusal:
    """The first request's head, peeked (module docstring), within `within` seconds."""
    loop = asyncio.get_running_loop()
    conn.setblocking(False)
    seen = 0
    try:
        async with asyncio.timeout(within):
            while True:
                ready = loop.create_future()
                loop.add_reader(conn.fileno(), ready.set_result, None)
                try:
                    await ready
                finally:
                    loop.remove_reader(conn.fileno())
                data = conn.recv(HEAD_BYTES, socket.MSG_PEEK)
                end = data.find(b"\r\n\r\n")
                if end >= 0:
                    conn.setsockopt(socket.SOL_SOCKET, socket.SO_RCVLOWAT, 1)
                    return data[:end]
                if not data or len(data) == seen:  # closed, or nothing new
                    return Refusal(400, "bad_request", "the connection closed before a request")
                if len(data) >= HEAD_BYTES:
                    return Refusal(
                        431, "too_large", f"a request head over {HEAD_BYTES} bytes: send less"
                    )
                seen = len(data)
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_RCVLOWAT, seen + 1)
    except TimeoutError:
        return Refusal(
            408, "request_timeout", f"no request head within {within:g} s (handshake_timeout)"
        )
    except OSError:
        return Refusal(400, "bad_request", "the connection was lost")


def refuse(conn: socket.socket, refused: Refusal, headers: dict[str, str] | None = None) -> None:
    """Answer `refused` as MCP's port does (JSON `{"error": {code, message}}`), unread, and
    close the connection."""
    error = {"error": {"code": refused.code, "message": refused.message}}
    close_with(conn, refused.status, error, {**dict(refused.headers), **(headers or {})})


def close_with(
    conn: socket.socket, status: int, body: dict[str, Any], headers: dict[str, str] | None = None
) -> None:
    """Answer an HTTP connection `status` with the JSON `body`, unread, and close it."""
    data = json.dumps(body).encode()
    extra = "".join(f"{name}: {value}\r\n" for name, value in (headers or {}).items())
    head = (
        f"HTTP/1.1 {status} {_REASONS.get(status, 'Refused')}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n{extra}"
        "Connection: close\r\n\r\n"
    )
    with contextlib.suppress(OSError), conn:
        conn.setblocking(False)
        conn.send(head.encode() + data)  # small: the socket's buffer takes it whole


_REASONS: Final = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    408: "Request Timeout",
    431: "Request Header Fields Too Large",
    503: "Service Unavailable",
}
