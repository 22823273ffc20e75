"""Bytes on the wire: WebSocket frames built once, batching, and the socket below websockets.

Everything in the service that knows what a WebSocket frame looks like, how frames due together
become one write (or one `batch` message), or what websockets keeps beneath its documented API
(its transport, its protocol state, its buffer's drain, its pending pings, its protocol
callbacks, its request parser: the HTTP method screen of methods.py) is here, so that the rest
of the service talks to a socket only through websockets' documented API and the functions
below. When websockets changes its internals, this is the one module to check.

Encode once, all the way down: a server's WebSocket frames are unmasked, and compression is off
(see `server.py`), so the complete frame - header and payload - is the same bytes for every
subscriber of an encoding. `WireFrame` builds it once; a writer hands the socket a run of ready
frames in one write. Every write is complete WebSocket messages: websockets' own keepalive and
close frames interleave with them whole.

Batching: `Messages` gathers what is due into the bytes of one write, each payload a message of
its own or, for a client that said `hello{batch: true}`, grouped into `batch` messages of up to
`BATCH_BYTES` (a payload marked `alone`, the welcome, always goes as itself). The stream hub's
shared runs and a connection's interleaving of replies with stream items both build their bytes
with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import re
import socket
import struct
import sys
from collections.abc import Callable, Generator
from typing import Any, Final, cast

from websockets.asyncio.server import ServerConnection
from websockets.datastructures import Headers
from websockets.exceptions import InvalidMessage
from websockets.http11 import MAX_LINE_LENGTH, Request, parse_headers
from websockets.protocol import State
from websockets.server import ServerProtocol
from websockets.streams import StreamReader

from areasync.protocol.codec import EncodedFrame, Encoding, batch_parts, encode_server_bytes
from areasync.protocol.frames import StreamItem
from areasync.service.gate.screens import Head, PortScreen, Refusal, Slot
from areasync.service.http.methods import ALLOWED_METHODS

if sys.platform == "linux":
    import fcntl
    import termios

    _SIOCOUTQ: int | None = termios.TIOCOUTQ  # the same ioctl as SIOCOUTQ on Linux
    _FIONREAD: int | None = termios.FIONREAD  # SIOCINQ: bytes in the receive queue
else:  # pragma: no cover - elsewhere only the user-space buffer counts
    fcntl = None
    _SIOCOUTQ = None
    _FIONREAD = None

# A write hands the socket at most about this many bytes (more only for one frame that is larger
# on its own).
WRITE_BYTES: Final = 256 * 1024
# A `batch` message holds at most this many bytes of frames (a larger frame goes alone): it
# amortises a message's cost over tens of frames already, and a client whose link breaks
# mid-message loses no more than this much progress.
BATCH_BYTES: Final = 16 * 1024

_JSON: Final = Encoding.JSON
_MSGPACK: Final = Encoding.MSGPACK

# -- frames ------------------------------------------------------------------------------------


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

    def frame_for(self, text: bool) -> bytes:
        """The complete WebSocket frame, text (JSON) or binary (msgpack)."""
        return self.text_frame if text else self.binary_frame

    def payload(self, text: bool) -> memoryview:
        """The encoded item alone (no WebSocket header), without a copy: for a `batch`."""
        frame = self.text_frame if text else self.binary_frame
        return memoryview(frame)[_header_size(frame) :]


# -- batching ----------------------------------------------------------------------------------


class Messages:
    """The bytes of one write: whole WebSocket messages, in the order their payloads are added.

    With `batch`, consecutive payloads are grouped into `batch` messages of up to `BATCH_BYTES`
    (a group of one goes as the frame itself); a payload added `alone` is a message of its own
    either way. `size` is the bytes added so far (what a write budget is checked against) and
    `count` the payloads added.
    """

    __slots__ = ("_group", "_group_size", "_pieces", "batch", "count", "messages", "size", "text")

    def __init__(self, *, text: bool, batch: bool) -> None:
        self.text = text
        self.batch = batch
        self.size = 0
        self.count = 0
        self.messages = 0
        self._pieces: list[bytes | memoryview] = []
        self._group: list[bytes | memoryview] = []
        self._group_size = 0

    def fits(self, size: int, budget: int) -> bool:
        """Whether `size` more bytes stay within `budget` (the first payload always fits)."""
        return not self.count or self.size + size <= budget

    def add_frame(self, frame: bytes) -> None:
        """A complete WebSocket frame (a stream item's, ready made), as its own message."""
        if self._group:
            self._close_group()
        self._pieces.append(frame)
        self.size += len(frame)
        self.count += 1
        self.messages += 1

    def add(self, payload: bytes | memoryview, *, alone: bool = False) -> None:
        """An encoded frame without its WebSocket header: batched unless `alone`."""
        self.size += len(payload)
        self.count += 1
        if self.batch and not alone:
            if self._group and self._group_size + len(payload) > BATCH_BYTES:
                self._close_group()
            self._group.append(payload)
            self._group_size += len(payload)
            return
        if self._group:
            self._close_group()
        self._pieces.append(ws_header(len(payload), text=self.text))
        self._pieces.append(payload)
        self.messages += 1

    def data(self) -> bytes:
        """Everything added, as the bytes to write."""
        self._close_group()
        return b"".join(self._pieces)

    def _close_group(self) -> None:
        """One WebSocket message carrying the gathered payloads: a `batch` frame, or the frame
        itself if there is only one."""
        group = self._group
        if not group:
            return
        text = self.text
        if len(group) == 1:
            self._pieces.append(ws_header(len(group[0]), text=text))
            self._pieces.append(group[0])
        else:
            parts = batch_parts(group, _JSON if text else _MSGPACK)
            size = 0
            for part in parts:
                size += len(part)
            self._pieces.append(ws_header(size, text=text))
            self._pieces.extend(parts)
        self.messages += 1
        self._group = []
        self._group_size = 0


# -- the socket beneath websockets -------------------------------------------------------------


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


def answering(ws: ServerConnection) -> bool:
    """Whether `ws`'s request is in and its answer is the server's own prompt work: a request
    head (a WebSocket upgrade, a page, a refusal), not a body route's request (`PostRequest`),
    whose answer runs an action."""
    request = ws.request
    return request is not None and not isinstance(request, PostRequest)


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


# -- the HTTP screens before websockets' parser (see methods.py, screens.py) ---------------
# They rely on websockets' Sans-I/O protocol (`protocol.parser`, `protocol.reader`,
# `protocol.events`), checked against websockets 17; tests/hardening/test_browsers.py sends POST,
# PUT, DELETE, OPTIONS and an unknown method, with and without a body, over a raw socket, and
# tests/hardening/test_ports.py every screen of every port.

_TOKEN = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,32}")  # an HTTP method (RFC 9110 token)
_LONGEST = 33  # bytes of a request start that must hold "METHOD "


def _peek_method(reader: StreamReader) -> Generator[None, None, bytes | None]:
    """The request's method, without consuming anything; None if it does not start like HTTP."""
    while True:
        buffer = reader.buffer
        end = buffer.find(b" ", 0, _LONGEST)
        if end >= 0:
            method = bytes(buffer[:end])
            return method if _TOKEN.fullmatch(method) else None
        if len(buffer) >= _LONGEST or reader.eof or b"\n" in buffer:
            return None
        yield


def _screen(
    protocol: ServerProtocol,
    parser: Generator[None],
    screen: PortScreen,
    hold: Callable[[Slot], None],
) -> Generator[None]:
    method = yield from _peek_method(protocol.reader)
    if method is None or method.decode() in ALLOWED_METHODS:
        # From here on websockets' own parser runs alone (no extra hop per frame); it is
        # already started and resumes where it waits, on the data that woke us. Its requests
        # carry no body; `process_request` screens their heads (`PortScreen.check`).
        protocol.parser = parser
        next(parser)
        yield
        yield from parser  # not reached: the protocol no longer calls this generator
        return
    try:
        line = yield from protocol.reader.read_line(MAX_LINE_LENGTH, ValueError)
        parts = bytes(line).rstrip(b"\r\n").split(b" ")
        if len(parts) != 3:
            raise ValueError("invalid HTTP request line")
        headers: Headers = yield from parse_headers(protocol.reader.read_line)
    except Exception as exc:
        # Not even a readable request head: close, as websockets does with a malformed request.
        yield from _give_up(protocol, "did not receive a valid HTTP request", exc)
        return
    path = parts[1].decode("ascii", "replace")
    verb = method.decode()
    decision = screen.check(Head(verb, path, tuple(headers.raw_items())))
    if isinstance(decision, Refusal):
        # Refused from its head: the body (of any size) is never read, only dropped as it comes.
        protocol.events.append(RefusedRequest(path, headers, verb, refusal=decision))
    elif decision.slot is not None:
        # A body route's request, admitted (screens.py): exactly its announced length is read,
        # then handed to process_request; its slot is held until the connection ends.
        hold(decision.slot)
        try:
            body = yield from protocol.reader.read_exact(decision.length)
        except EOFError as exc:  # the client left before its body was whole: nothing to answer
            yield from _give_up(protocol, "the request's body ended early", exc)
            return
        protocol.events.append(PostRequest(path, headers, verb, body=bytes(body)))
    else:
        # Not a route with a body: process_request answers 405.
        protocol.events.append(Request(path, headers, verb))
    # websockets then swaps in its discarding parser; until then what follows is dropped.
    while True:
        protocol.reader.discard()
        yield


def _give_up(protocol: ServerProtocol, why: str, exc: BaseException) -> Generator[None]:
    """End a request that cannot be answered, as websockets ends a malformed one."""
    protocol.handshake_exc = InvalidMessage(why)
    protocol.handshake_exc.__cause__ = exc
    protocol.send_eof()
    protocol.parser = protocol.discard()
    next(protocol.parser)
    yield


@dataclasses.dataclass
class PostRequest(Request):
    """A request for a route with a body, admitted by the port's screens, with its body."""

    body: bytes = b""


@dataclasses.dataclass
class RefusedRequest(Request):
    """A request refused from its head by the port's screens (its body never read)."""

    refusal: Refusal = dataclasses.field(default_factory=lambda: Refusal(400, "", ""))


# -- messages before a credential ----------------------------------------------------------

# Until a WebSocket has shown its credential (its hello accepted; OpenEnv's /ws, its URL's token
# checked at the handshake), a message may be at most this many bytes: a hello is a few
# hundred, and a socket nobody has authenticated must not make the server buffer
# `2 x max_frame_bytes` (32 MiB) per frame for it - the pre-hello pool holds hundreds of them,
# and a refused hello's socket is read until its close completes. A larger message is refused
# by websockets, 1009. A client sends nothing larger before its welcome (the protocol's clients
# wait for it).
HELLO_BYTES: Final = 64 * 1024


def admit_messages(ws: ServerConnection) -> None:
    """`ws` has shown its credential: from its next frame on, messages up to its full limit."""
    if isinstance(ws, ScreenedConnection):
        ws.protocol.max_message_size = ws.message_limit


class ScreenedConnection(ServerConnection):
    """websockets' server connection as areasync runs it, on every websockets port: the port's
    screens (`PortScreen`, set by `screened_connection`) in front of websockets' request
    parser, messages of at most `HELLO_BYTES` until `admit_messages`, and a transport whose
    abort is a reset (`ResettingTransport`)."""

    screen: PortScreen | None = None

    def __init__(self, protocol: ServerProtocol, *args: Any, **kwargs: Any) -> None:
        screen = self.screen
        assert screen is not None, "make the class with screened_connection(screen)"
        self._slots: list[Slot] = []
        protocol.parser = _screen(protocol, protocol.parser, screen, self._slots.append)
        next(protocol.parser)  # run up to its first wait for data (nothing is consumed)
        self.message_limit = protocol.max_message_size  # until `admit_messages`: HELLO_BYTES
        if self.message_limit is None or self.message_limit > HELLO_BYTES:
            protocol.max_message_size = HELLO_BYTES
        super().__init__(protocol, *args, **kwargs)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(cast(asyncio.BaseTransport, ResettingTransport(transport)))

    def connection_lost(self, exc: Exception | None) -> None:
        try:
            super().connection_lost(exc)
        finally:
            for slot in self._slots:  # the request with a body is answered, or gone
                slot.release()
            self._slots.clear()


def screened_connection(screen: PortScreen) -> type[ScreenedConnection]:
    """`ScreenedConnection` with `screen`, the screens of its port."""
    return type("ScreenedConnection", (ScreenedConnection,), {"screen": screen})
