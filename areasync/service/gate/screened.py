"""The HTTP screens before websockets' request parser, on every websockets port.

`ScreenedConnection` is websockets' server connection as areasync runs it: the port's screens
(`PortScreen`, screens.py) read a request's method before websockets' parser does (methods.py),
judge a request with a body from its head, and read that body only once admitted, handing it on
as a `PostRequest` (a refused one as a `RefusedRequest`, its body never read); until a
WebSocket has shown its credential its messages are bounded by `HELLO_BYTES`; its aborts are
resets (`sockets.ResettingTransport`). It relies on websockets' Sans-I/O internals, as
sockets.py does: with it, the one place to check when websockets changes.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
from collections.abc import Callable, Generator
from typing import Any, Final, cast

from websockets.asyncio.server import ServerConnection
from websockets.datastructures import Headers
from websockets.exceptions import InvalidMessage
from websockets.http11 import MAX_LINE_LENGTH, Request, parse_headers
from websockets.server import ServerProtocol
from websockets.streams import StreamReader

from areasync.service.gate.methods import ALLOWED_METHODS
from areasync.service.gate.screens import Head, PortScreen, Refusal, Slot
from areasync.service.gate.sockets import ResettingTransport

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


def answering(ws: ServerConnection) -> bool:
    """Whether `ws`'s request is in and its answer is the server's own prompt work: a request
    head (a WebSocket upgrade, a page, a refusal), not a body route's request (`PostRequest`),
    whose answer runs an action."""
    request = ws.request
    return request is not None and not isinstance(request, PostRequest)


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
