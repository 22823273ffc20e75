"""The client asks for batches, unpacks them in order, and falls back to single frames on a link
that keeps breaking before a message gets through."""

from __future__ import annotations

import anyio

from areasync.client import connect
from areasync.protocol import Batch, CallTool, ClientFrame, Result, encode_server_frame
from tests.client.fake_server import TOKEN, FakeServer, event, note
from tests.waiting import eventually


async def test_hello_asks_for_batches_unless_told_not_to() -> None:
    async with FakeServer() as fake:
        async with connect(fake.url, token=TOKEN):
            pass
        async with connect(fake.url, token=TOKEN, batch=False):
            pass
    assert [hello.batch for hello in fake.hellos] == [True, False]


async def test_a_batch_is_handled_frame_by_frame_in_order() -> None:
    async with FakeServer() as fake, connect(fake.url, token=TOKEN, since=0) as client:
        first, second = fake.append(event), fake.append(note)

        async def answer(frame: ClientFrame) -> None:
            # The event, the notification and the reply in one message, as the server sends
            # a tool call's event and its result.
            assert isinstance(frame, CallTool)
            ws, encoding = fake.connections[0]
            batch = Batch(frames=[first, second, Result(id=frame.id, value="done")])  # type: ignore[list-item]
            await ws.send(encode_server_frame(batch, encoding))
            await anyio.sleep_forever()  # no second reply: the only one went in the batch

        fake.handlers["call_tool"] = answer
        with anyio.fail_after(10):
            assert await client.call_tool("Any__tool") == "done"
            items = []
            async for item in client.stream(since=0):
                items.append(item)
                if len(items) == 2:
                    break
    assert [item.seq for item in items] == [1, 2]


async def test_after_a_connection_that_delivered_nothing_the_next_hello_asks_for_frames() -> None:
    async with FakeServer() as fake, connect(fake.url, token=TOKEN, since=0) as client:
        with anyio.fail_after(10):
            await eventually(lambda: len(fake.connections) == 1)
            fake.cut()  # nothing got through on the first connection
            await eventually(lambda: len(fake.hellos) == 2 and len(fake.connections) == 1)
            await fake.publish(event)  # this one gets through
            async for _ in client.stream(since=0):
                break
            fake.cut()
            await eventually(lambda: len(fake.hellos) == 3)
    assert [hello.batch for hello in fake.hellos] == [True, False, True]


async def test_a_server_that_does_not_know_batch_is_asked_again_without_it() -> None:
    async with FakeServer() as fake:
        fake.knows_batch = False
        async with connect(fake.url, token=TOKEN, since=0) as client:
            await fake.publish(event)
            with anyio.fail_after(10):
                async for item in client.stream(since=0):
                    assert item.seq == 1
                    break
    assert [hello.batch for hello in fake.hellos] == [True, False]


async def test_a_server_that_does_not_offer_batch_is_not_asked_again() -> None:
    async with FakeServer() as fake:
        fake.capabilities = []  # knows the field, offers no batches
        async with connect(fake.url, token=TOKEN, since=0) as client:
            await eventually(lambda: len(fake.connections) == 1)
            await fake.publish(event)
            async for _ in client.stream(since=0):
                break
            fake.cut()
            with anyio.fail_after(10):
                await eventually(lambda: len(fake.hellos) == 2)
    assert [hello.batch for hello in fake.hellos] == [True, False]
