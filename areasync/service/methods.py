"""HTTP methods: GET and HEAD are served; every other method gets 405 with `Allow: GET, HEAD`.

The answer itself is `HttpRoutes`' (the first check of every request). This module makes sure
such requests reach it. websockets' request parser reads any method, but refuses a request that
has a body (`Content-Length` other than 0, or `Transfer-Encoding`) by closing the connection
without a word, and a browser's POST (a form, a `fetch` with a body) always has one. So
`ScreenedConnection` puts a screen in front of websockets' parser: when a request's method is
neither GET nor HEAD, the screen reads the request line and headers itself, ignores the body,
and hands websockets the request, which `process_request` answers 405; everything the client
sends after it is discarded. GET and HEAD requests (and anything that does not start like an
HTTP request) go to websockets' parser untouched, byte for byte.

This relies on websockets' Sans-I/O protocol (`protocol.parser`, `protocol.reader`,
`protocol.events`), checked against websockets 17; tests/hardening/test_browsers.py sends POST, PUT,
DELETE, OPTIONS and an unknown method, with and without a body, over a raw socket.
"""

from __future__ import annotations

import re
from collections.abc import Generator
from typing import Any

from websockets.asyncio.server import ServerConnection
from websockets.datastructures import Headers
from websockets.exceptions import InvalidMessage
from websockets.http11 import MAX_LINE_LENGTH, Request, parse_headers
from websockets.server import ServerProtocol
from websockets.streams import StreamReader

ALLOWED_METHODS: tuple[str, ...] = ("GET", "HEAD")
ALLOW = ", ".join(ALLOWED_METHODS)

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


def _screen(protocol: ServerProtocol, parser: Generator[None]) -> Generator[None]:
    method = yield from _peek_method(protocol.reader)
    if method is None or method.decode() in ALLOWED_METHODS:
        # From here on websockets' own parser runs alone (no extra hop per frame); it is
        # already started and resumes where it waits, on the data that woke us.
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
        protocol.handshake_exc = InvalidMessage("did not receive a valid HTTP request")
        protocol.handshake_exc.__cause__ = exc
        protocol.send_eof()
        protocol.parser = protocol.discard()
        next(protocol.parser)
        yield
        return
    path = parts[1].decode("ascii", "replace")
    protocol.events.append(Request(path, headers, method.decode()))
    # process_request answers 405, then websockets swaps in its discarding parser; until then
    # the body (of any size) is dropped as it comes.
    while True:
        protocol.reader.discard()
        yield


class ScreenedConnection(ServerConnection):
    """websockets' server connection with the method screen in front of its request parser."""

    def __init__(self, protocol: ServerProtocol, *args: Any, **kwargs: Any) -> None:
        protocol.parser = _screen(protocol, protocol.parser)
        next(protocol.parser)  # run up to its first wait for data (nothing is consumed)
        super().__init__(protocol, *args, **kwargs)
