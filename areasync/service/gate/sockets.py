"""The socket beneath websockets: every use of websockets' internals for a connection's socket.

What websockets keeps beneath its documented API - its transport, its protocol state, its
buffer's drain, its pending pings, its protocol callbacks - is read and driven here only, so
that the rest of the service talks to a socket through websockets' documented API and the
functions below. When websockets changes its internals, this module and `screened.py` are the
ones to check. It sits at the bottom of the service (the gate's admission, the fan-out's stall
checks and writers, every connection use it) and imports nothing of the service.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import sys
from collections.abc import Callable
from typing import Any, Final, cast

from websockets.asyncio.server import ServerConnection
from websockets.protocol import State

if sys.platform == "linux":
    import fcntl
    import termios

    _SIOCOUTQ: int | None = termios.TIOCOUTQ  # the same ioctl as SIOCOUTQ on Linux
    _FIONREAD: int | None = termios.FIONREAD  # SIOCINQ: bytes in the receive queue
else:  # pragma: no cover - elsewhere only the user-space buffer counts
    fcntl = None
    _SIOCOUTQ = None
    _FIONREAD = None


def is_open(ws: ServerConnection) -> bool:
    """Whether the WebSocket is open (not closing, not closed): data may still be written."""
    return ws.protocol.state is State.OPEN


def buffered(ws: ServerConnection) -> int:
    """Bytes in the socket's user-space write buffer (0 once the transport is gone)."""
    transport = ws.transport
    return 0 if transport is None else transport.get_write_buffer_size()


def write(ws: ServerConnection, data: bytes) -> None:
    """Hand `data` (whole WebSocket frames) to the socket's transport, now: never waits."""
    ws.transport.write(data)


async def drain(ws: ServerConnection) -> None:
    """Wait while the write buffer is above websockets' `write_limit` (as `ws.send` does)."""
    await ws.drain()


def abort(ws: ServerConnection) -> None:
    """Drop the TCP connection at once, without a closing handshake: a reset (`reset`)."""
    transport = ws.transport
    if transport is not None:
        transport.abort()  # a `ResettingTransport`'s, for every connection of ours


def reset(transport: asyncio.BaseTransport) -> None:
    """Abort `transport` with a TCP reset: the socket and its kernel buffers go at once.

    asyncio's `abort` closes the descriptor without SO_LINGER, which the kernel takes as an
    orderly close: it keeps the socket (FIN-WAIT-1) with every unsent byte, its FIN queued
    behind them, and probes a peer that reads nothing until its orphan retries run out
    (docs/topics/security.md, "Ports"). With SO_LINGER 0 the close sends RST and frees them: a
    connection the server drops is gone when it drops it.
    """
    sock = transport.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_ZERO)
    if isinstance(transport, ResettingTransport):
        transport = transport.transport
    cast(asyncio.WriteTransport, transport).abort()


_LINGER_ZERO: Final = struct.pack("ii", 1, 0)


class ResettingTransport:
    """A transport whose `abort` is a TCP reset (`reset`); everything else is the transport's.

    websockets aborts a connection itself when a close does not complete within
    `close_timeout` (a peer that sent its close frame and reads nothing, say); each connection
    of ours is given this in place of its transport, so that every abort, websockets' and
    ours, frees the socket at once.
    """

    __slots__ = ("transport",)

    def __init__(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def abort(self) -> None:
        reset(self.transport)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.transport, name)


def pause_reading(ws: ServerConnection) -> None:
    """Read nothing more from the socket until `resume_reading`."""
    ws.transport.pause_reading()


def resume_reading(ws: ServerConnection) -> None:
    """Read from the socket again (unless it is closing or gone)."""
    transport = ws.transport
    if transport is not None and not transport.is_closing():
        transport.resume_reading()


def unsent(ws: ServerConnection) -> int | None:
    """Bytes written to the socket that its peer has not acknowledged (user-space buffer plus
    the kernel's send queue); None when the socket is closing or gone."""
    transport = ws.transport
    if transport is None or transport.is_closing():
        return None
    return int(transport.get_write_buffer_size()) + kernel_unsent(transport)


def kernel_unsent(transport: asyncio.BaseTransport) -> int:
    """Bytes in the socket's kernel send queue, not yet acknowledged by the peer (Linux
    `SIOCOUTQ`); 0 where that cannot be read."""
    return _queued(transport, _SIOCOUTQ)


def unread(ws: ServerConnection) -> int:
    """Bytes the peer sent that wait in the socket's kernel receive queue, not yet read by the
    server (Linux `SIOCINQ`); 0 where that cannot be read, or once the transport is gone."""
    transport = ws.transport
    return 0 if transport is None else _queued(transport, _FIONREAD)


def unhandled(ws: ServerConnection) -> bool:
    """Whether bytes the peer sent wait on the server's own work: a frame websockets has
    assembled that nobody has received yet, or bytes in the kernel receive queue (`unread`).
    Bytes of a frame not yet complete, already read, are the peer's to finish."""
    return len(ws.recv_messages.frames) > 0 or unread(ws) > 0


def _queued(transport: asyncio.BaseTransport, request: int | None) -> int:
    """The byte count a queue-size `ioctl` reports for the transport's socket; 0 without one."""
    sock = transport.get_extra_info("socket")
    if sock is None or request is None:
        return 0
    try:
        data = fcntl.ioctl(sock.fileno(), request, b"\0\0\0\0")
    except OSError:
        return 0
    return int(struct.unpack("i", data)[0])


def oldest_ping_age(ws: Any, now: float) -> float | None:
    """Seconds (on the event loop's clock, `now`) the oldest unanswered keepalive ping has
    waited for its pong; None if none waits."""
    # websockets keeps its unanswered pings in order: {payload: (pong future, sent at)}, sent
    # at on the event loop's clock.
    pings = getattr(ws, "pending_pings", None)
    if not pings:
        return None
    _, sent = next(iter(pings.values()))
    return float(now - sent)


def reporting_connection_class(
    *,
    arrive: Callable[[ServerConnection], None],
    received: Callable[[ServerConnection, bool], None],
    leave: Callable[[ServerConnection], None],
    base: type[ServerConnection] = ServerConnection,
) -> type[ServerConnection]:
    """websockets' `ServerConnection` (or `base`, a subclass of it), reporting its accept
    (`arrive`), each arrival of bytes (`received`, with whether the WebSocket is open yet) and
    its end (`leave`), whatever happens in between."""

    class ReportingConnection(base):  # type: ignore[valid-type,misc]
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(transport)
            arrive(self)

        def data_received(self, data: bytes) -> None:
            received(self, self.protocol.state is State.OPEN)
            super().data_received(data)

        def connection_lost(self, exc: Exception | None) -> None:
            leave(self)
            super().connection_lost(exc)

    return ReportingConnection
