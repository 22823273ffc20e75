"""Slow and stuck consumers: bounded memory, closed with 4008, nobody else waits for them.

A session streams ~2 kB events while clients misbehave: some say hello and never read
a byte, some stop in the middle of a frame and never read, some read one message now and then.
The session must run to its end, a well-behaved observer must receive everything in order, each
misbehaving client must be closed with 4008 (slow consumer) - a slow reader sees the code if it
reads through its backlog to the close frame within close_timeout, else the server aborts it;
either way it resumes losslessly with `since` - and no connection may ever buffer more than:

    write_limit + WRITE_BYTES + one frame  (the socket's user-space buffer)
    + max_pending_reply_bytes              (unread replies; none here: they send no requests)

Latency figures (a well-behaved observer with and without stuck clients) come from
`bench/stuck.py` and are in docs/topics/performance.md; these tests assert completion and order
only.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.abc
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from areasync.protocol import (
    CallTool,
    CloseCode,
    Encoding,
    EndedItem,
    Hello,
    Jump,
    Role,
    Welcome,
    decode_server_frame,
    encode_client_frame,
)
from areasync.service import Service
from areasync.service.fanout.frames import WRITE_BYTES
from bench.misbehaving import (
    RawClient,
    close_code,
    hello_frame,
    partial_frame,
    small_socket,
)
from tests.hardening.faults import watch_faults
from tests.scenarios import TimelineScenario, timeline
from tests.service.support import ADMIN, STREAM_TYPES, Peer, attach, serving
from tests.waiting import eventually

SESSION = "areasync_test_timeline"
PAD = "x" * 2000  # every event carries ~2 kB


class PaddedTimeline(TimelineScenario):
    """`count` ENV events of ~2 kB, ten per simulated second."""

    def __init__(self, count: int) -> None:
        super().__init__([i // 10 for i in range(count)], duration=count // 10 + 2)

    def mark_label(self, i: int, t: float) -> str:
        return f"{i}:{PAD}"

    def mark_id(self, i: int) -> str:
        return f"e{i}"


LIMITS: dict[str, Any] = {
    "max_lag": 300,
    "write_limit": 16 * 1024,
    "close_timeout": 0.5,  # a stuck peer cannot finish a close: abort it soon
}


def port(service: Service) -> int:
    assert service.port is not None
    return service.port


def buffered(service: Service) -> int:
    """The most any one connection holds now: its socket's buffer plus its unread replies."""
    return max((connection.buffered_bytes for connection in service.connections), default=0)


@asynccontextmanager
async def sampling(service: Service) -> AsyncIterator[list[int]]:
    """The largest per-connection buffer seen, sampled every few milliseconds."""
    peak = [0]

    async def sample() -> None:
        while True:
            peak[0] = max(peak[0], buffered(service))
            await anyio.sleep(0.002)

    async with anyio.create_task_group() as tg:
        tg.start_soon(sample)
        yield peak
        tg.cancel_scope.cancel()


async def step_through(controller: Peer, observer: Peer, end: int, by: int = 5) -> None:
    """Jump `by` simulated seconds at a time up to `end`, each jump once `observer` has read
    everything the last one fired (the controller has, having read up to its reply)."""
    for to in [*range(by, end, by), end]:
        await controller.call(Jump, to=float(to))
        if controller.items:
            await observer.until_seq(controller.items[-1].seq)


async def follow_to_end(peer: Peer) -> list[int]:
    await peer.until_ended()
    return peer.seqs


async def slow_then_resume(
    service: Service,
    pause: float,
    recovered: anyio.Event,
    *,
    task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> tuple[str, list[int]]:
    """A reader that reads one message per `pause` until `recovered` (a background tab brought
    back), so it falls behind and is evicted; then it reads at full speed and resumes with since.

    Returns how its first connection ended - "4008" (it read through its backlog to the close
    frame), "aborted" (it was too slow to reach it within close_timeout: the server dropped the
    TCP connection) or "ended" (it kept up, never evicted) - and every seq it received.
    """
    seqs: list[int] = []
    how = "ended"
    sock = await small_socket(port(service))
    async with connect(service.ws_url(SESSION), sock=sock, max_queue=1) as ws:
        hello = Hello(id=0, role=Role.OBSERVER, token=ADMIN, since=0)
        await ws.send(encode_client_frame(hello, Encoding.JSON))
        welcome = decode_server_frame(await ws.recv())
        assert isinstance(welcome, Welcome)
        task_status.started()
        try:
            with anyio.fail_after(60):
                while True:
                    frame = decode_server_frame(await ws.recv())
                    if isinstance(frame, STREAM_TYPES):
                        seqs.append(frame.seq)
                    if isinstance(frame, EndedItem):
                        break
                    if not recovered.is_set():
                        await anyio.sleep(pause)
        except ConnectionClosed as exc:
            how = "aborted" if exc.rcvd is None else str(exc.rcvd.code)
    async with attach(
        service,
        Role.OBSERVER,
        session=SESSION,
        since=seqs[-1] if seqs else 0,
        epoch=welcome.epoch,
    ) as resumed:
        await resumed.until_ended()
    return how, seqs + resumed.seqs


async def test_stuck_and_slow_clients_are_evicted_while_the_session_and_others_go_on() -> None:
    # The session stands still (manual mode) until every misbehaving client is in place, then
    # a controller steps it through its timeline as fast as a well-behaved client reads: the
    # stream's pace is the readers', not a wall clock's, on a quiet machine or a loaded one.
    events = 6_000
    stuck: list[RawClient] = []
    with watch_faults() as faults:
        async with (
            serving(PaddedTimeline(events), **LIMITS) as service,
            attach(service, Role.OBSERVER, session=SESSION, since=0) as observer,
            attach(service, Role.CONTROLLER, session=SESSION) as controller,
            sampling(service) as peak,
        ):
            for n in range(12):
                client = await RawClient.open(port(service), SESSION)
                await client.send(hello_frame(ADMIN))
                if n % 2:
                    await client.send(partial_frame())  # then stops, mid-frame
                stuck.append(client)
            async with anyio.create_task_group() as tg:
                results: list[tuple[str, list[int]]] = []
                recovered = anyio.Event()

                async def slow(*, task_status: anyio.abc.TaskStatus[None]) -> None:
                    run = slow_then_resume(service, 0.02, recovered, task_status=task_status)
                    results.append(await run)

                for _ in range(3):
                    await tg.start(slow)
                await step_through(controller, observer, end=events // 10 + 2)
                seqs = await follow_to_end(observer)
                recovered.set()
            session = service.registry.get(SESSION)
            assert session is not None
            # The stuck ones closed: the observer and the controller are left.
            await eventually(lambda: len(service.connections) == 2)
            evicted = service.metrics.closes[CloseCode.SLOW_CONSUMER]
            final = session.hub.seq
            largest_frame = max(len(frame.text_frame) for frame in session.hub.frames)
        for client in stuck:
            client.close()
    assert session.sim.ended and session.hub.events == events
    assert seqs == list(range(1, final + 1)) and isinstance(observer.items[-1], EndedItem)
    assert evicted >= len(stuck) + len(results)
    for how, received in results:
        # Evicted (whether it read as far as the close frame is a matter of its own speed),
        # and lossless after resuming with since.
        assert how in {str(CloseCode.SLOW_CONSUMER.value), "aborted"}
        assert received == list(range(1, final + 1))
    bound = LIMITS["write_limit"] + WRITE_BYTES + largest_frame
    assert 0 < peak[0] <= bound, (peak[0], bound)
    assert faults.problems == []


async def test_a_partial_first_frame_is_closed_with_hello_timeout() -> None:
    async with serving(hello_timeout=0.2, close_timeout=0.3) as service:
        client = await RawClient.open(port(service), "scenario_tutorial")
        await client.send(partial_frame())
        received = await client.read_until_closed()
        client.close()
    assert close_code(received) == CloseCode.HELLO_TIMEOUT


async def test_a_stuck_client_that_resets_its_connection_leaves_no_error() -> None:
    # Regression: the writer, waiting for a full socket to drain, got the transport's
    # ConnectionResetError, which escaped as "connection handler failed".
    with watch_faults() as faults:
        async with (
            serving(timeline(), write_limit=4096, max_lag=10_000) as service,
            attach(service, Role.AGENT, session=SESSION) as agent,
        ):
            client = await RawClient.open(port(service), SESSION)
            await client.send(hello_frame(ADMIN))
            big = {"label": PAD * 10}
            with anyio.fail_after(30):
                while buffered(service) <= 4096:  # the socket's buffer is above its limit...
                    await agent.call(CallTool, tool="TimelineApp__mark", args=big)
            for _ in range(3):  # ...and more is due: the writer waits in drain()
                await agent.call(CallTool, tool="TimelineApp__mark", args=big)
            client.reset()
            await eventually(lambda: len(service.connections) == 1)
    assert faults.problems == []
