"""hello{batch: true}: frames due together arrive as one `batch` message, nothing else changes.

A batching client must see exactly the frames, in exactly the order, that a client without
batches sees; only the number of WebSocket messages differs. The welcome always comes alone.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.frames import Frame, Opcode

from areasync.client import connect as client_connect
from areasync.protocol import (
    Batch,
    CallTool,
    Encoding,
    EndedItem,
    EventItem,
    Hello,
    Result,
    Role,
    ServerFrame,
    Welcome,
    decode_server_frame,
    encode_client_frame,
)
from areasync.service.fanout.frames import BATCH_BYTES, ws_frame
from tests.scenarios import timeline
from tests.service.support import ADMIN, WAIT, attach, plain, serving

SESSION = "areasync_test_timeline"
ENCODINGS = [Encoding.JSON, Encoding.MSGPACK]


class Messages:
    """A raw client: every WebSocket message it receives, decoded, batches kept as such."""

    def __init__(self, ws: ClientConnection, encoding: Encoding) -> None:
        self.ws = ws
        self.encoding = encoding
        self.messages: list[ServerFrame] = []
        self.sizes: list[int] = []
        self._ids = 0

    @property
    def frames(self) -> list[Any]:
        """Every frame received, batches unpacked, in order."""
        out: list[Any] = []
        for message in self.messages:
            out.extend(message.frames if isinstance(message, Batch) else [message])
        return out

    @property
    def items(self) -> list[Any]:
        return [f for f in self.frames if hasattr(f, "seq") and not isinstance(f, Welcome)]

    async def recv(self) -> ServerFrame:
        with anyio.fail_after(WAIT):
            data = await self.ws.recv()
        frame = decode_server_frame(data)
        assert frame is not None
        self.messages.append(frame)
        self.sizes.append(len(data))
        return frame

    async def call(self, tool: str, **args: Any) -> Any:
        self._ids += 1
        request = CallTool(id=self._ids, tool=tool, args=args)
        await self.ws.send(encode_client_frame(request, self.encoding))
        # Each recv is bounded; so is the whole wait (a steady stream never times a recv out).
        with anyio.fail_after(WAIT):
            while True:
                await self.recv()
                for frame in self.frames[::-1]:
                    if isinstance(frame, Result) and frame.id == request.id:
                        return frame.value

    async def until_ended(self) -> None:
        with anyio.fail_after(WAIT):
            while not any(isinstance(f, EndedItem) for f in self.frames):
                await self.recv()


@asynccontextmanager
async def batching(
    service: Any, role: Role, encoding: Encoding, *, since: int | None = None
) -> AsyncIterator[Messages]:
    async with connect(service.ws_url(SESSION), max_size=None) as ws:
        client = Messages(ws, encoding)
        hello = Hello(id=0, role=role, token=ADMIN, since=since, batch=True)
        await ws.send(encode_client_frame(hello, encoding))
        welcome = await client.recv()
        assert isinstance(welcome, Welcome), "the welcome comes first, alone"
        yield client


@pytest.mark.parametrize("encoding", ENCODINGS, ids=lambda e: e.value)
async def test_a_tool_calls_event_and_result_arrive_in_one_batch(encoding: Encoding) -> None:
    async with (
        serving(timeline(1, 2), mode="manual") as service,
        batching(service, Role.AGENT, encoding) as agent,
    ):
        assert await agent.call("TimelineApp__mark", label="a") == 1
        batch = agent.messages[-1]
        assert isinstance(batch, Batch)
        event, result = batch.frames
        assert isinstance(event, EventItem) and event.event.function == "mark"
        assert isinstance(result, Result) and result.value == 1


@pytest.mark.parametrize("encoding", ENCODINGS, ids=lambda e: e.value)
async def test_a_batching_observer_sees_the_same_frames_as_one_without(
    encoding: Encoding,
) -> None:
    times = [float(t) for t in range(1, 400)]
    async with (
        serving(timeline(*times, duration=500), mode="fast") as service,
        batching(service, Role.OBSERVER, encoding, since=0) as batched,
        attach(service, Role.OBSERVER, session=SESSION, since=0, encoding=encoding) as single,
    ):
        session = service.registry.get(SESSION)
        assert session is not None
        session.start_without_hold()  # no agent: let it run flat out
        with anyio.fail_after(30):
            await batched.until_ended()
            await single.until_ended()
        expected = [plain(item) for item in session.sim.log.items]
    assert [plain(item) for item in batched.items] == expected
    assert [plain(item) for item in single.items] == expected
    assert not any(isinstance(frame, Batch) for frame in single.frames)
    # Many items per message, none larger than BATCH_BYTES (plus a frame's slack).
    assert len(batched.messages) < len(expected) / 4
    assert max(batched.sizes) < BATCH_BYTES + 1024


@pytest.mark.parametrize("encoding", ENCODINGS, ids=lambda e: e.value)
async def test_a_replay_is_batched_after_a_welcome_that_comes_alone(encoding: Encoding) -> None:
    async with serving(timeline(1, 2, 3), mode="manual") as service:
        async with batching(service, Role.AGENT, encoding) as agent:
            for n in range(30):
                await agent.call("TimelineApp__mark", label=str(n))
        async with batching(service, Role.OBSERVER, encoding, since=0) as late:
            session = service.registry.get(SESSION)
            assert session is not None
            with anyio.fail_after(WAIT):
                while len(late.items) < session.hub.seq:
                    await late.recv()
            expected = [plain(item) for item in session.sim.log.items]
    assert isinstance(late.messages[0], Welcome)
    assert isinstance(late.messages[1], Batch)
    assert [plain(item) for item in late.items] == expected


async def test_the_client_requests_batches_and_hands_out_the_same_stream() -> None:
    times = [float(t) for t in range(1, 200)]
    async with serving(timeline(*times, duration=300), mode="manual") as service:
        url = service.ws_url(SESSION)
        async with (
            client_connect(url, role="observer", token=ADMIN, since=0) as batched,
            client_connect(url, role="observer", token=ADMIN, since=0, batch=False) as single,
            client_connect(url, role="controller", token=ADMIN, encoding="msgpack") as control,
        ):
            await control.jump(by=100)
            await control.jump(by=100)
            await control.stop()
            with anyio.fail_after(WAIT):
                got = [plain(item) async for item in batched.stream(since=0)]
                want = [plain(item) async for item in single.stream(since=0)]
    assert got == want and len(got) > 200


@pytest.mark.parametrize("size", [0, 1, 125, 126, 127, 65535, 65536, 70000])
@pytest.mark.parametrize("text", [True, False])
def test_ws_frame_is_websockets_own_framing(size: int, text: bool) -> None:
    payload = b"x" * size
    opcode = Opcode.TEXT if text else Opcode.BINARY
    assert ws_frame(payload, text=text) == Frame(opcode, payload).serialize(mask=False)
