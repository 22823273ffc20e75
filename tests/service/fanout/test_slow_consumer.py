"""A client that stops reading is closed with 4008; nobody else waits for it; it resumes."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
from websockets.asyncio.client import connect

from areasync.protocol import (
    CallTool,
    CloseCode,
    Encoding,
    GetState,
    Hello,
    Jump,
    Mode,
    Ping,
    Result,
    Role,
    Welcome,
)
from areasync.service import Service
from bench.synthetic import SyntheticScenario, synthetic_scenario
from tests.scenarios import timeline
from tests.service.support import ADMIN, WAIT, Peer, attach, serving

SESSION = "areasync_test_timeline"
LABEL = "x" * 20_000  # each tool call puts a ~20 kB AGENT event on the stream
# Marks of LABEL in the state a GetState returns: a reply of ~500 kB, within the 1 MiB a client
# takes in one message.
REPLY_MARKS = 25


@asynccontextmanager
async def never_reading(service: Service) -> AsyncIterator[Peer]:
    """An observer that reads its welcome and then nothing.

    A small kernel receive buffer and a one-frame client queue (websockets stops reading the
    socket when its queue is full) make the server's buffers fill after a few hundred kB,
    not after the megabytes loopback would otherwise absorb.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.setblocking(False)
    with anyio.fail_after(5):
        await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", service.port or 0))
    async with connect(service.ws_url(SESSION), sock=sock, max_queue=1) as ws:
        peer = Peer(ws, Encoding.JSON)
        await peer.send(Hello(id=0, role=Role.OBSERVER, token=ADMIN))
        welcome = await peer.recv()
        assert isinstance(welcome, Welcome)
        peer.welcome = welcome
        yield peer


async def test_a_never_reading_client_is_closed_while_the_others_keep_receiving() -> None:
    async with (
        serving(timeline(), max_lag=8, write_limit=4096, close_timeout=30.0) as service,
        attach(service, Role.AGENT, session=SESSION) as agent,
        attach(service, Role.OBSERVER, session=SESSION) as reader,
        never_reading(service) as stuck,
    ):
        with anyio.fail_after(30):
            while service.metrics.slow_consumer_disconnects == 0:
                await agent.call(CallTool, tool="TimelineApp__mark", args={"label": LABEL})
        for _ in range(3):  # the session goes on, undisturbed
            await agent.call(CallTool, tool="TimelineApp__mark", args={"label": "after"})
        last = service.registry.get(SESSION).hub.seq  # type: ignore[union-attr]
        await reader.until_seq(last)
        code, reason = await stuck.closed()
        assert stuck.welcome is not None
        async with attach(
            service,
            Role.OBSERVER,
            session=SESSION,
            since=stuck.seqs[-1] if stuck.seqs else 0,
            epoch=stuck.welcome.epoch,
        ) as resumed:
            await resumed.until_seq(last)
    assert code == CloseCode.SLOW_CONSUMER and "since" in reason
    assert reader.seqs == list(range(reader.welcome.seq + 1, last + 1))  # type: ignore[union-attr]
    assert stuck.seqs + resumed.seqs == list(range(stuck.welcome.seq + 1, resumed.seqs[-1] + 1))


async def test_a_client_that_never_reads_its_replies_is_closed() -> None:
    async with (
        # No rate limit: it sends as fast as it can until the kernel's buffers are full, which
        # is a flood (closed 4029 after its strikes) before it is a reader of no replies.
        # It reads through its backlog to the close frame only once closed: a reset after
        # close_timeout would cut it first (the reset is `test_write_timeout.py`'s subject).
        serving(timeline(), max_pending_replies=4, rate=None, close_timeout=30.0) as service,
        attach(service, Role.AGENT, session=SESSION) as agent,
    ):
        # Replies queue only once the kernel's buffers are full, and loopback's send buffer
        # grows to megabytes: a state of REPLY_MARKS x 20 kB fills them in a few dozen replies
        # (with the empty state's 115 bytes it took some 25,000, seconds or minutes by load).
        for _ in range(REPLY_MARKS):
            await agent.call(CallTool, tool="TimelineApp__mark", args={"label": LABEL})
        async with (
            attach(service, Role.OBSERVER, session=SESSION) as witness,
            never_reading(service) as stuck,
        ):
            with anyio.fail_after(30):
                while service.metrics.slow_consumer_disconnects == 0:
                    for _ in range(10):
                        await stuck.send(GetState(id=stuck.next_id()))
                    await witness.request(Ping)  # the server has had its turn with the frames
            code, reason = await stuck.closed()
    assert code == CloseCode.SLOW_CONSUMER and "replies" in reason


async def test_a_reader_is_not_evicted_by_a_burst_larger_than_the_lag_bound() -> None:
    # One jump fires 3,000 events in one synchronous stretch, 30 times the lag bound: a backlog
    # for a subscriber whose socket drains, not lag. It reads through it on the same socket.
    session = SyntheticScenario.scenario_id
    async with (
        serving(synthetic_scenario(3_000), mode=Mode.MANUAL, max_lag=100) as service,
        attach(service, Role.OBSERVER, session=session) as reader,
        attach(service, Role.CONTROLLER, session=session) as controller,
    ):
        reply = await controller.request(Jump, by=10_000.0)
        assert isinstance(reply, Result)
        last = service.registry.get(session).hub.seq  # type: ignore[union-attr]
        assert last > 3_000
        # Reading 3,000 frames is a long read on a busy machine: the bound is for a hang.
        await reader.until_seq(last, limit=WAIT * 6)
        assert service.metrics.slow_consumer_disconnects == 0
    assert reader.seqs == list(range(reader.welcome.seq + 1, last + 1))  # type: ignore[union-attr]
