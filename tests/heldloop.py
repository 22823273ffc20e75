"""The event loop held by a test, its clock moved on meanwhile: a busy server, without waiting.

A server whose loop is held (a busy machine, a long synchronous stretch) finds, when it runs
again, both the bytes that arrived meanwhile and the deadlines that passed. `HeldLoop` makes
that moment without sleeping: the test holds the loop simply by not awaiting, and `hold(s)`
moves the loop's clock (`loop.time`, which asyncio's and anyio's timers read) `s` seconds on,
as if the loop had been held that long. The clock stays moved on until the `with` ends, so
what a test starts inside it (a server) must be torn down inside it too.
"""

from __future__ import annotations

import asyncio
import fcntl
import socket
import struct
import time
from types import TracebackType

import anyio

from areasync.service.gate.admission import Admission
from bench.misbehaving import RawClient, close_code
from tests.waiting import WITHIN_S, eventually

_SIOCOUTQ = 0x5411  # Linux: bytes in a socket's send queue, not acknowledged by the peer


class HeldLoop:
    """The running loop's clock, moved on by `hold` (module docstring)."""

    def __init__(self) -> None:
        self.loop = asyncio.get_running_loop()
        self._real = self.loop.time
        self.ahead = 0.0

    def __enter__(self) -> HeldLoop:
        self.loop.time = lambda: self._real() + self.ahead  # type: ignore[method-assign]
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        del self.loop.time

    def hold(self, seconds: float) -> None:
        """The loop (not awaited meanwhile) has been held `seconds`: its clock moves on."""
        self.ahead += seconds


def delivered(sock: socket.socket) -> None:
    """Wait, without the loop, until the peer's kernel has taken all `sock` sent (loopback:
    at once, or within the kernel's own softirq)."""
    give_up = time.monotonic() + WITHIN_S
    while struct.unpack("i", fcntl.ioctl(sock.fileno(), _SIOCOUTQ, b"\0\0\0\0"))[0]:
        assert time.monotonic() < give_up, "the peer's kernel took nothing of what was sent"


async def first_frame_while_held(
    held: HeldLoop,
    port: int,
    admission: Admission,
    session: str,
    data: bytes,
    *,
    past: float,
    stalls: bool = False,
) -> bytes:
    """Open a WebSocket to `session` on `port` and, once the server awaits its hello
    (`admission`), hold the loop `past` seconds (past the hello deadline): `data`, the first
    bytes, reach the server's kernel as the loop runs again, after it took the deadline's turn
    and before it read the socket (a timer ahead of the deadline's sends them). `stalls`: the
    client then sends nothing more, and the loop is held `past` seconds again once the server
    has read `data`. What the server sends: up to its welcome, or up to its close."""
    client = await RawClient.open(port, session)
    try:
        await eventually(lambda: admission.idle == 1, what="the server awaiting the hello")

        def arrive() -> None:
            assert client.sock.send(data) == len(data)
            delivered(client.sock)

        held.hold(past)
        held.loop.call_at(0.0, arrive)  # due before the deadline, so run just before it
        if stalls:
            await eventually(lambda: admission.idle == 0, what="the server reading the bytes")
            held.hold(past)
        received = b""
        with anyio.fail_after(WITHIN_S):
            while b'"welcome"' not in received and close_code(received) is None:
                chunk = await client.loop.sock_recv(client.sock, 65536)
                if not chunk:
                    break
                received += chunk
        return received
    finally:
        client.close()
