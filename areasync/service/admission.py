"""Admission: sockets that have not said `hello` get a small pool of their own, oldest out first.

Every socket the server accepts is *pending* from the moment it is accepted until its `hello`
is accepted (or it goes away): during the WebSocket handshake (`handshake_timeout`), then until
its first frame (`hello_timeout`). Pending sockets are counted in a pool of their own,
`max_pending_hellos`, apart from authenticated connections, which alone count against
`max_connections` (the handshake's 503) - so sockets that never say hello cannot keep a client
that does out of the server.

When the pool is full, a newly accepted socket is admitted by *evicting the oldest* pending
socket (`Admission.arrive`): one that has finished its handshake is closed with 4408
(`CloseCode.HELLO_TIMEOUT`, its reason says it was evicted); one still in its handshake is
dropped (TCP abort: it has no WebSocket to close yet). A client that sends `hello` as soon as
its handshake is done is pending for one round trip; to evict it an attacker must open
`max_pending_hellos` sockets within that round trip, and each costs the attacker a socket held
open. Holding sockets open without saying hello only ever cycles the pool.

The pool is tracked from websockets' own connection object (`connection_class`): its
`connection_made` is the moment of accept, its `connection_lost` the end, whatever happens in
between (a plain HTTP request, a failed handshake, a close).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from websockets.asyncio.server import ServerConnection

logger = logging.getLogger("areasync.service")

Evict = Callable[[], None]


def _abort(ws: ServerConnection) -> Evict:
    def evict() -> None:
        transport = ws.transport
        if transport is not None:
            transport.abort()

    return evict


class Admission:
    """The pending pool (oldest first) and the count of authenticated connections."""

    def __init__(self, max_pending: int, max_connections: int) -> None:
        self.max_pending = max_pending
        self.max_connections = max_connections
        # Insertion order is arrival order: the first entry is the oldest pending socket.
        self._pending: dict[ServerConnection, Evict] = {}
        self.authenticated = 0
        self.evicted = 0  # pending sockets evicted to admit newer ones, since start

    @property
    def pending(self) -> int:
        return len(self._pending)

    def arrive(self, ws: ServerConnection) -> None:
        """A socket was accepted: pending, evicting the oldest pending ones beyond the pool."""
        self._pending[ws] = _abort(ws)
        while len(self._pending) > self.max_pending:
            oldest = next(iter(self._pending))
            evict = self._pending.pop(oldest)
            self.evicted += 1
            evict()

    def on_evict(self, ws: ServerConnection, evict: Evict) -> None:
        """How to evict `ws` from now on (its handshake is done: close it with 4408)."""
        if ws in self._pending:
            self._pending[ws] = evict

    def full(self) -> bool:
        """True when authenticated connections are at `max_connections`."""
        return self.authenticated >= self.max_connections

    def admit(self, ws: ServerConnection) -> bool:
        """`ws` said a valid hello: it leaves the pool and counts as authenticated, unless the
        server is at `max_connections` (False: refuse it)."""
        if self.full():
            return False
        self._pending.pop(ws, None)
        self.authenticated += 1
        return True

    def release(self) -> None:
        """An authenticated connection closed."""
        self.authenticated -= 1

    def leave(self, ws: ServerConnection) -> None:
        """`ws` is gone (or was admitted): no longer pending."""
        self._pending.pop(ws, None)


def connection_class(admission: Admission) -> type[ServerConnection]:
    """websockets' `ServerConnection`, reporting its accept and its end to `admission`."""

    class AdmittedConnection(ServerConnection):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(transport)
            admission.arrive(self)

        def connection_lost(self, exc: Exception | None) -> None:
            admission.leave(self)
            super().connection_lost(exc)

    return AdmittedConnection
