"""Reconnect paths the real server does not produce on cue, against a scripted server: an
overlapping replay, a gap, a new epoch, a reply lost with its connection."""

from __future__ import annotations

import anyio
import pytest

from areasync.client import (
    Client,
    ConnectionClosedError,
    ConnectionLostError,
    StreamResetError,
    connect,
)
from areasync.client.connection import ResumingConnection
from areasync.protocol import CallTool, ClientFrame, Hello, NotificationItem, StreamItem
from tests.client.fake_server import TOKEN, FakeServer, event, note
from tests.waiting import eventually


async def take(client: Client, count: int, since: int | None = None) -> list[StreamItem]:
    items: list[StreamItem] = []
    with anyio.fail_after(10):
        async for item in client.stream(since):
            items.append(item)
            if len(items) == count:
                break
    return items


async def test_the_stream_resumes_after_a_cut_with_nothing_lost() -> None:
    async with FakeServer() as fake, connect(fake.url, token=TOKEN, since=0) as client:
        await fake.publish(event)
        await fake.publish(note)
        await take(client, 2)
        fake.cut()
        await fake.publish(event)  # sent to nobody: the client is reconnecting
        await fake.publish(event)
        items = await take(client, 4)
        assert [item.seq for item in items] == [1, 2, 3, 4]
        assert client.reconnects == 1
        assert (fake.hellos[-1].since, fake.hellos[-1].epoch) == (2, "epoch-1")


async def test_items_replayed_twice_are_yielded_once() -> None:
    async with FakeServer() as fake, connect(fake.url, token=TOKEN, since=0) as client:
        for _ in range(3):
            await fake.publish(event)
        await take(client, 3)
        # A replay from 0 overlaps everything the client has.
        for ws, encoding in list(fake.connections):
            for item in fake.items:
                await ws.send(item.get(encoding))
        await fake.publish(event)
        items = await take(client, 4)
    assert [item.seq for item in items] == [1, 2, 3, 4]


async def test_a_gap_in_the_stream_makes_the_client_resume_from_its_last_seq() -> None:
    async with FakeServer() as fake, connect(fake.url, token=TOKEN, since=0) as client:
        await fake.publish(event)
        await take(client, 1)
        fake.skip_seqs.add(2)
        await fake.publish(event)  # seq 2: never sent live
        await fake.publish(event)  # seq 3: a gap, the client reconnects with since=1
        items = await take(client, 3)
        assert [item.seq for item in items] == [1, 2, 3]
        assert fake.hellos[-1].since == 1


async def test_a_new_epoch_raises_stream_reset_instead_of_mixing_streams() -> None:
    async with FakeServer() as fake, connect(fake.url, token=TOKEN, since=0) as client:
        await fake.publish(event)
        await fake.publish(event)
        await take(client, 2)
        iterator = client.stream()
        fake.new_epoch()  # a restarted server: a new stream, already two items long
        fake.append(lambda seq: note(seq, "new stream"))
        fake.append(event)
        fake.cut()
        with anyio.fail_after(10), pytest.raises(StreamResetError) as caught:
            async for _ in iterator:
                pass
        assert caught.value.welcome is not None
        assert caught.value.welcome.epoch == "epoch-2"
        assert client.resets == 1
        await fake.publish(event)
        items = await take(client, 3)  # a new stream() follows the new epoch, all of it
        assert [item.seq for item in items] == [1, 2, 3]
        assert isinstance(items[0], NotificationItem)
        assert items[0].notification.message == "new stream"
        assert client.epoch == "epoch-2"


async def test_a_tool_call_whose_reply_is_lost_fails_retryably() -> None:
    called = anyio.Event()

    async def hang(frame: ClientFrame) -> object:
        called.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async with FakeServer() as fake, connect(fake.url, token=TOKEN) as client:
        fake.handlers["call_tool"] = hang

        async def cut_when_called() -> None:
            await called.wait()
            fake.cut()

        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(cut_when_called)
                with pytest.raises(ConnectionLostError) as caught:
                    await client.call_tool("App__do")
        assert caught.value.retryable is True
        assert sum(isinstance(frame, CallTool) for frame in fake.received) == 1  # not resent


async def test_a_read_only_request_whose_reply_is_lost_is_resent() -> None:
    calls = 0

    async def state(frame: ClientFrame) -> object:
        nonlocal calls
        calls += 1
        if calls == 1:
            fake.cut()
            await anyio.sleep_forever()
        return {"App": {"n": calls}}

    async with FakeServer() as fake, connect(fake.url, token=TOKEN) as client:
        fake.handlers["get_state"] = state
        with anyio.fail_after(10):
            value = await client.get_state()
    assert value == {"App": {"n": 2}}
    assert client.reconnects == 1


async def test_a_request_made_while_reconnecting_waits_for_the_new_connection() -> None:
    async def echo(frame: ClientFrame) -> object:
        assert isinstance(frame, CallTool)
        return frame.args

    reconnecting = anyio.Event()
    welcome_allowed = anyio.Event()

    async def hold(hello: Hello) -> None:
        if len(fake.hellos) > 1:  # the reconnect: the old connection is known to be gone
            reconnecting.set()
            await welcome_allowed.wait()

    async with FakeServer() as fake, connect(fake.url, token=TOKEN) as client:
        fake.handlers["call_tool"] = echo
        fake.before_welcome = hold
        fake.cut()
        with anyio.fail_after(10):
            await reconnecting.wait()
            async with anyio.create_task_group() as tg:

                async def allow() -> None:
                    welcome_allowed.set()

                tg.start_soon(allow)  # runs once the call below is waiting for a connection
                value = await client.call_tool("App__do", x=1)
    assert value == {"x": 1}
    assert client.reconnects == 1


async def test_without_reconnect_a_drop_closes_the_client_and_its_iterators() -> None:
    async with FakeServer() as fake, connect(fake.url, token=TOKEN, reconnect=False) as client:
        iterator = client.stream()
        fake.cut()
        with anyio.fail_after(10), pytest.raises(ConnectionClosedError):
            async for _ in iterator:
                pass
        with pytest.raises(ConnectionClosedError):
            await client.ping()
        assert len(fake.hellos) == 1


async def test_stream_since_outside_what_the_client_holds_is_refused() -> None:
    async with FakeServer() as fake:
        for _ in range(3):
            fake.append(event)
        async with connect(fake.url, token=TOKEN) as client:  # follows from seq 3 on
            with pytest.raises(ValueError, match="outside what this client holds"):
                client.stream(since=1)
            await fake.publish(event)
            (item,) = await take(client, 1, since=3)
            assert item.seq == 4


async def _closed_by_server_then_resumed(
    code: int | None, monkeypatch: pytest.MonkeyPatch
) -> list[int]:
    """Backoffs the client asked for after the server closed it with `code` (None: a cut)."""
    asked: list[int] = []

    def no_wait(self: ResumingConnection, failures: int) -> float:
        asked.append(failures)
        return 0.0

    monkeypatch.setattr(ResumingConnection, "_backoff", no_wait)
    async with FakeServer() as fake, connect(fake.url, token=TOKEN, since=0) as client:
        await fake.publish(event)
        await take(client, 1)
        if code is None:
            fake.cut()
        else:
            for ws, _ in list(fake.connections):
                await ws.close(code, "closed by the test")
        await eventually(lambda: client.reconnects == 1)
        await fake.publish(event)
        assert [item.seq for item in await take(client, 2)] == [1, 2]
    return asked


@pytest.mark.parametrize("code", [4029, 4503, 4408])
async def test_a_close_that_asks_to_back_off_delays_the_reconnect(
    code: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert len(await _closed_by_server_then_resumed(code, monkeypatch)) == 1


async def test_a_cut_connection_is_resumed_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    assert await _closed_by_server_then_resumed(None, monkeypatch) == []
