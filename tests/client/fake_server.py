"""A scriptable areasync/1 server, for client behaviour the real service never shows on cue.

The real server is used wherever it can be (see the other tests); this one exists for the
paths that need a misbehaving or very particular peer: a reply delayed on purpose, a replay that
overlaps what the client already has, a new epoch (reset), a gap in the stream, a connection cut
between a request and its reply. It speaks the protocol through areasync.protocol's own codecs.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from websockets.asyncio.server import Server, ServerConnection, serve

from areasync.protocol import (
    Capability,
    ClientFrame,
    ClockState,
    EncodedFrame,
    Encoding,
    ErrorCode,
    EventItem,
    EventRecord,
    Hello,
    NotificationItem,
    NotificationRecord,
    Ping,
    Pong,
    ProtocolError,
    Replay,
    Result,
    StreamItem,
    Welcome,
    decode_client_frame,
    encode_server_frame,
)
from areasync.protocol.frames import error_frame

Handler = Callable[[ClientFrame], Awaitable[Any]]

TOKEN = "secret"


def event(seq: int, function: str = "tick") -> EventItem:
    return EventItem(
        seq=seq,
        event=EventRecord(event_id=f"e{seq}", event_type="ENV", time=float(seq), function=function),
    )


def note(seq: int, message: str = "hi") -> NotificationItem:
    return NotificationItem(
        seq=seq,
        notification=NotificationRecord(
            message_type="USER_MESSAGE", message=message, timestamp=float(seq)
        ),
    )


class FakeServer:
    """Serves one session whose stream the test appends to; replies come from `handlers`."""

    def __init__(self) -> None:
        self.epoch = "epoch-1"
        self.items: list[EncodedFrame] = []
        self.handlers: dict[str, Handler] = {}
        self.connections: list[tuple[ServerConnection, Encoding]] = []
        self.hellos: list[Hello] = []
        self.received: list[ClientFrame] = []
        self.skip_seqs: set[int] = set()  # never sent live (to provoke a gap)
        self.before_welcome: Callable[[Hello], Awaitable[None]] | None = None
        # False: refuse hello.batch and offer no capabilities, as a server older than both
        self.knows_batch = True
        self.capabilities: list[str] = [Capability.BATCH]  # offered in the welcome
        self._server: Server | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/sessions/fake"

    async def __aenter__(self) -> FakeServer:
        self._server = await serve(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    # -- scripting ---------------------------------------------------------------------

    def append(self, make: Callable[[int], StreamItem]) -> StreamItem:
        item = make(len(self.items) + 1)
        self.items.append(EncodedFrame(item))
        return item

    async def publish(self, make: Callable[[int], StreamItem]) -> StreamItem:
        item = self.append(make)
        if item.seq in self.skip_seqs:
            return item
        for ws, encoding in list(self.connections):
            with contextlib.suppress(Exception):
                await ws.send(self.items[-1].get(encoding))
        return item

    def cut(self) -> None:
        """Drop every connection abruptly (no close frame), as a network failure would."""
        for ws, _ in list(self.connections):
            ws.transport.abort()

    def new_epoch(self) -> None:
        """Forget the stream, as a restarted server would."""
        self.epoch = f"epoch-{int(self.epoch.split('-')[1]) + 1}"
        self.items = []

    # -- protocol ----------------------------------------------------------------------

    async def _handle(self, ws: ServerConnection) -> None:
        data = await ws.recv()
        encoding = Encoding.JSON if isinstance(data, str) else Encoding.MSGPACK
        hello = decode_client_frame(data)
        assert isinstance(hello, Hello)
        self.hellos.append(hello)
        if self.before_welcome is not None:
            await self.before_welcome(hello)
        if hello.batch and not self.knows_batch:
            error = ProtocolError(
                ErrorCode.INVALID_FIELD,
                "invalid `hello` frame: Object contains unknown field `batch` - at `$`",
                id=hello.id,
            )
            await ws.send(encode_server_frame(error_frame(error), encoding))
            await ws.close(4000, "bad hello")
            return
        if hello.token != TOKEN:
            error = ProtocolError(ErrorCode.UNAUTHORIZED, "wrong token", id=hello.id)
            await ws.send(encode_server_frame(error_frame(error), encoding))
            await ws.close(4001, "unauthorized")
            return
        since = hello.since
        if since is None:
            replay = Replay.NONE
        elif hello.epoch is not None and hello.epoch != self.epoch:
            replay, since = Replay.RESET, 0  # the whole new stream follows, as for since=0
        else:
            replay = Replay.FULL
        welcome = Welcome(
            id=hello.id,
            session_id="fake",
            role=hello.role,
            epoch=self.epoch,
            seq=len(self.items),
            scenario_id="fake",
            clock=ClockState(state="running", time=0.0, tick=0, mode="manual", speed=1.0),
            replay=replay,
            capabilities=self.capabilities if self.knows_batch else [],
        )
        await ws.send(encode_server_frame(welcome, encoding))
        for item in self.items[len(self.items) if since is None else since :]:
            await ws.send(item.get(encoding))
        self.connections.append((ws, encoding))
        try:
            async with anyio.create_task_group() as tg:
                async for data in ws:
                    tg.start_soon(self._answer, ws, encoding, data)
                tg.cancel_scope.cancel()  # replies still pending have nowhere to go
        except Exception:
            pass
        finally:
            self.connections.remove((ws, encoding))

    async def _answer(self, ws: ServerConnection, encoding: Encoding, data: str | bytes) -> None:
        try:
            frame = decode_client_frame(data)
        except ProtocolError as exc:
            await ws.send(encode_server_frame(error_frame(exc), encoding))
            return
        self.received.append(frame)
        if isinstance(frame, Ping):
            await ws.send(encode_server_frame(Pong(id=frame.id), encoding))
            return
        handler = self.handlers.get(frame.__struct_config__.tag)  # type: ignore[arg-type]
        try:
            if handler is None:
                raise ProtocolError(ErrorCode.BAD_STATE, "no handler in the fake server")
            value = await handler(frame)
        except ProtocolError as exc:
            reply: Any = error_frame(exc, frame.id)
        else:
            reply = Result(id=frame.id, value=value)
        with contextlib.suppress(Exception):
            await ws.send(encode_server_frame(reply, encoding))
