"""Write stalls: a socket that takes no bytes for `write_timeout` is closed with 4008.

`service/fanout/stalls.py` looks at every attached connection once a second (more often for the
small timeouts here): its user-space write buffer made no progress for `write_timeout`, or a
keepalive ping waited `write_timeout` for its pong. A client that stops reading is closed
whatever the session does - on a quiet session only pings are written and the kernel's buffers
absorb them, so the unanswered ping is what shows it; on a busy one its buffer stops draining
well before `max_lag` items (set out of reach here) have come. A client that reads, however
slowly, is not closed. Give-up bounds only, no wall-clock assertion.

A closed connection is gone: a client that cannot take its close frame (it reads nothing) is
reset once `close_timeout` has passed after the close frame (`Connection._close_socket`, a
`sockets.reset`), and its socket leaves the server's kernel with it. A plain abort used to leave
it there, FIN-WAIT-1 with megabytes unsent, for about 100 s: the test looks for it in
`/proc/net/tcp` the moment the server's side of the connection is lost.
"""

from __future__ import annotations

import select
from pathlib import Path

import anyio
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from areasync.protocol import (
    CloseCode,
    Encoding,
    EndedItem,
    Hello,
    Jump,
    Mode,
    Role,
    Welcome,
    decode_server_frame,
    encode_client_frame,
)
from areasync.service import Service
from areasync.service.gate.sockets import kernel_unsent
from bench.misbehaving import RawClient, close_code, hello_frame, small_socket
from tests.hardening.faults import watch_faults
from tests.hardening.test_slow_consumers import SESSION, PaddedTimeline
from tests.service.support import ADMIN, TUTORIAL, attach, serving
from tests.waiting import eventually

# A bound on reading a backlog through to its close frame: only a hang reaches it.
READ_THROUGH_S = 120.0

BUSY: dict[str, object] = {
    "mode": Mode.REALTIME,
    "speed": 40.0,  # 400 events of ~2 kB a second
    "max_lag": 10**9,  # out of reach: only the write timeout may close anyone
    "write_limit": 16 * 1024,
    "close_timeout": 0.5,  # a peer that does not read cannot finish a close: abort it soon
}


def _unsent(service: Service) -> int:
    """The most bytes any connection has waiting for its client (user space and kernel)."""
    return max(
        (
            c.ws.transport.get_write_buffer_size() + kernel_unsent(c.ws.transport)
            for c in service.connections
        ),
        default=0,
    )


async def test_a_client_that_stops_reading_on_a_quiet_session_is_closed_with_4008() -> None:
    # A manual session: nothing happens, only keepalive pings are written.
    with watch_faults() as faults:
        async with serving(ping_interval=0.1, write_timeout=0.5, close_timeout=0.5) as service:
            client = await RawClient.open(service.port or 0, TUTORIAL)
            try:
                await client.send(hello_frame(ADMIN))  # then never reads a byte
                await eventually(lambda: service.metrics.write_timeout_disconnects == 1)
                received = await client.read_until_closed(READ_THROUGH_S)
            finally:
                client.close()
    assert close_code(received) == CloseCode.SLOW_CONSUMER
    assert b"keepalive ping" in received
    assert faults.problems == []


async def test_a_client_that_stops_reading_on_a_busy_session_is_closed_with_4008() -> None:
    # The buffer alone shows it; once closed it reads through to the close frame, which it
    # must reach within close_timeout, else it is reset (the last test here): a close_timeout
    # no busy machine's reading of the backlog comes near, since this test is not about it.
    limits = {
        **BUSY,
        "ping_interval": None,
        "write_timeout": 0.5,
        "close_timeout": READ_THROUGH_S,
    }
    with watch_faults() as faults:
        async with serving(PaddedTimeline(2000), **limits) as service:
            client = await RawClient.open(service.port or 0, SESSION)
            try:
                await client.send(hello_frame(ADMIN))  # then never reads a byte
                await eventually(
                    lambda: service.metrics.write_timeout_disconnects == 1, within=READ_THROUGH_S
                )
                received = await client.read_until_closed(READ_THROUGH_S, close_frame=True)
            finally:
                client.close()
            assert service.metrics.closes[CloseCode.SLOW_CONSUMER] == 1
    assert close_code(received) == CloseCode.SLOW_CONSUMER
    assert faults.problems == []


async def test_a_slow_reader_is_not_closed_by_the_write_timeout() -> None:
    limits = {**BUSY, "ping_interval": 0.2, "write_timeout": 3.0}
    with watch_faults() as faults:
        async with serving(PaddedTimeline(600), **limits) as service:
            seqs = []
            sock = await small_socket(service.port or 0)
            async with connect(service.ws_url(SESSION), sock=sock, max_queue=1) as ws:
                hello = Hello(id=0, role=Role.OBSERVER, token=ADMIN)
                await ws.send(encode_client_frame(hello, Encoding.JSON))
                welcome = decode_server_frame(await ws.recv())
                assert isinstance(welcome, Welcome)
                # It reads nothing until bytes wait for it, then reads on: it fell behind.
                behind = await eventually(lambda: _unsent(service))
                with anyio.fail_after(60):
                    while True:
                        frame = decode_server_frame(await ws.recv())
                        seqs.append(getattr(frame, "seq", None))
                        if isinstance(frame, EndedItem):
                            break
            assert service.metrics.write_timeout_disconnects == 0
            assert service.metrics.closes[CloseCode.SLOW_CONSUMER] == 0
    assert behind > 0  # it was behind: bytes waited for it
    assert seqs == list(range(welcome.seq + 1, seqs[-1] + 1))  # everything, to `ended`
    assert faults.problems == []


async def test_a_client_that_answers_pings_on_a_quiet_session_stays() -> None:
    async with (
        serving(ping_interval=0.1, write_timeout=0.5) as service,
        connect(service.ws_url(TUTORIAL)) as ws,
    ):
        await ws.send(
            encode_client_frame(Hello(id=0, role=Role.OBSERVER, token=ADMIN), Encoding.JSON)
        )
        await ws.recv()
        try:
            with anyio.move_on_after(2.0):  # four timeouts of pings answered by websockets
                while True:  # the whole window, whatever frames come
                    await ws.recv()
        except ConnectionClosed as exc:  # pragma: no cover - the failure this test catches
            raise AssertionError(f"closed: {exc}") from exc
        assert service.metrics.write_timeout_disconnects == 0


def _server_sockets(port: int, peer_port: int) -> list[str]:
    """The kernel's TCP sockets (IPv4 loopback) of `port` with peer `peer_port`: their states
    and queues, as /proc/net/tcp lists them."""
    found = []
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local, remote, state, queues = fields[1], fields[2], fields[3], fields[4]
        if int(local.split(":")[1], 16) == port and int(remote.split(":")[1], 16) == peer_port:
            found.append(f"state {state} tx:rx {queues}")
    return found


def _hangup(sock: object, limit_ms: int) -> int:
    """Block until the socket is hung up or in error (RST, FIN): its poll events, 0 if none."""
    poller = select.poll()
    poller.register(sock, select.POLLHUP | select.POLLERR)  # not POLLIN: data waits unread
    events = poller.poll(limit_ms)
    return events[0][1] if events else 0


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads Linux's /proc/net/tcp")
async def test_a_stalled_reader_that_cannot_take_its_close_is_reset_and_gone() -> None:
    limits = {**BUSY, "ping_interval": None, "write_timeout": 0.5, "mode": Mode.MANUAL}
    with watch_faults() as faults:
        async with serving(PaddedTimeline(3000), **limits) as service:
            client = await RawClient.open(service.port or 0, SESSION)
            try:
                await client.send(hello_frame(ADMIN))  # then never reads a byte
                await eventually(lambda: any(c.session for c in service.connections))
                (stalled,) = service.connections
                async with attach(service, "controller", session=SESSION) as controller:
                    await controller.call(Jump, by=400.0)  # 3,000 events of ~2 kB fire
                await eventually(lambda: service.metrics.write_timeout_disconnects == 1, within=30)
                with anyio.fail_after(60):  # generous: the mechanism is close_timeout (0.5 s)
                    await stalled.ws.wait_closed()  # the server's side: connection lost
                left = _server_sockets(service.port or 0, client.sock.getsockname()[1])
                events = await anyio.to_thread.run_sync(_hangup, client.sock, 60_000)
            finally:
                client.close()
            resets = service.metrics.close_resets
    assert left == []  # no orphan holding the unsent bytes
    assert events & (select.POLLHUP | select.POLLERR)  # the client saw the reset
    assert resets == 1  # the closer gave up after close_timeout and reset the socket
    assert faults.problems == []
