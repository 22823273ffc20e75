"""A port of the front whose HTTP connections go, unread, where their first request's head says:
the MCP port (`mcp.py`) and gaia2-cli's shared port (`gaia2.py`).

Why one place: both name the session in each request, not by the port, so the front must see
a request before it knows which worker to hand the connection to. It peeks at the first
request's head (`MSG_PEEK`: no byte is taken from the socket, so the worker serves the
connection from its first byte; `SO_RCVLOWAT` makes the socket readable only once more than
what was seen has come, so a head arriving in pieces costs no busy loop), and a `Route` (the
port's own judge and hand-off) decides the rest.

Bounds, the same on both ports: the head within `HEAD_BYTES` (431 past it) and
`handshake_timeout` (408: a client sending its head byte by byte holds a place no longer);
at most `max_pending_hellos` connections being judged at once per port (one more is reset,
as the WebSocket port's pre-hello pool is bounded).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
import struct
from collections.abc import Callable, Coroutine
from typing import Any, Final

from areasync.front.ports import accept_all
from areasync.service.gate.screens import Refusal
from areasync.service.starting import ServiceError, listen_error

__all__ = ["HEAD_BYTES", "HeadPort", "close_with", "peek_head", "request_line"]

logger = logging.getLogger("areasync.front")

# A request head (request line and headers) the front reads at most before handing.
HEAD_BYTES: Final = 16 * 1024
# What a refused client may still send, read and dropped, before its socket is closed.
LINGER_BYTES: Final = 1 << 20
_BACKLOG = 1024

# Carries one connection on, given its first request's head or why there is none (it owns
# the socket: it hands it or answers and closes it).
Route = Callable[[socket.socket, bytes | Refusal], Coroutine[Any, Any, None]]
# Runs a coroutine as one of the front's tasks (ended at shutdown).
Track = Callable[[Coroutine[Any, Any, None]], None]


class HeadPort:
    """One listening port whose connections are judged by their first head (module
    docstring): `what` names it in logs, `option` is the command-line option that sets it."""

    def __init__(
        self, what: str, option: str, *, within: float, pending: int, route: Route, track: Track
    ) -> None:
        self.what = what
        self.option = option
        self.port: int | None = None
        self._within = within
        self._pending = pending
        self._route = route
        self._track = track
        self._sock: socket.socket | None = None
        self.judging = 0  # connections whose first head is being read

    def listen(self, host: str, port: int) -> int:
        """Bind `host`:`port` and accept from now on; the port bound (ServiceError: cannot)."""
        try:
            sock = socket.create_server((host, port), backlog=_BACKLOG)
        except (OSError, OverflowError) as exc:
            raise ServiceError(
                listen_error(host, port, exc).replace("--port", self.option)
            ) from exc
        sock.setblocking(False)
        self._sock = sock
        self.port = int(sock.getsockname()[1])
        asyncio.get_running_loop().add_reader(sock.fileno(), self._accept)
        return self.port

    def _accept(self) -> None:
        assert self._sock is not None
        accept_all(self._sock, self._take, self.what)

    def _take(self, conn: socket.socket) -> None:
        """Past `pending` connections being judged, one more is reset."""
        if self.judging >= self._pending:
            with contextlib.suppress(OSError), conn:  # a reset: nothing kept for it
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            return
        self.judging += 1
        self._track(self._judge(conn))

    async def _judge(self, conn: socket.socket) -> None:
        try:
            head = await peek_head(conn, self._within)
        finally:
            self.judging -= 1
        await self._route(conn, head)

    def close(self) -> None:
        if self._sock is None:
            return
        with contextlib.suppress(ValueError, OSError):
            asyncio.get_running_loop().remove_reader(self._sock.fileno())
        self._sock.close()
        self._sock = None


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


def request_line(head: bytes) -> tuple[str, str, tuple[tuple[str, str], ...]] | Refusal:
    """The method, target and header fields of a peeked `head`, or the 400 that answers it."""
    try:
        lines = head.decode("latin-1").split("\r\n")
        method, target, _version = lines[0].split(" ")
    except ValueError:
        return Refusal(400, "bad_request", "a malformed request line: send HTTP/1.1")
    fields = tuple(
        (name.strip(), value.strip())
        for name, _, value in (line.partition(":") for line in lines[1:])
    )
    return method, target, fields


async def close_with(
    conn: socket.socket,
    status: int,
    body: dict[str, Any],
    headers: dict[str, str] | None = None,
    *,
    linger: float,
) -> None:
    """Answer an HTTP connection `status` with the JSON `body`, unread, and close it: a
    lingering close (what the client still sends is read and dropped for at most `linger`
    seconds and `LINGER_BYTES`, until it closes too), since a socket closed with unread bytes
    is reset, and a reset may discard the answer before the client reads it."""
    data = json.dumps(body).encode()
    extra = "".join(f"{name}: {value}\r\n" for name, value in (headers or {}).items())
    head = (
        f"HTTP/1.1 {status} {_REASONS.get(status, 'Refused')}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n{extra}"
        "Connection: close\r\n\r\n"
    )
    loop = asyncio.get_running_loop()
    with contextlib.suppress(OSError, TimeoutError), conn:
        conn.setblocking(False)
        async with asyncio.timeout(linger):
            await loop.sock_sendall(conn, head.encode() + data)
            conn.shutdown(socket.SHUT_WR)
            dropped = 0
            while dropped < LINGER_BYTES:
                chunk = await loop.sock_recv(conn, 65536)
                if not chunk:
                    break
                dropped += len(chunk)


_REASONS: Final = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    408: "Request Timeout",
    421: "Misdirected Request",
    431: "Request Header Fields Too Large",
    503: "Service Unavailable",
}
