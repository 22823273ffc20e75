"""Handing an accepted WebSocket from the front process to a session worker, both ends.

With `serve --workers N` the front (`areasync/front/`) accepts every connection, completes
the WebSocket upgrade and reads the client's `hello` itself, then passes the socket's file
descriptor to the worker holding the session (`socket.send_fds` over the worker's side
channel, a `SOCK_SEQPACKET` socketpair: one packet is one hand-off, the descriptor riding
with it). The worker wraps the descriptor in a websockets connection that is already OPEN and
serves it exactly as a connection of its own from the welcome on. No WebSocket frame crosses
the front after that: it keeps no reference to the socket.

Everything the hand-off relies on beneath websockets' documented API is here (as `gate/sockets.py`
and `gate/screened.py` hold the rest), checked against websockets 17:

* the front's connection stops feeding its bytes to websockets once the upgrade is done
  (`DivertingConnection.data_received`), so that the frames after the hello are still raw
  bytes it can pass on whole; `client_frame` parses the hello's frame from them (RFC 6455,
  masked, one data frame of at most `HELLO_BYTES`);
* `detach` takes the socket away from asyncio without a byte written (no close frame, no FIN:
  the worker's descriptor keeps the connection open);
* `adopt` builds the worker's connection: `ServerProtocol(state=OPEN)`, a websockets `Server`
  with no listening socket to own it, and `loop.connect_accepted_socket`; the bytes the front
  read past the hello are fed to it before any byte from the socket.

The header (`Handoff`) carries the session id, the role the front verified, the hello with
its token removed, and those bytes: never a token, and never the request's query or headers
(a client may put a token there). Bytes a client sends before its welcome beyond the hello are
bounded (`REST_BYTES`): the protocol's clients send nothing until welcomed.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import socket
from collections.abc import Awaitable, Callable
from typing import Any, Final

import msgspec
from websockets.asyncio.server import Server, ServerConnection
from websockets.datastructures import Headers
from websockets.http11 import Request
from websockets.protocol import State
from websockets.server import ServerProtocol

from areasync.protocol.frames import Role
from areasync.service.gate.screened import HELLO_BYTES, ScreenedConnection
from areasync.service.gate.sockets import ResettingTransport

__all__ = [
    "HELLO_BYTES",
    "MAX_PACKET",
    "REST_BYTES",
    "BadFrame",
    "DivertingConnection",
    "Handoff",
    "McpCredential",
    "adopt",
    "client_frame",
    "decode",
    "detach",
    "encode",
    "peer_gone",
    "receive",
    "salted",
    "send",
]

logger = logging.getLogger("areasync.service")

# What a client may send after its hello and before its welcome; more is refused.
REST_BYTES: Final = 64 * 1024
# A hand-off packet: the header, the hello and the bytes after it (within the default
# `SO_SNDBUF` of a Unix socket, 208 KiB on Linux).
MAX_PACKET: Final = HELLO_BYTES + REST_BYTES + 4096

_OP_TEXT, _OP_BINARY, _OP_CLOSE, _OP_PING, _OP_PONG = 0x1, 0x2, 0x8, 0x9, 0xA


class McpCredential(msgspec.Struct, frozen=True):
    """The credential the front verified on an MCP connection's first request: its role, and
    SHA-256(salt + token), by which the worker tells the same token on later requests (it
    never learns the admin token itself)."""

    role: Role
    salt: bytes
    proof: bytes


def salted(salt: bytes, token: str) -> bytes:
    """An `McpCredential`'s proof of `token`."""
    return hashlib.sha256(salt + token.encode()).digest()


class Handoff(msgspec.Struct, frozen=True, kw_only=True):
    """One accepted socket's hand-off: what the worker needs to serve it from the welcome."""

    session_id: str
    role: Role  # verified by the front
    # A WebSocket's: empty for an HTTP connection handed unread (gaia2-cli's port, MCP).
    hello: bytes = b""  # the hello's payload, its token removed
    text: bool = False  # the hello came as a text (JSON) frame, else binary (msgpack)
    rest: bytes = b""  # what the client sent after its hello frame, as it came (masked frames)
    path: str = ""  # the request's path, its query removed (and an OpenEnv token)
    openenv: bool = False  # OpenEnv's /ws: no hello; `role` on `session_id` ("": fresh ones)
    # An HTTP connection accepted on `session_id`'s gaia2-cli port (`--gaia2-ports`), this
    # number: no byte of it read, served by the worker's adapter from the first.
    gaia2_port: int | None = None
    # An HTTP connection accepted on the shared gaia2-cli port (`--gaia2-port`), whose first
    # request names `session_id` with a token of `role` (verified by the front): no byte of
    # it read, its first request served by the worker's adapter, then closed.
    gaia2_shared: bool = False
    # An HTTP connection accepted on the MCP port for `session_id`, with the credential its
    # first request carried (verified by the front): no byte of it read, served by the
    # worker's MCP port from the first.
    mcp: McpCredential | None = None


_ENCODER = msgspec.msgpack.Encoder()
_DECODER = msgspec.msgpack.Decoder(Handoff)


def encode(handoff: Handoff) -> bytes:
    return _ENCODER.encode(handoff)


def decode(data: bytes) -> Handoff:
    return _DECODER.decode(data)


# -- the front: the hello's frame, read raw ---------------------------------------------------


class BadFrame(Exception):
    """The bytes are not a client's WebSocket frame the hello may come in."""


def client_frame(data: bytes | bytearray | memoryview) -> tuple[int, bytes, int] | None:
    """The first client frame in `data`: (opcode, unmasked payload, bytes it took), or None
    while it is incomplete. Raises BadFrame for a frame a hello cannot be: unmasked, with
    reserved bits, fragmented, or longer than `HELLO_BYTES`."""
    if len(data) < 2:
        return None
    first, second = data[0], data[1]
    if first & 0x70:
        raise BadFrame("reserved bits set (no extension was negotiated)")
    if not second & 0x80:
        raise BadFrame("a client's frame must be masked (RFC 6455, 5.1)")
    opcode = first & 0x0F
    if not first & 0x80 or opcode == 0:
        raise BadFrame("the hello must be one unfragmented frame")
    size = second & 0x7F
    at = 2
    if size == 126:
        if len(data) < 4:
            return None
        size, at = int.from_bytes(data[2:4], "big"), 4
    elif size == 127:
        if len(data) < 10:
            return None
        size, at = int.from_bytes(data[2:10], "big"), 10
    if size > HELLO_BYTES:
        raise BadFrame(f"a frame of {size} bytes before the welcome (at most {HELLO_BYTES})")
    end = at + 4 + size
    if len(data) < end:
        return None
    mask = bytes(data[at : at + 4])
    payload = bytes(data[at + 4 : end])
    if size:
        whole = (mask * (size // 4 + 1))[:size]
        payload = (int.from_bytes(payload, "big") ^ int.from_bytes(whole, "big")).to_bytes(
            size, "big"
        )
    return opcode, payload, end


DATA_OPCODES: Final = frozenset({_OP_TEXT, _OP_BINARY})
SKIPPED_OPCODES: Final = frozenset({_OP_PING, _OP_PONG})
CLOSE_OPCODE: Final = _OP_CLOSE
TEXT_OPCODE: Final = _OP_TEXT


class DivertingConnection(ScreenedConnection):
    """The front's connection: once the upgrade is done, the bytes it receives are kept raw
    in `raw` (not parsed by websockets) until `give_back` or `detach`; reading pauses past
    `HELLO_BYTES + REST_BYTES`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.raw = bytearray()
        self.arrived = asyncio.Event()
        self.diverting = True

    def data_received(self, data: bytes) -> None:
        if self.diverting and self.protocol.state is State.OPEN:
            self.raw += data
            self.arrived.set()
            if len(self.raw) > HELLO_BYTES + REST_BYTES:
                self.transport.pause_reading()
            return
        super().data_received(data)

    def pipelined(self) -> bool:
        """Whether bytes came before the upgrade's response (websockets parsed them already):
        a client of the protocol waits for the response, so this one is refused."""
        return bool(self.protocol.reader.buffer) or bool(self.protocol.events)

    def give_back(self) -> None:
        """Stop diverting: websockets reads the connection again, from what was kept (to
        answer a refused hello with a closing handshake)."""
        if self.diverting:
            self.diverting = False
            kept, self.raw = bytes(self.raw), bytearray()
            if kept:
                super().data_received(kept)
            if not self.transport.is_closing():
                self.transport.resume_reading()


def filtered_connection(base: type[ScreenedConnection]) -> type[DivertingConnection]:
    """`DivertingConnection` with `base`'s screens (`screened.screened_connection`)."""
    return type("DivertingConnection", (DivertingConnection, base), {})


def _raw_transport(ws: ServerConnection) -> asyncio.Transport:
    transport: Any = ws.transport
    if isinstance(transport, ResettingTransport):
        transport = transport.transport
    result: asyncio.Transport = transport
    return result


def detach(ws: DivertingConnection) -> int | None:
    """Take `ws`'s socket away from asyncio: a duplicate of its descriptor (the caller's to
    send and close), and the front's own closed without a byte written. None (nothing done)
    if the upgrade's response is still queued: a peer that has not taken it in, which the
    caller drops."""
    transport = _raw_transport(ws)
    if transport.get_write_buffer_size():
        return None
    transport.pause_reading()
    sock = transport.get_extra_info("socket")
    fd = os.dup(sock.fileno())
    # Closing without a write: the close frame websockets may still try to send is dropped
    # (the transport is closed), and no FIN goes out while the duplicate is open. The plain
    # transport replaces the resetting one, whose abort would set SO_LINGER on the socket
    # the worker now holds.
    ws.diverting = False
    ws.transport = transport
    transport.close()
    return fd


def peer_gone(side: socket.socket) -> bool:
    """Whether the worker's end of a side channel is closed (its process ended): the worker
    never sends on it, so anything to read is the end of the channel."""
    try:
        return side.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


async def send(side: socket.socket, handoff: Handoff, fd: int) -> None:
    """Send `handoff` with `fd` as one packet over a worker's side channel (non-blocking:
    waits for room on the event loop)."""
    loop = asyncio.get_running_loop()
    packet = encode(handoff)
    if len(packet) > MAX_PACKET:
        raise ValueError(f"a hand-off of {len(packet)} bytes exceeds MAX_PACKET")
    side.setblocking(False)
    while True:
        try:
            socket.send_fds(side, [packet], [fd])
            return
        except BlockingIOError:
            ready: asyncio.Future[None] = loop.create_future()
            loop.add_writer(side.fileno(), ready.set_result, None)
            try:
                await ready
            finally:
                loop.remove_writer(side.fileno())


def receive(side: socket.socket) -> tuple[Handoff, socket.socket] | None:
    """One hand-off from the side channel (non-blocking: None when none waits), its socket.
    Raises EOFError once the front's end is closed."""
    try:
        data, fds, _flags, _addr = socket.recv_fds(side, MAX_PACKET, 1)
    except BlockingIOError:
        return None
    if not data and not fds:
        raise EOFError("the front closed the side channel")
    if len(fds) != 1:
        for fd in fds:
            os.close(fd)
        logger.error("a hand-off came with %d descriptors; dropped", len(fds))
        return None
    sock = socket.socket(fileno=fds[0])
    try:
        return decode(data), sock
    except msgspec.DecodeError:
        sock.close()
        logger.error("a hand-off header did not decode; its socket was dropped")
        return None


# -- the worker: an accepted socket as an OPEN websockets connection ---------------------------


class _AdoptedConnection(ServerConnection):
    """A connection whose upgrade was done by the front: OPEN from the start; the bytes the
    front read past the hello come first; its aborts are resets (`sockets.ResettingTransport`)."""

    rest: bytes = b""
    handoff: Handoff

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(ResettingTransport(transport))  # type: ignore[arg-type]
        if self.rest:
            self.data_received(self.rest)


async def _never() -> asyncio.Server:
    raise RuntimeError("an adopting server listens on nothing")


def adopting_server(handler: Callable[[ServerConnection], Awaitable[None]], logger: Any) -> Server:
    """A websockets `Server` that listens on nothing: it owns the connections `adopt` makes
    and runs `handler` for each, as `serve` runs its handler after a handshake."""

    async def run(connection: ServerConnection) -> None:
        try:
            server.all_connections.add(connection)
            connection.start_keepalive()
            async with connection:
                await handler(connection)
        except Exception:
            connection.logger.error("connection handler failed", exc_info=True)
        finally:
            server.all_connections.discard(connection)
            task = asyncio.current_task()
            if task is not None:
                server.handler_tasks.discard(task)

    server = Server(_never, run, logger)
    return server


async def adopt(
    server: Server,
    sock: socket.socket,
    handoff: Handoff,
    *,
    max_size: int,
    max_queue: int,
    write_limit: int,
    ping_interval: float | None,
    close_timeout: float,
) -> ServerConnection:
    """`sock` (handed over with `handoff`) as an OPEN connection of `server`, whose handler
    then runs for it (`handoff_of` gives it the hand-off)."""
    loop = asyncio.get_running_loop()
    protocol = ServerProtocol(state=State.OPEN, max_size=max_size, logger=server.logger)
    connection = _AdoptedConnection(
        protocol,
        server,
        ping_interval=ping_interval,
        ping_timeout=None,
        close_timeout=close_timeout,
        max_queue=max_queue,
        write_limit=write_limit,
    )
    connection.rest = handoff.rest
    connection.handoff = handoff
    connection.request = Request(handoff.path, Headers())  # frames follow; no request comes
    connection.request_rcvd.set_result(None)
    sock.setblocking(False)
    await loop.connect_accepted_socket(lambda: connection, sock=sock)
    return connection


def handoff_of(connection: ServerConnection) -> Handoff:
    """The hand-off an adopted connection came with."""
    assert isinstance(connection, _AdoptedConnection)
    return connection.handoff
