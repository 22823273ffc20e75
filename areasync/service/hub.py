"""Fan-out of a session's stream: encode each item once, hand every subscriber the same bytes.

The session's `StreamLog` keeps every item for the session's life (replay needs it), so a
subscriber needs no queue of its own: it is a *cursor* into the log (`position`, the last seq
handed to its socket) plus its own short queue of replies. Appending an item costs the session
one `WireFrame` and, per subscriber, a comparison; it never waits for anyone. Once the
synchronous stretch that appended items is over (`call_soon`), the hub asks every subscriber to
`flush`: a subscriber whose socket keeps up writes everything new in one write, right there, with
no task switch; one whose socket is behind leaves it to its own writer task, which waits for the
socket to drain (see `connection.py`).

Encode once, all the way down: a server's WebSocket frames are unmasked, and compression is off
(see `server.py`), so the complete frame - header and payload - is the same bytes for every
subscriber of an encoding. `WireFrame` builds it once (with websockets' own `Frame.serialize`);
a writer then hands the socket a join of ready frames in one write. Per delivery the server does a
list append, whatever the payload.

Slow consumers: a subscriber more than `max_lag` items behind the live stream is told to go
(`overflow`, which closes it with 4008); it reconnects with `since` and loses nothing, because
the log still has everything. Items replayed after a reconnect are not lag: the bound counts
from the seq at which the subscriber attached, so a dashboard can replay a 50,000-item session
without being evicted, while one that stops reading is gone after `max_lag` new items. Memory
per subscriber is therefore its cursor, its reply queue (bounded separately) and what the
socket's user-space buffer holds (`write_limit` plus one batch of at most 256 KiB), whatever
the client does.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Final, Protocol

import msgspec
from websockets.frames import Frame, Opcode

from areasync.loop.stream import StreamLog
from areasync.protocol.codec import EncodedFrame, Encoding
from areasync.protocol.frames import EventItem, StreamItem
from areasync.service.metrics import Metrics

logger = logging.getLogger("areasync.service")

_json_encode: Final = msgspec.json.Encoder().encode


def ws_frame(payload: bytes, *, text: bool) -> bytes:
    """`payload` as one complete WebSocket data frame from a server (unmasked, uncompressed)."""
    return Frame(Opcode.TEXT if text else Opcode.BINARY, payload).serialize(mask=False)


class WireFrame(EncodedFrame):
    """A stream item with its wire forms, each made at most once, on first use.

    `text_frame` / `binary_frame` are whole WebSocket frames (JSON text, msgpack) ready for the
    socket: every subscriber of an encoding is sent these very bytes.
    """

    __slots__ = ("_binary_frame", "_text_frame")

    _text_frame: bytes | None
    _binary_frame: bytes | None

    def __init__(self, frame: StreamItem) -> None:
        super().__init__(frame)
        self._text_frame = None
        self._binary_frame = None

    @property
    def text_frame(self) -> bytes:
        if self._text_frame is None:
            # Stream items hold plain records built by the bridge: always encodable. JSON is
            # encoded straight to UTF-8 bytes (EncodedFrame.json would make a str first).
            self._text_frame = ws_frame(_json_encode(self.frame), text=True)
        return self._text_frame

    @property
    def binary_frame(self) -> bytes:
        if self._binary_frame is None:
            self._binary_frame = ws_frame(self.msgpack, text=False)
        return self._binary_frame

    def wire(self, encoding: Encoding) -> bytes:
        """The complete WebSocket frame for subscribers of `encoding`."""
        return self.text_frame if encoding is Encoding.JSON else self.binary_frame


class Subscriber(Protocol):
    """What the hub needs from a connection."""

    position: int  # the last seq handed to the socket
    live_from: int  # the stream's seq when it attached; replay before it is not lag

    def on_item(self, seq: int, item: StreamItem) -> None:
        """A new item is in the log (called synchronously, inside the append)."""

    def overflow(self, lag: int) -> None:
        """The subscriber is `lag` items behind, above the bound: it must go."""

    def flush(self) -> None:
        """Write what is pending, now, if the socket keeps up (never waits)."""


class StreamHub:
    """The encoded stream of one session and the subscribers following it."""

    def __init__(
        self, log: StreamLog[StreamItem], *, max_lag: int, metrics: Metrics | None = None
    ) -> None:
        self.max_lag = max_lag
        self.metrics = metrics
        self.frames: list[WireFrame] = [WireFrame(item) for item in log.items]
        # A dict as an ordered set: delivery order is attach order, which keeps runs readable.
        self._subscribers: dict[Subscriber, None] = {}
        self.events = sum(1 for item in log.items if isinstance(item, EventItem))
        self._flush_scheduled = False
        log.listeners.append(self._on_append)

    @property
    def seq(self) -> int:
        """The seq of the last item in the stream."""
        return len(self.frames)

    @property
    def subscribers(self) -> list[Subscriber]:
        return list(self._subscribers)

    def subscribe(self, subscriber: Subscriber) -> None:
        self._subscribers[subscriber] = None

    def unsubscribe(self, subscriber: Subscriber) -> None:
        self._subscribers.pop(subscriber, None)

    def _on_append(self, seq: int, item: StreamItem) -> None:
        self.frames.append(WireFrame(item))
        if isinstance(item, EventItem):
            self.events += 1
        if self.metrics is not None:
            self.metrics.stream_items += 1
        limit = self.max_lag
        # A copy: a subscriber may unsubscribe (overflow) while we iterate.
        for subscriber in tuple(self._subscribers):
            lag = seq - max(subscriber.position, subscriber.live_from)
            if lag > limit:
                self.unsubscribe(subscriber)
                subscriber.overflow(lag)
            else:
                subscriber.on_item(seq, item)
        if not self._flush_scheduled:
            # Items appended in one synchronous stretch (a tick, a jump, a tool call) go out
            # together, once the stretch is over: one write per subscriber, not one per item.
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_scheduled = False
        for subscriber in tuple(self._subscribers):
            try:
                subscriber.flush()
            except Exception:  # one broken subscriber must not hold up the others
                logger.exception("writing to %r failed", subscriber)
