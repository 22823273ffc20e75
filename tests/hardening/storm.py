"""A reconnect storm: many observers dropping at random moments of a long run, resuming with since.

`run_storm` starts a fast-mode session of the synthetic scenario (`bench/synthetic.py`: N ENV
events, so the stream is N events plus a few clock items and `ended`), attaches `clients`
observers (half JSON, half msgpack) with `since=0`, and only then lets the session run
(a controller's `resume` releases the waiting-for-agent hold). Each observer has its own random
cut points (stream seqs); on reaching one it drops its connection in one of three ways - a TCP
abort (the network drops), a clean close, or a stall (it stops reading for a moment, then
aborts) - and reconnects with `hello{since: last seq received, epoch}`. A server-side eviction
(4008: its socket stopped draining while the stream ran on) is handled the same way. With
`freezes`, observers instead stop reading at each cut point on a small receive buffer (the
transport paused: nothing leaves the kernel) for a moment, then read on, on the same
connection, unless the server evicted them meanwhile.

Observers here are raw WebSocket clients that record every seq exactly as it arrives, so a
duplicate or a gap on the server's side would show (areasync's own Client deduplicates, which
would hide one). `real_clients` areasync `Client`s also take part, their sockets cut from under
them: their auto-reconnect must give the same contiguous history.

Everything is checked by the caller on the returned `StormReport`; figures (runs, reconnects,
evictions, items delivered) go to docs/topics/testing.md.
"""

from __future__ import annotations

import asyncio
import collections
import random
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import anyio
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from areasync.client import Client
from areasync.client import connect as client_connect
from areasync.protocol import (
    CloseCode,
    EndedItem,
    Hello,
    Replay,
    Role,
    Welcome,
    decode_server_frame,
    encode_client_frame,
)
from areasync.protocol.codec import Encoding
from bench.synthetic import SyntheticScenario, synthetic_scenario
from tests.service.support import ADMIN, serving
from tests.waiting import eventually

SESSION = SyntheticScenario.scenario_id
STYLES = ("abort", "close", "stall")

# Totals over the process, for the summary line (tests/conftest.py).
TALLY: collections.Counter[str] = collections.Counter()


@dataclass
class ObserverLog:
    """What one raw observer received, across all its connections."""

    name: str
    seqs: list[int] = field(default_factory=list)
    connections: int = 0
    cuts: int = 0
    evictions: int = 0
    replays: list[str] = field(default_factory=list)
    frozen: bool = False  # it has stopped reading at least once (`freezes`)


@dataclass
class StormReport:
    final_seq: int
    observers: list[ObserverLog]
    clients: list[list[int]]  # each real Client's history, as seqs
    client_reconnects: int
    cuts_during_run: int  # cuts made while the session was still producing items
    slow_consumer_closes: int  # connections the server closed as slow consumers (4008)


async def _connect(
    url: str, encoding: Encoding, since: int, epoch: str | None, *, small_buffer: bool = False
) -> tuple[ClientConnection, Welcome]:
    # An unbounded receive queue: websockets' client cannot finish a clean close while its
    # queue is full and the server is still streaming (it stops reading, so it never sees the
    # server's close frame, and gives up after close_timeout with 1006).
    sock: socket.socket | None = None
    if small_buffer:  # a frozen reader fills the server's buffers after kilobytes, not megabytes
        parts = urlsplit(url)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.setblocking(False)
        await asyncio.get_running_loop().sock_connect(sock, (parts.hostname, parts.port))
    ws = await connect(url, sock=sock, max_size=None, max_queue=None, ping_interval=None)
    hello = Hello(id=1, role=Role.OBSERVER, token=ADMIN, since=since, epoch=epoch)
    await ws.send(encode_client_frame(hello, encoding))
    welcome = decode_server_frame(await ws.recv())
    assert isinstance(welcome, Welcome), welcome
    return ws, welcome


async def _observe(
    url: str,
    log: ObserverLog,
    encoding: Encoding,
    cut_at: list[int],
    rng: random.Random,
    ended: Any,
    during: list[int],
    freezes: Callable[[float], Awaitable[None]] | None,
) -> None:
    """Follow the stream to `ended`, dropping the connection at each seq of `cut_at` (with
    `freezes`: not reading there, for as long as `freezes(seconds)` takes, instead)."""
    epoch: str | None = None
    cuts = sorted(cut_at)
    while True:
        since = log.seqs[-1] if log.seqs else 0
        ws, welcome = await _connect(url, encoding, since, epoch, small_buffer=freezes is not None)
        log.connections += 1
        log.replays.append(welcome.replay.value)
        epoch = welcome.epoch
        style = "abort"
        try:
            while True:
                frame = decode_server_frame(await ws.recv())
                seq = getattr(frame, "seq", None)
                if seq is None:
                    continue
                log.seqs.append(seq)
                if isinstance(frame, EndedItem):
                    await ws.close()
                    return
                if cuts and seq >= cuts[0]:
                    cuts.pop(0)
                    if freezes is not None:
                        ws.transport.pause_reading()
                        log.frozen = True
                        await freezes(rng.uniform(0.2, 0.5))
                        ws.transport.resume_reading()
                        continue
                    style = rng.choice(STYLES)
                    break
        except ConnectionClosed as exc:
            if _evicted(exc, small_buffer=freezes is not None):
                log.evictions += 1
                continue
            raise
        log.cuts += 1
        if not ended():
            during.append(1)
        if style == "close":
            await ws.close()
        else:
            if style == "stall":
                await anyio.sleep(rng.uniform(0, 0.05))  # not reading meanwhile
            ws.transport.abort()
        await anyio.sleep(rng.uniform(0, 0.01))


def _evicted(closed: ConnectionClosed, *, small_buffer: bool) -> bool:
    """Whether the server closed this connection as a slow consumer: a 4008, or, on a
    small-buffered socket, no close frame at all (the frame could not get past the full
    buffers, so the server dropped the connection once its close timeout ran out).

    Not only a frozen reader is slow: with a lag bound of a few dozen items, on a machine whose
    cores are taken, an observer that never stops reading falls behind too, and its close frame
    can wait behind its backlog past the close timeout. The storm checks that these evictions
    are the server's (`StormReport.slow_consumer_closes`) and that every observer resumed
    losslessly."""
    if closed.rcvd is not None:
        return closed.rcvd.code == CloseCode.SLOW_CONSUMER
    return small_buffer


async def _real_client(
    url: str,
    rng: random.Random,
    cut_at: list[int],
    history: list[list[int]],
    reconnects: list[int],
) -> None:
    """An areasync Client whose socket is cut from under it at each seq of `cut_at`."""
    async with client_connect(
        url, role="observer", token=ADMIN, since=0, backoff_initial=0.01, backoff_max=0.05
    ) as client:
        seqs: list[int] = []
        targets = sorted(cut_at)
        async for item in client.stream(since=0):
            seqs.append(item.seq)
            if targets and item.seq >= targets[0]:
                targets.pop(0)
                _cut(client)
            if isinstance(item, EndedItem):
                break
        history.append(seqs)
        reconnects.append(client.reconnects)


def _cut(client: Client) -> None:
    link = getattr(client, "_link", None)
    if link is not None:
        link.ws.transport.abort()


async def run_storm(
    *,
    events: int = 20_000,
    clients: int = 8,
    cuts_per_client: int = 5,
    real_clients: int = 2,
    seed: int = 0,
    max_lag: int = 10_000,
    freezes: bool = False,
) -> StormReport:
    """One storm (see the module docstring); raises if it does not finish in time."""
    rng = random.Random(seed)
    logs = [ObserverLog(f"observer-{n}") for n in range(clients)]
    histories: list[list[int]] = []
    reconnects: list[int] = []
    during: list[int] = []
    expected_items = events + 4  # a rough bound for the cut points; the real end is checked
    async with serving(synthetic_scenario(events), mode="fast", max_lag=max_lag) as service:
        url = service.ws_url(SESSION)
        session = service.registry.get(SESSION)
        assert session is not None

        def ended() -> bool:
            return session.sim.ended

        async def freeze_until_evicted(seconds: float) -> None:
            """At least `seconds`, then on until the server evicts a slow consumer or the
            session ends (given up after 30 s: the test then finds no eviction)."""
            evicted = service.metrics.slow_consumer_disconnects
            await anyio.sleep(seconds)
            with anyio.move_on_after(30):
                await eventually(
                    lambda: service.metrics.slow_consumer_disconnects > evicted or ended(),
                    within=31,
                )

        with anyio.fail_after(120 + events / 100):
            async with anyio.create_task_group() as tg:
                # A freeze late in the run would find too little stream left to fill the
                # kernel's buffers (megabytes on loopback): freeze in its first third, and the
                # first observer once at the very start, until its socket is full and the
                # server evicts it (on a loaded machine the run can otherwise outpace every
                # observer, leaving nothing to append during their freezes).
                cut_range = range(1, expected_items // 3 if freezes else expected_items)
                for n, log in enumerate(logs):
                    encoding = Encoding.JSON if n % 2 == 0 else Encoding.MSGPACK
                    cut_at = rng.sample(cut_range, cuts_per_client)
                    if freezes and n == 0:
                        cut_at[0] = 1
                    tg.start_soon(
                        _observe,
                        url,
                        log,
                        encoding,
                        cut_at,
                        random.Random(rng.random()),
                        ended,
                        during,
                        (freeze_until_evicted if n == 0 else anyio.sleep) if freezes else None,
                    )
                for _ in range(real_clients):
                    cut_at = rng.sample(range(1, expected_items), cuts_per_client)
                    tg.start_soon(
                        _real_client,
                        url,
                        random.Random(rng.random()),
                        cut_at,
                        histories,
                        reconnects,
                    )
                # Everyone attached (and with `freezes`, the first observer no longer reading,
                # so that the whole run fills its buffers and it is evicted however fast the
                # machine): let the session run (what a controller's `resume` does to a fast
                # session waiting for its agent; in-process, so that no extra client has to
                # read the whole stream).
                await eventually(lambda: len(session.connections) >= clients + real_clients)
                if freezes:
                    await eventually(lambda: logs[0].frozen)
                session.start_without_hold()
        final = session.hub.seq
        slow_consumer_closes = service.metrics.slow_consumer_disconnects
    TALLY["storms"] += 1
    TALLY["clients"] += clients + real_clients
    TALLY["cuts"] += sum(log.cuts for log in logs) + sum(reconnects)
    TALLY["cuts_during_run"] += len(during)
    TALLY["evictions"] += sum(log.evictions for log in logs)
    TALLY["items"] += sum(len(log.seqs) for log in logs) + sum(map(len, histories))
    return StormReport(final, logs, histories, sum(reconnects), len(during), slow_consumer_closes)


def replays_were_full(log: ObserverLog) -> bool:
    return all(replay == Replay.FULL.value for replay in log.replays)
