"""Fan-out of a session's stream: encode each item once, hand every subscriber the same bytes.

The session's `StreamLog` keeps every item for the session's life (replay needs it), so a
subscriber needs no queue of its own: it is a *cursor* into the log (`position`, the last seq
handed to its socket) plus its own short queue of replies. Appending an item costs the session
one `WireFrame` and nothing per subscriber (only agents, which must take their turn on a
notification, hear of each item); it never waits for anyone. Once the synchronous stretch that
appended items is over (`call_soon`), the hub visits every subscriber once: one more than
`max_lag` items behind is told to go, the others `flush`. A subscriber whose socket keeps up
writes everything new in one write, right there, with no task switch; one whose socket is
behind leaves it to its own writer task, which waits for the socket to drain (see
`connection.py`). A subscriber that keeps up costs one comparison and one write per stretch,
however many items it held.

Encode once, all the way down: a server's WebSocket frames are unmasked, and compression is off
(see `server.py`), so the complete frame - header and payload - is the same bytes for every
subscriber of an encoding. `WireFrame` builds it once; a writer hands the socket a run of ready
frames in one write. Subscribers at the same position are handed the same run: `wire_run`
builds the bytes of a run once (a join of frames, or `batch` messages of up to BATCH_BYTES for
clients that asked for batches, see `protocol/frames.py`) and every other subscriber at that
position gets that very object.

Slow consumers: lag is what the stream outran. A subscriber's *lag* is the number of items
appended since its socket last drained (its user-space buffer at or under websockets'
`write_limit`, seen by `flush` or by its writer) that it has not been handed; more than
`max_lag` and it is told to go (`overflow`, which closes it with 4008). It reconnects with
`since` and loses nothing, because the log still has everything. So a subscriber that stops
reading is gone after `max_lag` new items once its buffers are full, while one that reads keeps
its place however far behind a burst leaves it: a jump that fires 50,000 items in one stretch, or
a replay after a reconnect, is a backlog to work through, not lag (each time its socket drains,
the count starts again). Being behind costs the server nothing per subscriber - the log keeps
every item anyway - so only a socket that stops draining is a reason to close. The check runs
at the end of each synchronous stretch of appends, after the subscriber was given the chance to
write. Memory per subscriber is its cursor, its reply queue (bounded separately) and what the
socket's user-space buffer holds (`write_limit` plus one write of at most `WRITE_BYTES`),
whatever the client does.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Final, Protocol

from areasync.loop.stream import StreamLog
from areasync.protocol.codec import EncodedFrame, Encoding, batch_parts, encode_server_bytes
from areasync.protocol.frames import EventItem, StreamItem
from areasync.service.metrics import Metrics

logger = logging.getLogger("areasync.service")

# A write hands the socket at most about this many bytes (more only for one frame that is larger
# on its own).
WRITE_BYTES: Final = 256 * 1024
# A `batch` message holds at most this many bytes of frames (a larger frame goes alone): it
# amortises a message's cost over tens of frames already, and a client whose link breaks
# mid-message loses no more than this much progress.
BATCH_BYTES: Final = 16 * 1024

_JSON: Final = Encoding.JSON
_MSGPACK: Final = Encoding.MSGPACK
_RUN_CACHE_SIZE: Final = 8


def ws_header(size: int, *, text: bool) -> bytes:
    """The header of a server's WebSocket data frame (FIN, unmasked) with a `size`-byte payload."""
    opcode = 0x81 if text else 0x82
    if size < 126:
        return bytes((opcode, size))
    if size < 0x10000:
        return bytes((opcode, 126)) + size.to_bytes(2, "big")
    return bytes((opcode, 127)) + size.to_bytes(8, "big")


def ws_frame(payload: bytes, *, text: bool) -> bytes:
    """`payload` as one complete WebSocket data frame from a server (unmasked, uncompressed)."""
    return ws_header(len(payload), text=text) + payload


def _header_size(frame: bytes) -> int:
    size = frame[1] & 0x7F
    return 2 if size < 126 else 4 if size == 126 else 10


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
            self._text_frame = ws_frame(encode_server_bytes(self.frame, _JSON), text=True)
        return self._text_frame

    @property
    def binary_frame(self) -> bytes:
        if self._binary_frame is None:
            # Only the frame is kept (not EncodedFrame's msgpack payload as well): the session
            # keeps every item for its life, and the payload is the frame's tail anyway.
            self._binary_frame = ws_frame(encode_server_bytes(self.frame, _MSGPACK), text=False)
        return self._binary_frame

    def wire(self, encoding: Encoding) -> bytes:
        """The complete WebSocket frame for subscribers of `encoding`."""
        return self.text_frame if encoding is _JSON else self.binary_frame

    def payload(self, text: bool) -> memoryview:
        """The encoded item alone (no WebSocket header), without a copy: for a `batch`."""
        frame = self.text_frame if text else self.binary_frame
        return memoryview(frame)[_header_size(frame) :]


def close_group(
    pieces: list[bytes | memoryview], group: list[bytes | memoryview], *, text: bool
) -> None:
    """Append to `pieces` one WebSocket message carrying the payloads in `group`: a `batch`
    frame, or the frame itself if there is only one."""
    if len(group) == 1:
        pieces.append(ws_header(len(group[0]), text=text))
        pieces.append(group[0])
        return
    parts = batch_parts(group, _JSON if text else _MSGPACK)
    size = 0
    for part in parts:
        size += len(part)
    pieces.append(ws_header(size, text=text))
    pieces.extend(parts)


class Subscriber(Protocol):
    """What the hub needs from a connection."""

    position: int  # the last seq handed to the socket
    drained_at: int  # the stream's seq when its socket last drained (or when it attached)
    wants_items: bool  # call on_item for every new item (agents: their turn comes with it)

    def on_item(self, seq: int, item: StreamItem) -> None:
        """A new item is in the log (called synchronously, inside the append)."""

    def overflow(self, lag: int) -> None:
        """The stream outran the subscriber by `lag` items, above the bound: it must go."""

    def flush(self) -> None:
        """Write what is pending, now, if the socket keeps up (never waits); a socket found
        drained moves `drained_at` to the stream's end."""


class StreamHub:
    """The encoded stream of one session and the subscribers following it."""

    def __init__(
        self, log: StreamLog[StreamItem], *, max_lag: int, metrics: Metrics | None = None
    ) -> None:
        self.max_lag = max_lag
        self.metrics = metrics
        self.frames: list[WireFrame] = [WireFrame(item) for item in log.items]
        # Dicts as ordered sets: delivery order is attach order, which keeps runs readable.
        self._subscribers: dict[Subscriber, None] = {}
        self._watchers: dict[Subscriber, None] = {}  # those that want on_item
        self.events = sum(1 for item in log.items if isinstance(item, EventItem))
        self._flush_scheduled = False
        # Runs built by wire_run since the last flush: subscribers at one position share them.
        self._runs: dict[tuple[int, int, bool, bool, int], tuple[int, int, bytes]] = {}
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
        if subscriber.wants_items:
            self._watchers[subscriber] = None

    def unsubscribe(self, subscriber: Subscriber) -> None:
        self._subscribers.pop(subscriber, None)
        self._watchers.pop(subscriber, None)

    def _on_append(self, seq: int, item: StreamItem) -> None:
        self.frames.append(WireFrame(item))
        if type(item) is EventItem:
            self.events += 1
        if self.metrics is not None:
            self.metrics.stream_items += 1
        if self._watchers:
            for watcher in tuple(self._watchers):  # a copy: one may leave while we iterate
                watcher.on_item(seq, item)
        if not self._flush_scheduled:
            # Items appended in one synchronous stretch (a tick, a jump, a tool call) go out
            # together, once the stretch is over: one write per subscriber, not one per item.
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_scheduled = False
        seq = len(self.frames)
        limit = self.max_lag
        for subscriber in tuple(self._subscribers):
            try:
                subscriber.flush()
            except Exception:  # one broken subscriber must not hold up the others
                logger.exception("writing to %r failed", subscriber)
            position = subscriber.position
            drained_at = subscriber.drained_at
            lag = seq - (position if position > drained_at else drained_at)
            if lag > limit:
                self.unsubscribe(subscriber)
                subscriber.overflow(lag)
        # The shared runs served this round; the next starts where it ended. Holding them
        # longer would only keep up to WRITE_BYTES per run alive for nobody.
        self._runs.clear()

    def wire_run(
        self, start: int, stop: int, *, text: bool, batch: bool, budget: int
    ) -> tuple[int, int, bytes]:
        """Stream items start+1 .. at most stop, as wire bytes of at most about `budget` bytes.

        Returns `(end, messages, data)`: the seq of the last item included (at least one is),
        how many WebSocket messages `data` holds, and the bytes to write. Without `batch` each
        item is its own message; with it, items go as `batch` messages of up to BATCH_BYTES (an
        item alone goes as itself). The result is kept for the next subscribers at the same
        position.
        """
        key = (start, stop, text, batch, budget)
        cached = self._runs.get(key)
        if cached is not None:
            return cached
        frames = self.frames
        wires: list[bytes] = []
        size = 0
        end = start
        while end < stop:
            wire = frames[end].text_frame if text else frames[end].binary_frame
            if wires and size + len(wire) > budget:
                break
            wires.append(wire)
            size += len(wire)
            end += 1
        if batch and len(wires) > 1:
            pieces: list[bytes | memoryview] = []
            group: list[bytes | memoryview] = []
            group_size = 0
            messages = 0
            for wire in wires:
                if group and group_size + len(wire) > BATCH_BYTES:
                    close_group(pieces, group, text=text)
                    messages += 1
                    group = []
                    group_size = 0
                group.append(memoryview(wire)[_header_size(wire) :])
                group_size += len(wire)
            close_group(pieces, group, text=text)
            result = (end, messages + 1, b"".join(pieces))
        else:
            result = (end, len(wires), b"".join(wires))
        if len(self._runs) >= _RUN_CACHE_SIZE:
            self._runs.clear()
        self._runs[key] = result
        return result
