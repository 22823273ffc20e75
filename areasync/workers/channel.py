"""The messages between the driver and one worker process, and how they cross the socket.

Each worker has one Unix stream socket to its driver (a `socketpair`: the worker's end is
handed over when it is forked). A message is a small frozen dataclass, sent as a frame: a
4-byte big-endian length, then the message pickled. Pickle, because what a call carries is
whatever the caller's objects are (ARE's runner config and agent builders, an `Answer` with
file bytes), and both ends are processes of the same program and user: the socket is never
exposed to anyone else, and nothing read from it comes from an agent.

The driver reads with asyncio (`receive`); the worker reads on a thread of its own with
blocking calls (`read`), so that it sees its driver go away even while a run holds its event
loop. A frame's length is bounded (`MAX_FRAME`): a longer one is the other end's bug, and
ends the channel as a lost worker would.
"""

from __future__ import annotations

import asyncio
import pickle
import socket
import struct
from dataclasses import dataclass
from typing import Any

from areasync.workers.confine import Report

__all__ = [
    "MAX_FRAME",
    "Call",
    "Cancel",
    "Cancelled",
    "ChannelError",
    "Message",
    "Raised",
    "Ready",
    "Returned",
    "encode",
    "read",
    "receive",
]

_LENGTH = struct.Struct(">I")
MAX_FRAME = 1 << 30  # 1 GiB: a run's files come back in one answer


# -- driver to worker ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    """Run the worker's handler `method` with `args`; answered by one reply with `id`."""

    id: int
    method: str
    args: tuple[Any, ...]


@dataclass(frozen=True)
class Cancel:
    """Cancel call `id` at its next wait (answered by `Cancelled`, or by its reply if it
    finished first)."""

    id: int


# -- worker to driver ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Ready:
    """The worker has set up its handlers and takes calls; `confined` is what it applied
    to itself (`confine.Report`), None when its pool asked for no confinement."""

    pid: int
    confined: Report | None = None


@dataclass(frozen=True)
class Returned:
    id: int
    value: Any


@dataclass(frozen=True)
class Raised:
    """The handler raised: its exception's type name and text (never the object: it may not
    unpickle in the driver)."""

    id: int
    kind: str
    message: str


@dataclass(frozen=True)
class Cancelled:
    id: int


Message = Call | Cancel | Ready | Returned | Raised | Cancelled


class ChannelError(Exception):
    """A frame that is not a message: the other end is broken."""


def encode(message: Message) -> bytes:
    """`message` as one frame."""
    body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    if len(body) > MAX_FRAME:
        raise ChannelError(f"a {type(message).__name__} of {len(body)} bytes exceeds MAX_FRAME")
    return _LENGTH.pack(len(body)) + body


def _decode(body: bytes) -> Message:
    message = pickle.loads(body)
    if not isinstance(message, Message):
        raise ChannelError(f"not a channel message: {type(message).__name__}")
    return message


def _length(header: bytes) -> int:
    (length,) = _LENGTH.unpack(header)
    if length > MAX_FRAME:
        raise ChannelError(f"a frame of {length} bytes exceeds MAX_FRAME")
    return int(length)


async def receive(reader: asyncio.StreamReader) -> Message | None:
    """The next message, or None once the other end has closed (or died)."""
    try:
        header = await reader.readexactly(_LENGTH.size)
        return _decode(await reader.readexactly(_length(header)))
    except (asyncio.IncompleteReadError, ConnectionError):
        return None


def read(sock: socket.socket) -> Message | None:
    """`receive` for a blocking socket (the worker's reader thread)."""
    header = _read_exactly(sock, _LENGTH.size)
    if header is None:
        return None
    body = _read_exactly(sock, _length(header))
    return None if body is None else _decode(body)


def _read_exactly(sock: socket.socket, size: int) -> bytes | None:
    chunks = bytearray()
    while len(chunks) < size:
        try:
            chunk = sock.recv(min(size - len(chunks), 1 << 20))
        except OSError:
            return None
        if not chunk:
            return None
        chunks += chunk
    return bytes(chunks)
