"""Admission: sockets that have not said `hello` get a pool of their own, idle ones out first.

Every socket the server accepts is *pending* from the moment it is accepted until its `hello`
is accepted (or it goes away): during the WebSocket handshake (`handshake_timeout`, counted
from the accept), then until its first frame (`hello_timeout`). Pending sockets are counted in
a pool of their own, `max_pending_hellos` (512), apart from authenticated connections, which
alone count against `max_connections` (the handshake's 503; a hello that races past it gets
`capacity` and 4503) - so sockets that never say hello cannot keep out a client that does.

A pending socket is in one of four groups, by what it has done: *idle* (handshake done, not a
byte since), *silent* (connected, not a byte yet), *handshaking* (part of a request received),
*speaking* (bytes of a first frame received: its hello is arriving or being checked). When the
pool is full, a new socket is admitted by evicting the socket that has been longest in the
first of those groups, in that order, whose oldest has been in it at least `EVICTION_GRACE`
(1 s; speaking sockets `SPEAKING_GRACE`, 2 s): an idle one is closed with 4408
(`CloseCode.HELLO_TIMEOUT`, reason "evicted: ..."), one that has no WebSocket yet is dropped
(TCP abort). When no socket may be evicted yet, the new socket is *parked*: accepted but not
read, so it costs no handshake work, and let in, in arrival order, as soon as a place frees
up or becomes evictable; at most `4 x max_pending_hellos` are parked, beyond which a new
socket is dropped.

Only a socket that owes the server bytes is evicted, never one waiting on the server's own
work, which a loaded server is slow to do. Before one is evicted, what it sent is looked at,
not only what the server has read: one whose bytes wait unread in its kernel receive queue
(`sockets.unread`) is moved where reading them will put it (idle to speaking, silent to
handshaking), and one whose request is complete is *answering* (`screened.answering`: the server
owes it its response; it is not evicted, and becomes idle once answered, or is dropped by
`handshake_timeout`; a body route's request, whose answer runs an action, stays evictable).
An attacker gains nothing by this it could not have by sending the first byte of a frame, or a
request, which the server answers as fast as it works. `hello_timeout` follows the same rule: a
socket whose hello waits on the server at its deadline (unread in the kernel, or assembled and
not yet taken: `sockets.unhandled`) is given one more `hello_timeout` to be read
(`Connection._receive_hello`; the front's `_read_hello`), while one that sent nothing, or part
of a frame and stalled, is closed at the deadline.

Why the grace and the queue: an attacker that reopens every socket the server closes would
otherwise make the pool turn over as fast as the server can accept and handshake, saturating
it, and evict a legitimate client before its hello, however promptly it sent it. With them, the
pool turns over at most `max_pending_hellos / EVICTION_GRACE` times a second (512 with the
defaults), the server's work stays bounded, and a client that sends hello at once waits its
turn behind the sockets parked before it, then is never evicted (it is handshaking, then
speaking, by the time an idle socket is). A client parked longer than `handshake_timeout` is
dropped: the pool protects clients as long as an attacker holds fewer than about
`handshake_timeout x max_pending_hellos / EVICTION_GRACE` sockets (2,560 with the defaults),
fewer when the server cannot turn its pool over that fast (a loaded machine).

The pool is tracked from websockets' own connection object (`connection_class`): its
`connection_made` is the moment of accept, `data_received` moves it between groups, and its
`connection_lost` is the end, whatever happens in between (a plain HTTP request, a failed
handshake, a close).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Final

from websockets.asyncio.server import ServerConnection

from areasync.service.gate import screened, sockets

logger = logging.getLogger("areasync.service")

Evict = Callable[[], None]

# A pending socket is not evicted before it has been this long in its state (connected,
# handshake done): a client that says hello at once needs one round trip (with a margin for a
# loaded client), and the pool turns over at most `max_pending_hellos / EVICTION_GRACE` times
# a second, however fast an attacker reconnects.
EVICTION_GRACE: Final = 1.0
# A socket whose first frame has begun to arrive is evicted only after this long in that state:
# a hello takes one round trip; a frame that stops half way (a client that stalls on purpose)
# must not hold its place until hello_timeout while others wait.
SPEAKING_GRACE: Final = 2.0


def _abort(ws: ServerConnection) -> Evict:
    def evict() -> None:
        sockets.abort(ws)

    return evict


class _Entry:
    __slots__ = ("evict", "since")

    def __init__(self, evict: Evict, since: float) -> None:
        self.evict = evict
        self.since = since


_Group = dict[ServerConnection, _Entry]


class Admission:
    """The pending pool, its queue, and the count of authenticated connections (see the module
    docstring).

    Pending sockets are in five groups: *idle* (handshake done, not a byte since), *silent*
    (connected, not a byte yet), *handshaking* (part of a request received), *speaking* (a first
    frame on its way: the hello being read or checked), *answering* (its request is in, its
    response not sent). To make room, the socket evicted is the one that has been longest in
    the first of the others whose oldest has been there `grace` seconds (speaking:
    `SPEAKING_GRACE`), unless it waits on the server (`_waits_on_server`). When none is
    evictable yet, a new socket is *parked*: accepted, but not read (no handshake work) until a
    place frees up, in arrival order; at most `max_waiting` are parked (beyond, a new socket is
    dropped).
    """

    def __init__(
        self,
        max_pending: int,
        max_connections: int,
        *,
        grace: float = EVICTION_GRACE,
        max_waiting: int | None = None,
        clock: Callable[[], float] = time.monotonic,
        unread: Callable[[ServerConnection], int] = sockets.unread,
    ) -> None:
        self.max_pending = max_pending
        self.max_connections = max_connections
        self.grace = grace
        self.max_waiting = 4 * max_pending if max_waiting is None else max_waiting
        self._clock = clock
        self._unread = unread
        # Each dict's insertion order is the order its sockets entered the group.
        self._idle: _Group = {}
        self._silent: _Group = {}
        self._handshaking: _Group = {}
        self._speaking: _Group = {}
        self._answering: _Group = {}  # its request is in: the server owes it its response
        self._groups = (
            self._idle,
            self._silent,
            self._handshaking,
            self._answering,
            self._speaking,
        )
        self._evictable = (
            (self._idle, grace),
            (self._silent, grace),
            (self._handshaking, grace),
            (self._speaking, max(grace, SPEAKING_GRACE)),
        )
        self._waiting: dict[ServerConnection, None] = {}  # parked, in arrival order
        self._timer: asyncio.TimerHandle | None = None
        self.authenticated = 0
        self.evicted = 0  # pending sockets evicted to admit newer ones, since start
        self.parked = 0  # sockets that had to wait for a place, since start
        self.dropped = 0  # sockets dropped because the queue was full, since start

    @property
    def pending(self) -> int:
        return sum(len(group) for group in self._groups)

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    @property
    def idle(self) -> int:
        """Sockets whose hello is awaited (`on_evict`), not a byte of it received yet."""
        return len(self._idle)

    # -- arrivals and places -----------------------------------------------------------------

    def arrive(self, ws: ServerConnection) -> None:
        """A socket was accepted: pending if there is (or can be made) a place, else parked."""
        if not self._waiting and (self.pending < self.max_pending or self._evict_one()):
            self._silent[ws] = _Entry(_abort(ws), self._clock())
            return
        if len(self._waiting) >= self.max_waiting:
            self.dropped += 1
            _abort(ws)()
            return
        self.parked += 1
        self._waiting[ws] = None
        sockets.pause_reading(ws)
        self._schedule()

    def _evict_one(self) -> bool:
        now = self._clock()
        for group, grace in self._evictable:
            while group:
                oldest = next(iter(group))
                entry = group[oldest]
                if now - entry.since < grace:
                    break
                onward = self._waits_on_server(group, oldest)
                if onward is not None:
                    self._move(oldest, onward)
                    continue
                del group[oldest]
                self.evicted += 1
                entry.evict()
                return True
        return False

    def _waits_on_server(self, group: _Group, ws: ServerConnection) -> _Group | None:
        """Where `ws` is, if it has done its part and the server (its loop behind) has not
        done its own yet: its bytes came but wait unread in the kernel (idle: its hello;
        silent: its request), or its request is in and not answered. None: it owes bytes."""
        if group is self._idle:
            return self._speaking if self._unread(ws) else None
        if group is self._silent:
            return self._handshaking if self._unread(ws) else None
        if group is self._handshaking:
            return self._answering if screened.answering(ws) else None
        return None

    def _pump(self) -> None:
        """Let parked sockets in, oldest first, while there are places (or evictions)."""
        # Called by the timer and by `leave`: either way the pending wake-up is replaced.
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        while self._waiting and (self.pending < self.max_pending or self._evict_one()):
            ws = next(iter(self._waiting))
            del self._waiting[ws]
            self._silent[ws] = _Entry(_abort(ws), self._clock())
            sockets.resume_reading(ws)
        self._schedule()

    def _schedule(self) -> None:
        """While sockets are parked, wake when the next pending one becomes evictable."""
        if not self._waiting or self._timer is not None:
            return
        due = [
            next(iter(group.values())).since + grace for group, grace in self._evictable if group
        ]
        delay = max(0.0, min(due) - self._clock()) if due else self.grace
        self._timer = asyncio.get_running_loop().call_later(delay, self._pump)

    # -- a pending socket's progress ---------------------------------------------------------

    def _move(self, ws: ServerConnection, to: _Group) -> None:
        for group in self._groups:
            entry = group.pop(ws, None)
            if entry is not None:
                entry.since = self._clock()
                to[ws] = entry
                return

    def received(self, ws: ServerConnection, *, open: bool) -> None:
        """`ws` received bytes: of its request (`open` False) or of a frame (True)."""
        if open:
            if ws in self._idle:
                self._move(ws, self._speaking)
        elif ws in self._silent:
            self._move(ws, self._handshaking)

    def on_evict(self, ws: ServerConnection, evict: Evict) -> None:
        """`ws` finished its handshake: from now on, evicting it is `evict` (close it, 4408).
        It waits for its hello among the idle, unless its first frame already came."""
        if ws in self._speaking:
            self._speaking[ws].evict = evict
        elif any(ws in group for group in self._groups):
            self._move(ws, self._idle)
            self._idle[ws].evict = evict

    # -- leaving -----------------------------------------------------------------------------

    def full(self) -> bool:
        """True when authenticated connections are at `max_connections`."""
        return self.authenticated >= self.max_connections

    def admit(self, ws: ServerConnection) -> bool:
        """`ws` said a valid hello: it leaves the pool and counts as authenticated, unless the
        server is at `max_connections` (False: refuse it)."""
        if self.full():
            return False
        self.leave(ws)
        self.authenticated += 1
        return True

    def release(self) -> None:
        """An authenticated connection closed."""
        self.authenticated -= 1

    def leave(self, ws: ServerConnection) -> None:
        """`ws` is gone (or was admitted): no longer pending; a parked socket may come in."""
        if ws in self._waiting:
            del self._waiting[ws]
            return
        for group in self._groups:
            if group.pop(ws, None) is not None:
                if self._waiting:
                    self._pump()
                return


def connection_class(
    admission: Admission, base: type[ServerConnection] = ServerConnection
) -> type[ServerConnection]:
    """websockets' `ServerConnection` (or `base`, a subclass of it), reporting its accept and
    its end to `admission`."""

    return sockets.reporting_connection_class(
        arrive=admission.arrive,
        received=lambda ws, open: admission.received(ws, open=open),
        leave=admission.leave,
        base=base,
    )
