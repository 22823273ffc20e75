"""Reconnect against the real service: connections cut at random points during a long run.

A loopback proxy between the client and the server closes each connection after a random
number of bytes (mid-handshake, mid-frame, anywhere), while a controller on a direct connection
drives the session through hundreds of events. Whatever the cuts, the caller iterating the
stream must see every item exactly once, in order: the session's own stream, item for item.
"""

from __future__ import annotations

import anyio
import msgspec
import pytest

from areasync.client import Client, connect
from areasync.protocol import EndedItem, StreamItem
from areasync.testing import AreasyncServer
from tests.client.proxy import CuttingProxy
from tests.scenarios import timeline

EVENTS = 300


async def drive(controller: Client) -> None:
    for _ in range(EVENTS):
        await controller.jump(by=1)
    await controller.stop()


@pytest.mark.parametrize(("encoding", "seed"), [("json", 1), ("msgpack", 2)])
async def test_the_iterated_stream_is_contiguous_and_complete_across_random_cuts(
    areasync_server: AreasyncServer, encoding: str, seed: int
) -> None:
    session_id = areasync_server.create_session(
        timeline(*range(1, EVENTS + 1), duration=EVENTS + 10), mode="manual"
    )
    token = areasync_server.token
    received: list[StreamItem] = []
    async with CuttingProxy(areasync_server.port, seed=seed) as proxy:
        flaky_url = f"ws://127.0.0.1:{proxy.port}/sessions/{session_id}"
        async with (
            connect(
                flaky_url,
                role="observer",
                token=token,
                encoding=encoding,
                since=0,
                max_reconnect_attempts=None,
                backoff_initial=0.001,
                backoff_max=0.02,
            ) as observer,
            connect(
                areasync_server.session_url(session_id), role="controller", token=token
            ) as controller,
        ):
            with anyio.fail_after(120):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(drive, controller)
                    async for item in observer.stream():
                        received.append(item)
        assert proxy.cuts >= 10, "the proxy should have cut the connection many times"
        assert observer.reconnects >= 10
    expected = areasync_server.simulation(session_id).log.items
    assert [item.seq for item in received] == list(range(1, len(expected) + 1))
    assert msgspec.to_builtins(received) == msgspec.to_builtins(expected)
    assert isinstance(received[-1], EndedItem)
    assert sum(item.__struct_config__.tag == "event" for item in received) == EVENTS
