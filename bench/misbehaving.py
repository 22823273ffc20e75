"""Badly behaved clients, for `bench/stuck.py` and the slow-consumer tests (tests/hardening).

- `RawClient`: a WebSocket client written by hand over a plain TCP socket with a small kernel
  receive buffer, so that it can do what no library does: stop in the middle of a frame, or
  say hello and then never read a byte (the server's buffers fill after a few hundred kB);
- `small_socket`: a connected socket with a small receive buffer, for a websockets client that
  reads slowly.

Every wait is bounded: these clients misbehave on purpose, the tests must not hang with them.
"""

from __future__ import annotations

import asyncio
import base64
import os
import socket
import struct

import anyio
from websockets.frames import Frame, Opcode

from areasync.protocol import Encoding, Hello, Role, encode_client_frame

SMALL_RCVBUF = 4096


def client_frame(payload: bytes, *, text: bool = True) -> bytes:
    """One complete, masked client frame (RFC 6455: clients mask)."""
    return Frame(Opcode.TEXT if text else Opcode.BINARY, payload).serialize(mask=True)


def partial_frame(claimed: int = 1000, sent: int = 10) -> bytes:
    """The start of a masked text frame announcing `claimed` bytes, of which `sent` follow."""
    header = bytes([0x81, 0x80 | 126]) + struct.pack("!H", claimed) + os.urandom(4)
    return header + os.urandom(sent)


def hello_frame(token: str, role: Role = Role.OBSERVER) -> bytes:
    """A complete client `hello` frame (JSON)."""
    data = encode_client_frame(Hello(id=0, role=role, token=token), Encoding.JSON)
    return client_frame(data.encode())


class RawClient:
    """A hand-made WebSocket client on a non-blocking socket (see the module docstring)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.loop = asyncio.get_running_loop()

    @classmethod
    async def open(cls, port: int, session: str, *, rcvbuf: int = SMALL_RCVBUF) -> RawClient:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        sock.setblocking(False)
        client = cls(sock)
        with anyio.fail_after(10):
            await client.loop.sock_connect(sock, ("127.0.0.1", port))
            key = base64.b64encode(os.urandom(16)).decode()
            request = (
                f"GET /sessions/{session} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
            )
            await client.send(request.encode())
            response = b""
            while b"\r\n\r\n" not in response:
                chunk = await client.loop.sock_recv(sock, 1)  # byte by byte: no frame eaten
                if not chunk:
                    raise ConnectionError("closed during the handshake")
                response += chunk
        if not response.startswith(b"HTTP/1.1 101"):
            raise ConnectionError(response.decode(errors="replace"))
        return client

    async def send(self, data: bytes) -> None:
        with anyio.fail_after(10):
            await self.loop.sock_sendall(self.sock, data)

    async def read_until_closed(self, limit: float = 10.0, *, close_frame: bool = False) -> bytes:
        """Everything the server sends until it closes the TCP connection (with `close_frame`:
        until its close frame has arrived, which a peer that never answers it waits for)."""
        received = b""
        with anyio.fail_after(limit):
            while not (close_frame and close_code(received) is not None):
                try:
                    chunk = await self.loop.sock_recv(self.sock, 65536)
                except ConnectionResetError:
                    return received
                if not chunk:
                    return received
                received += chunk
        return received

    def reset(self) -> None:
        """Close with a TCP reset (SO_LINGER 0), as a crashed peer or a dropped NAT entry does."""
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.sock.close()

    def close(self) -> None:
        self.sock.close()


def close_code(data: bytes) -> int | None:
    """The code of the close frame in `data` (a stream of unmasked server frames), if any."""
    position = 0
    while position + 2 <= len(data):
        opcode = data[position] & 0x0F
        length = data[position + 1] & 0x7F
        start = position + 2
        if length == 126:
            length = struct.unpack("!H", data[start : start + 2])[0]
            start += 2
        elif length == 127:
            length = struct.unpack("!Q", data[start : start + 8])[0]
            start += 8
        if opcode == Opcode.CLOSE.value and length >= 2:
            code: int = struct.unpack("!H", data[start : start + 2])[0]
            return code
        position = start + length
    return None


async def small_socket(port: int, rcvbuf: int = SMALL_RCVBUF) -> socket.socket:
    """A TCP socket connected to 127.0.0.1:`port`, with a small kernel receive buffer (for
    `websockets.connect(sock=...)`): a client that reads slowly then fills the server's buffers
    after a few hundred kB rather than the megabytes loopback would otherwise absorb."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.setblocking(False)
    with anyio.fail_after(10):
        await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", port))
    return sock
