"""What a connection owes its client, and the writing of it: stream items and replies, in order.

A connection's outbox is a cursor into its session's stream (`position`: the last seq handed
to the socket; see hub.py) plus a short queue of replies, each to be written after the stream
items that existed when it was made (the AGENT event of a tool call reaches the agent before
its result). While the socket keeps up, the writing is done synchronously by `flush` (called by
the hub after appends and after each reply: no task switch per frame); the writer task (`run`)
only takes over when the socket is behind, and waits for it to drain. Whatever is due goes out
in one write (`frames.Messages`); to a client that said `hello{batch: true}` it goes as `batch`
messages (the welcome always alone, first).
"""

from __future__ import annotations

import collections
import enum
from collections.abc import Callable
from typing import TYPE_CHECKING

import anyio
from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

from areasync.protocol.codec import Encoding, encode_server_bytes
from areasync.protocol.errors import ProtocolError
from areasync.protocol.frames import Error, ServerFrame, error_frame
from areasync.service.fanout.frames import WRITE_BYTES, Messages
from areasync.service.gate import sockets

if TYPE_CHECKING:
    from areasync.service.config import ServiceConfig
    from areasync.service.fanout.hub import StreamHub
    from areasync.service.metrics import Metrics


class Writing(enum.Enum):
    """Whether the outbox still writes."""

    ON = "on"  # writing what is due
    CLOSING = "closing"  # a close is under way: nothing more is written but what it flushes
    DONE = "done"  # the writer stopped: the socket takes no more


class Outbox:
    """The stream cursor and reply queue of one connection, and their writer."""

    def __init__(
        self,
        ws: ServerConnection,
        config: ServiceConfig,
        metrics: Metrics,
        *,
        overfull: Callable[[str], None],
    ) -> None:
        self.ws = ws
        self.config = config
        self.metrics = metrics
        self._overfull = overfull  # too many replies unread: close the connection, saying why
        self.hub: StreamHub | None = None  # the session's, once its hello was accepted
        self.encoding = Encoding.JSON
        self.batch = False
        self.writing = Writing.ON
        # Bytes handed to the socket's transport, for the write-stall sweep (stalls.py): what
        # the client took is this minus what the socket still holds.
        self.bytes_written = 0
        # Stream cursor (see hub.py): the last seq handed to the socket, and the stream's seq
        # when its socket last drained (lag counts only the items appended since).
        self.position = 0
        self.drained_at = 0
        # Replies not yet written: the stream seq each must follow, its encoded payload,
        # whether it must go as a message of its own (the welcome), and how many journal
        # records must be durable before it may go (durable.py; 0 without a journal).
        self._replies: collections.deque[tuple[int, bytes, bool, int]] = collections.deque()
        self.reply_bytes = 0
        self._wake = anyio.Event()
        self._drained = anyio.Event()
        self._scope = anyio.CancelScope()

    def start(self, hub: StreamHub, encoding: Encoding, *, batch: bool, position: int) -> None:
        """Follow `hub` from `position` (the welcome's replay start)."""
        self.hub = hub
        self.encoding = encoding
        self.batch = batch
        self.position = position
        self.drained_at = len(hub.frames)  # replaying the items before it is a backlog, not lag

    def queue(self, frame: ServerFrame, *, after: int | None = None, alone: bool = False) -> None:
        """Queue a reply; it is written after every stream item up to `after` (default: now).

        `alone`: never inside a `batch` (the welcome: clients read it as the first message).
        """
        hub = self.hub
        assert hub is not None
        encoding = self.encoding
        try:
            data = encode_server_bytes(frame, encoding)
        except ProtocolError as exc:  # a value that cannot be encoded: answer with the error
            frame = error_frame(exc, getattr(frame, "id", None))
            data = encode_server_bytes(frame, encoding)
        if type(frame) is Error:
            self.metrics.errors[frame.code] += 1
        # With a journal, it also waits until every record appended so far is durable.
        needs = 0 if hub.gate is None else hub.gate.appended
        self._replies.append((len(hub.frames) if after is None else after, data, alone, needs))
        self.reply_bytes += len(data)
        self.flush()
        config = self.config
        if (
            len(self._replies) > config.max_pending_replies
            or self.reply_bytes > config.max_pending_reply_bytes
        ):
            self._overfull(
                f"slow consumer: {len(self._replies)} replies ({self.reply_bytes} bytes) unread; "
                "read your replies, then reconnect with since"
            )

    @property
    def buffered_bytes(self) -> int:
        """What is held for the client now: the socket's user-space buffer plus the replies
        not yet written."""
        return sockets.buffered(self.ws) + self.reply_bytes

    def pending(self) -> bool:
        """Whether anything may be written now (a reply or item held back by the journal's
        gate is not: the hub flushes again when the gate lets it through)."""
        hub = self.hub
        if hub is None:
            return bool(self._replies)
        replies = self._replies
        if replies and replies[0][0] <= self.position:
            # The reply is next: the items after it wait behind it (a resuming client's
            # welcome, which must come first, with the replay's items already visible). Saying
            # they are due would spin the writer, which writes nothing ahead of the reply and
            # whose drain does not yield on an idle socket: the whole server would freeze.
            return self._durable(replies[0][3])
        return self.position < hub.seq

    def _durable(self, needs: int) -> bool:
        gate = self.hub.gate if self.hub is not None else None
        return gate is None or gate.durable >= needs

    def flush(self) -> None:
        """Write everything pending now, if the socket keeps up; never waits.

        If the socket has anything still buffered, the writer task (which waits for it to
        drain) takes over: writing more behind a full buffer would only grow it.
        """
        hub = self.hub
        if self.writing is not Writing.ON or hub is None:
            return
        ws = self.ws
        if not sockets.is_open(ws):
            return
        if sockets.buffered(ws) == 0:
            self.drained_at = len(hub.frames)
            self.write_some()
        if self.pending() or sockets.buffered(ws) > 0:
            self._wake.set()

    def write_some(self) -> None:
        """Write what is due, in order, in one write of at most about WRITE_BYTES: a reply once
        every stream item that existed when it was made has gone out; stream items otherwise."""
        hub = self.hub
        assert hub is not None
        replies = self._replies
        position = self.position
        seq = hub.seq
        text = self.encoding is Encoding.JSON
        batch = self.batch
        if not replies:
            # The common case (every observer, always): stream items only, and subscribers at
            # the same position are handed the same bytes.
            if position < seq:
                end, _, data = hub.wire_run(
                    position, seq, text=text, batch=batch, budget=WRITE_BYTES
                )
                self.position = end
                self._write(data, end - position)
            return
        frames = hub.frames
        messages = Messages(text=text, batch=batch)
        while True:
            if replies and replies[0][0] <= position and self._durable(replies[0][3]):
                payload = replies[0][1]
                if not messages.fits(len(payload), WRITE_BYTES):
                    break
                alone = replies.popleft()[2]
                self.reply_bytes -= len(payload)
                messages.add(payload, alone=alone)
                continue
            if position >= (min(seq, replies[0][0]) if replies else seq):
                break
            item = frames[position]
            frame = item.frame_for(text)
            if not messages.fits(len(frame), WRITE_BYTES):
                break
            position += 1
            if batch:
                messages.add(item.payload(text))
            else:
                messages.add_frame(frame)
        self.position = position
        if messages.count:
            self._write(messages.data(), messages.count)

    def _write(self, data: bytes, frames: int) -> None:
        sockets.write(self.ws, data)
        self.bytes_written += len(data)
        self.metrics.frames_sent += frames

    async def run(self) -> None:
        """The writer task: write whatever `flush` left; when the socket is behind, wait for
        it, then go on."""
        ws = self.ws
        with self._scope:
            try:
                while True:
                    if not self.pending():
                        self._drained.set()
                        self._drained = anyio.Event()
                        wake = self._wake = anyio.Event()
                        await wake.wait()
                        continue
                    # Wait while the buffer is above its limit (as `ws.send` does), then write:
                    # the buffer never holds more than write_limit + one batch.
                    await sockets.drain(ws)
                    if not sockets.is_open(ws):
                        return  # closing or closed: the reader and closer take it from here
                    assert self.hub is not None
                    self.drained_at = len(self.hub.frames)  # it reads: what is new is no lag
                    self.write_some()
            except (ConnectionClosed, ConnectionError):
                # A peer that resets the TCP connection makes `drain` raise the transport's
                # ConnectionResetError (not websockets' ConnectionClosed): the reader sees the
                # close and ends the connection; the writer just stops.
                pass
            finally:
                self.writing = Writing.DONE
                self._drained.set()

    def stop_flushing(self) -> None:
        """A close is under way: `flush` writes no more (the writer task finishes its work)."""
        if self.writing is Writing.ON:
            self.writing = Writing.CLOSING

    async def close(self, *, flush: bool) -> None:
        """Stop writing; with `flush`, first wait (up to `shutdown_grace`) for what is queued
        to be written."""
        if flush:
            with anyio.move_on_after(self.config.shutdown_grace):
                while self.pending() and self.writing is not Writing.DONE:
                    await self._drained.wait()
        # A writer waiting on a full buffer holds no half-written frame (every write is whole
        # frames), so cancelling it loses nothing the client could use.
        self._scope.cancel()
