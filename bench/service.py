"""Service benchmark: tool-call round trips, stream fan-out, and many concurrent sessions.

    python bench/service.py                 # prints one JSON document; ~1.5 min
    python bench/service.py --quick         # smaller counts, for a smoke run
    python bench/service.py --only rtt      # one part (rtt, fanout, sessions; comma-separated)

Method (see docs/topics/performance.md for the figures and how to read them):

- The server is `areasync.service.Service` with its default configuration except where noted
  (`_service`), in this process. Every client runs in a *separate* process (`python
  bench/service.py client ...`), as a real agent or dashboard would: the two sides never share
  an event loop. Everything runs on one machine, so clients and server share its cores.
- Times across processes are `time.perf_counter_ns()`, which is CLOCK_MONOTONIC on Linux: one
  clock for every process on the machine, so "received in the client" minus "logged in the
  server" is a true interval, with no clock offset to correct.
- Before each measurement the server's heap is frozen out of the garbage collector, as
  `areasync serve` does once its start-up sessions are loaded (`settle`).

Parts:

- `rtt`: one agent makes sequential tool calls (`SystemApp__get_current_time`, which ARE logs,
  so each round trip carries the AGENT event and then the result) and pings, over a plain
  `websockets` client that decodes every frame it receives with the protocol's own decoder;
  msgpack and JSON, each with single frames (the protocol's default) and with `hello.batch`.
  Interleaved rounds; the median round is reported, every round's p50 listed. Also areasync's
  own Python client (`areasync.client`, msgpack, batches on as by default): what a Python agent
  built on it gets. Targets: msgpack p50 < 300 us, p99 < 1 ms.
- `fanout`: one fast-mode session of N synthetic ENV events (`bench.synthetic`; N = 2,000 and
  10,000) run flat out to 1, 10 and 100 observers, all in one other process (`--observer-procs`
  spreads them over more), msgpack with `hello.batch` (at 100 also without, as a client that
  does not ask for batches). The observers are minimal WebSocket clients (`_RawObserver`): each
  splits frames and decodes every message's envelope and every item's `seq` (checking that the
  stream is contiguous and complete), not the event records inside. Latency is
  from ARE logging the event (the session stream's append, timed in the server) to an observer
  receiving the bytes (timed in `data_received`). Target: p99 < 10 ms at 100 observers. Side by
  side, ARE's own dashboard approach at the same log size: every subscriber re-serialises the
  whole event log per poll (`make_serializable(env.event_log.to_dict())` + `json.dumps`, as
  ARE's GraphQL subscription does every 0.25 s in one thread per subscriber).
- `sessions`: S concurrent fast-mode sessions of scenario_tutorial, each driven by an oracle
  agent over its own socket (all agents in one other process: waits with
  `SystemApp__wait_for_notification` until the oracle's time, makes the oracle's tool call,
  then idles); wall time until every session has ended, and the server's resident memory per
  session.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import statistics
import sys
import time
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `bench` and `areasync` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import anyio
import msgspec

from bench.common import log, percentile, print_report, rss_bytes

TOKEN = "bench-admin"
SCRIPT = str(Path(__file__).resolve())
PING_TOOL = "SystemApp__get_current_time"
WAIT_TOOL = "SystemApp__wait_for_notification"


async def hello_agent(ws: Any, encoding: Any, *, batch: bool = False) -> Any:
    """Say hello on `ws` as the agent, with the admin token (`encoding`: an Encoding); the
    welcome."""
    from areasync.protocol import Hello, Role, decode_server_frame, encode_client_frame

    await ws.send(
        encode_client_frame(Hello(id=0, role=Role.AGENT, token=TOKEN, batch=batch), encoding)
    )
    return decode_server_frame(await ws.recv())


def request_frame(kind: str, request_id: int) -> Any:
    """What a round trip of `kind` sends: a `call_tool` of PING_TOOL, or else a `ping`."""
    from areasync.protocol import CallTool, Ping

    if kind == "call_tool":
        return CallTool(id=request_id, tool=PING_TOOL)
    return Ping(id=request_id)


def summary(values: list[float]) -> dict[str, Any]:
    return {
        "n": len(values),
        "p50_us": round(percentile(values, 50), 1),
        "p99_us": round(percentile(values, 99), 1),
        "mean_us": round(statistics.fmean(values), 1),
    }


# -- client side (separate processes) ------------------------------------------------------


async def client_rtt(
    url: str, encoding: str, batch: bool, calls: int, warmup: int
) -> dict[str, Any]:
    """Sequential round trips over a plain `websockets` client, every frame decoded."""
    from websockets.asyncio.client import connect

    from areasync.protocol import (
        Batch,
        Encoding,
        Error,
        Pong,
        Result,
        decode_server_frame,
        encode_client_frame,
    )

    enc = Encoding(encoding)

    def answers(frame: Any, request_id: int) -> bool:
        frames = frame.frames if type(frame) is Batch else (frame,)
        return any(isinstance(f, Result | Pong | Error) and f.id == request_id for f in frames)

    out: dict[str, list[float]] = {"call_tool": [], "ping": []}
    async with connect(url, compression=None, max_size=None) as ws:
        await hello_agent(ws, enc, batch=batch)
        next_id = 1
        for kind in ("call_tool", "ping"):
            for i in range(warmup + calls):
                data = encode_client_frame(request_frame(kind, next_id), enc)
                started = time.perf_counter_ns()
                await ws.send(data)
                while not answers(decode_server_frame(await ws.recv()), next_id):
                    pass
                elapsed = time.perf_counter_ns() - started
                if i >= warmup:
                    out[kind].append(elapsed / 1000)
                next_id += 1
    return {kind: summary(values) for kind, values in out.items()}


async def client_rtt_library(url: str, encoding: str, calls: int, warmup: int) -> dict[str, Any]:
    """The same round trips through areasync's own client (`areasync.client.connect`)."""
    from areasync.client import connect

    out: dict[str, list[float]] = {"call_tool": [], "ping": []}
    async with connect(url, role="agent", token=TOKEN, encoding=encoding) as client:
        for kind in ("call_tool", "ping"):
            for i in range(warmup + calls):
                started = time.perf_counter_ns()
                if kind == "call_tool":
                    await client.call_tool(PING_TOOL)
                else:
                    await client.ping()
                elapsed = time.perf_counter_ns() - started
                if i >= warmup:
                    out[kind].append(elapsed / 1000)
    return {kind: summary(values) for kind, values in out.items()}


class _Item(msgspec.Struct, gc=False):
    """Just enough of a frame inside a batch: its type and seq (other fields are skipped)."""

    type: str
    seq: int | None = None


class _Envelope(msgspec.Struct, gc=False):
    """Just enough of any server message: its type, seq, and a batch's frames."""

    type: str
    seq: int | None = None
    frames: list[_Item] | None = None


class _RawObserver(asyncio.Protocol):
    """A minimal WebSocket observer: handshake, hello, then frame splitting and envelope decoding.

    100 of these share one process (and the machine's 2 cores with the server). A full client
    library costs ~20 us of Python per received message, so at 100 observers the client process
    rather than the server would set the figures; this one does what a browser's native
    WebSocket plus a page's `JSON.parse` of the envelope do: it splits frames, decodes each
    message's `type` and `seq` (and each batched item's) with msgspec - the records inside are
    parsed and skipped - and checks that the seqs run on without a gap.

    Per message it records `(first seq, last seq, arrival time)`; the arrival time is taken once
    per `data_received`, before any parsing of that read.
    """

    def __init__(self, path: str, host: str, batch: bool, sink: list[tuple[int, int, int]]) -> None:
        import base64

        from websockets.frames import Frame, Opcode

        from areasync.protocol import Hello, Role

        self.sink = sink
        self.buffer = bytearray()
        self.handshaken = False
        self.welcomed = asyncio.get_running_loop().create_future()
        self.ended = asyncio.get_running_loop().create_future()
        self.decode = msgspec.msgpack.Decoder(_Envelope).decode
        self.expected = 0  # the next seq due; 0 until the welcome says where the stream is
        self.gaps = 0
        self.messages = 0
        key = base64.b64encode(os.urandom(16)).decode()
        self.request = (
            f"GET {path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
            "Sec-WebSocket-Version: 13\r\n\r\n"
        ).encode()
        hello = msgspec.msgpack.encode(Hello(id=0, role=Role.OBSERVER, token=TOKEN, batch=batch))
        self.hello = Frame(Opcode.BINARY, hello).serialize(mask=True)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        transport.write(self.request)

    def data_received(self, data: bytes) -> None:
        now = time.perf_counter_ns()
        buffer = self.buffer
        buffer += data
        if not self.handshaken:
            end = buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            assert buffer.startswith(b"HTTP/1.1 101"), bytes(buffer[:80])
            del buffer[: end + 4]
            self.handshaken = True
            self.transport.write(self.hello)
        offset = 0
        size = len(buffer)
        view = memoryview(buffer)
        decode = self.decode
        sink = self.sink
        while size - offset >= 2:
            length = buffer[offset + 1] & 0x7F
            start = offset + 2
            if length == 126:
                length = int.from_bytes(buffer[start : start + 2], "big")
                start += 2
            elif length == 127:
                length = int.from_bytes(buffer[start : start + 8], "big")
                start += 8
            if size < start + length:
                break
            offset = start + length
            self.messages += 1
            message = decode(view[start:offset])
            frames = message.frames
            if frames is not None:  # a batch
                first = expected = self.expected
                for item in frames:
                    if item.seq != expected:
                        self.gaps += 1
                        expected = item.seq or 0
                    expected += 1
                self.expected = expected
                sink.append((first, expected - 1, now))
                if frames and frames[-1].type == "ended":  # always the stream's last item
                    self.finish()
            elif message.type == "welcome":  # its seq is the stream's position, not an item's
                self.expected = (message.seq or 0) + 1
                if not self.welcomed.done():
                    self.welcomed.set_result(None)
            elif message.seq is not None:
                if message.seq != self.expected:
                    self.gaps += 1
                    self.expected = message.seq
                sink.append((message.seq, message.seq, now))
                self.expected += 1
                if message.type == "ended":
                    self.finish()
        view.release()
        del buffer[:offset]

    def finish(self) -> None:
        if not self.ended.done():
            self.ended.set_result(None)


async def client_fanout(url: str, observers: int, batch: bool) -> dict[str, Any]:
    """Attach `observers` observers, say "ready", then record when each item arrives."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    loop = asyncio.get_running_loop()
    received: list[list[tuple[int, int, int]]] = [[] for _ in range(observers)]
    clients = []
    for sink in received:
        _, client = await loop.create_connection(
            lambda sink=sink: _RawObserver(parts.path, parts.netloc, batch, sink),  # type: ignore[misc]
            parts.hostname or "127.0.0.1",
            parts.port or 80,
        )
        await client.welcomed
        clients.append(client)
    print("ready", flush=True)
    cpu = time.process_time()
    await asyncio.gather(*(client.ended for client in clients))
    cpu = time.process_time() - cpu
    for client in clients:
        client.transport.close()
    return {
        "received": received,
        "gaps": sum(client.gaps for client in clients),
        "messages": sum(client.messages for client in clients),
        "client_cpu_s": cpu,
    }


async def client_agents(
    base: str, session_ids: list[str], plan: list[tuple[float, str, dict[str, Any]]]
) -> dict[str, Any]:
    """One oracle agent per session, all concurrently; wall time until every session ended."""
    from websockets.asyncio.client import connect

    from areasync.protocol import (
        Batch,
        CallTool,
        ClockItem,
        EndedItem,
        Error,
        EventItem,
        Hello,
        Idle,
        NotificationItem,
        Result,
        Role,
        Welcome,
        decode_server_frame,
    )

    failures: list[str] = []

    async def agent(session_id: str) -> None:
        async with connect(f"{base}/sessions/{session_id}", compression=None) as ws:
            hello = Hello(id=0, role=Role.AGENT, token=TOKEN, batch=True)
            await ws.send(msgspec.msgpack.encode(hello))
            welcome = decode_server_frame(await ws.recv())
            assert isinstance(welcome, Welcome)
            start, now = welcome.clock.start_time, welcome.clock.time
            ids = iter(range(1, 10**9))
            ended = False

            async def frames() -> Any:
                message = decode_server_frame(await ws.recv())
                return message.frames if isinstance(message, Batch) else [message]

            async def request(frame: Any) -> Any:
                nonlocal now, ended
                await ws.send(msgspec.msgpack.encode(frame))
                while True:
                    for got in await frames():
                        if isinstance(got, EventItem):
                            now = max(now, got.event.time)
                        elif isinstance(got, NotificationItem):
                            now = max(now, got.notification.timestamp)
                        elif isinstance(got, ClockItem):
                            now = max(now, got.clock.time)
                        elif isinstance(got, EndedItem):
                            ended = True
                        elif isinstance(got, Result | Error) and got.id == frame.id:
                            return got

            for when, tool, args in plan:
                while now < start + when - 1e-6:
                    timeout = max(1, round(start + when - now))
                    await request(CallTool(id=next(ids), tool=WAIT_TOOL, args={"timeout": timeout}))
                reply = await request(CallTool(id=next(ids), tool=tool, args=args))
                if isinstance(reply, Error):
                    failures.append(f"{session_id}: {tool}: {reply.message}")
            await request(Idle(id=next(ids)))
            while not ended:
                ended = any(isinstance(got, EndedItem) for got in await frames())

    started = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for session_id in session_ids:
            tg.start_soon(agent, session_id)
    return {"wall_s": time.perf_counter() - started, "failures": failures}


def client_main(argv: list[str]) -> int:
    spec = json.loads(argv[0])
    kind = spec.pop("kind")
    runner = {
        "rtt": client_rtt,
        "rtt_library": client_rtt_library,
        "fanout": client_fanout,
        "agents": client_agents,
    }[kind]
    result = anyio.run(lambda: runner(**spec))  # type: ignore[operator]
    print(json.dumps(result), flush=True)
    return 0


async def run_client(
    spec: dict[str, Any], *, ready: anyio.Event | None = None, script: str = SCRIPT
) -> Any:
    """Run a client process (`script client SPEC`); if `ready` is given, set it when the
    client prints "ready"."""
    command = [sys.executable, script, "client", json.dumps(spec)]
    async with await anyio.open_process(command, stderr=None) as process:
        assert process.stdout is not None
        buffer = b""
        async for chunk in process.stdout:
            buffer += chunk
            while ready is not None and b"\n" in buffer:
                line, _, rest = buffer.partition(b"\n")
                if line.strip() == b"ready":
                    ready.set()
                    buffer = rest
                    ready = None
                else:
                    break
        code = await process.wait()
    if code != 0:
        raise RuntimeError(f"benchmark client {spec['kind']} failed with exit code {code}")
    return json.loads(buffer)


# -- server side (this process) ------------------------------------------------------------

# What the benchmark changes in the service's defaults, and why (docs/topics/performance.md
# repeats this).
SERVICE_OVERRIDES: dict[str, Any] = {
    "port": 0,  # a free port
    "admin_token": TOKEN,
    "mode": "manual",  # no start-up session runs; each part creates its own
    "trace_dir": None,  # no trace files
    # The default 2,000 requests/s per connection would throttle a flat-out loop of round
    # trips; a huge bucket keeps the check (and its cost) on the path without ever refusing.
    "rate": 1e9,
    "burst": 10**9,
    "max_sessions": 1000,  # the sessions part runs 200 (default limit: 64)
}


def _service(**overrides: Any) -> Any:
    from areasync.service import Service, ServiceConfig

    return Service(ServiceConfig(**{**SERVICE_OVERRIDES, **overrides}), scenarios=[])


def settle() -> None:
    """The GC policy `areasync serve` applies after start-up (`areasync.service.gc_policy`)."""
    from areasync.service.gc_policy import settle as settle_gc

    settle_gc()


RTT_CONFIGS: list[tuple[str, str, bool]] = [
    ("msgpack", "msgpack", False),
    ("msgpack_batch", "msgpack", True),
    ("json", "json", False),
    ("json_batch", "json", True),
]


async def bench_rtt(calls: int, rounds: int) -> dict[str, Any]:
    """`rounds` interleaved rounds of every configuration (the machine is noisy), in a rotating
    order; the median round (by call_tool p50) of each is reported."""
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name, _, _ in RTT_CONFIGS}
    runs["areasync_client_msgpack"] = []
    warmup = min(500, calls // 4)
    async with _service() as service:
        for round_number in range(rounds):
            # Each round starts with another configuration: no configuration always goes first.
            shift = round_number % len(RTT_CONFIGS)
            for name, encoding, batch in RTT_CONFIGS[shift:] + RTT_CONFIGS[:shift]:
                session = service.registry.create("scenario_tutorial", mode="manual")
                settle()
                log(f"rtt: round {round_number + 1}, {calls} tool calls and pings, {name}")
                spec = {
                    "kind": "rtt",
                    "url": service.ws_url(session.id),
                    "encoding": encoding,
                    "batch": batch,
                    "calls": calls,
                    "warmup": warmup,
                }
                runs[name].append(await run_client(spec))
            session = service.registry.create("scenario_tutorial", mode="manual")
            settle()
            log(f"rtt: round {round_number + 1}, {calls} calls, areasync client (msgpack)")
            spec = {
                "kind": "rtt_library",
                "url": service.ws_url(session.id),
                "encoding": "msgpack",
                "calls": calls,
                "warmup": warmup,
            }
            runs["areasync_client_msgpack"].append(await run_client(spec))
    results = {}
    for name, rows in runs.items():
        median = sorted(rows, key=lambda row: row["call_tool"]["p50_us"])[len(rows) // 2]
        results[name] = {
            **median,
            "rounds_call_tool_p50_us": [row["call_tool"]["p50_us"] for row in rows],
            "rounds_call_tool_p99_us": [row["call_tool"]["p99_us"] for row in rows],
            "rounds_ping_p50_us": [row["ping"]["p50_us"] for row in rows],
        }
    single, batched = results["msgpack"]["call_tool"], results["msgpack_batch"]["call_tool"]
    return {
        "what": (
            "sequential round trips over loopback, client in another process, every frame "
            f"decoded; median of {rounds} interleaved rounds by call_tool p50"
        ),
        "results": results,
        "targets_met": {
            "msgpack_call_tool_p50_under_300us": single["p50_us"] < 300,
            "msgpack_call_tool_p99_under_1ms": single["p99_us"] < 1000,
            "msgpack_batch_call_tool_p50_under_300us": batched["p50_us"] < 300,
            "msgpack_batch_call_tool_p99_under_1ms": batched["p99_us"] < 1000,
        },
    }


def are_poll_cost(env: Any, repeats: int = 3) -> float:
    """Seconds ARE's dashboard spends per subscriber per poll re-serialising the event log."""
    from are.simulation.utils import make_serializable

    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        json.dumps(make_serializable({"event_log": env.event_log.to_dict()}))
        best = min(best, time.perf_counter() - started)
    return best


@contextlib.contextmanager
def _timing_writes(written: list[tuple[int, int, int]]) -> Iterator[None]:
    """Record (first seq, last seq, time) as the server starts handing stream items to a socket
    (a bench-only hook; one tuple per write, so that timing costs the server next to nothing)."""
    from areasync.service.fanout.outbox import Outbox

    original = Outbox.write_some

    def timed(self: Outbox) -> None:
        # Timed as the write starts: the kernel may run the receiving client before the
        # server's write call returns (the same core), which is not the server's time.
        before = self.position
        now = time.perf_counter_ns()
        original(self)
        if self.position > before:
            written.append((before + 1, self.position, now))

    Outbox.write_some = timed  # type: ignore[method-assign]
    try:
        yield
    finally:
        Outbox.write_some = original  # type: ignore[method-assign]


async def fanout_once(events: int, observers: int, batch: bool, procs: int = 1) -> dict[str, Any]:
    from bench.synthetic import synthetic_scenario

    logged: dict[int, int] = {}
    written: list[tuple[int, int, int]] = []
    outcomes: list[dict[str, Any]] = []
    groups = [observers // procs + (i < observers % procs) for i in range(procs)]

    def on_logged(seq: int, item: Any) -> None:
        logged[seq] = time.perf_counter_ns()

    # Keepalive off: the minimal observers do not answer pings (runs last seconds anyway).
    with _timing_writes(written):
        async with _service(ping_interval=None) as service:
            session = service.registry.create(synthetic_scenario(events), mode="fast")
            # The first listener: when ARE logged the item, before any fan-out work.
            session.sim.log.listeners.insert(0, on_logged)
            url = service.ws_url(session.id)

            async def observe(count: int, ready: anyio.Event) -> None:
                spec = {"kind": "fanout", "url": url, "observers": count, "batch": batch}
                outcomes.append(await run_client(spec, ready=ready))

            async with anyio.create_task_group() as tg:
                readies = [anyio.Event() for _ in groups]
                for count, ready in zip(groups, readies, strict=True):
                    tg.start_soon(observe, count, ready)
                for ready in readies:
                    await ready.wait()
                settle()
                cpu = time.process_time()
                session.start_without_hold()  # go: the session runs flat out to its end
                await session.sim.run()
                server_cpu = time.process_time() - cpu
            slow = service.metrics.slow_consumer_disconnects
            env = session.sim.env
    received: list[list[list[int]]] = [s for outcome in outcomes for s in outcome["received"]]
    gaps = sum(outcome["gaps"] for outcome in outcomes)
    latencies = [
        (now - logged[seq]) / 1e6
        for stream in received
        for first, last, now in stream
        for seq in range(first, last + 1)
    ]
    write_latencies = [
        (now - logged[seq]) / 1e6
        for first, last, now in written
        for seq in range(first, last + 1)
        if seq in logged
    ]
    delivered = len(latencies)
    last_arrival = max(now for stream in received for _, _, now in stream)
    span_s = (last_arrival - min(logged.values())) / 1e9
    expected = len(logged)
    complete = gaps == 0 and all(
        sum(last - first + 1 for first, last, _ in stream) == expected
        and stream[-1][1] == max(logged)
        for stream in received
    )
    are_cost = are_poll_cost(env)
    return {
        "observers": observers,
        "batch": batch,
        "stream_items": expected,
        "delivered": delivered,
        "messages": sum(outcome["messages"] for outcome in outcomes),
        "complete_and_in_order": complete,
        "slow_consumer_disconnects": slow,
        "items_per_s": round(delivered / span_s),
        "run_s": round(span_s, 3),
        "latency_p50_ms": round(percentile(latencies, 50), 2),
        "latency_p99_ms": round(percentile(latencies, 99), 2),
        "latency_max_ms": round(max(latencies), 2),
        "server_write_p50_ms": round(percentile(write_latencies, 50), 2),
        "server_write_p99_ms": round(percentile(write_latencies, 99), 2),
        "server_cpu_s": round(server_cpu, 3),
        "client_processes": procs,
        "client_cpu_s": round(sum(outcome["client_cpu_s"] for outcome in outcomes), 3),
        "are_dashboard": {
            "log_events": len(env.event_log),
            "serialise_per_poll_ms": round(are_cost * 1000, 2),
            "cpu_per_poll_round_ms": round(are_cost * 1000 * observers, 1),
            "latency_bound_ms": round(250 + are_cost * 1000 * observers, 1),
        },
    }


FANOUT_RUNS: list[tuple[int, bool]] = [(1, True), (10, True), (100, True), (100, False)]


async def bench_fanout(sizes: list[int], procs: int) -> dict[str, Any]:
    rows = []
    for events in sizes:
        for observers, batch in FANOUT_RUNS:
            mode = "batches" if batch else "single frames"
            log(f"fanout: {events} events to {observers} observers ({mode})")
            rows.append(await fanout_once(events, observers, batch, min(procs, observers)))
    at_100 = [row for row in rows if row["observers"] == 100 and row["batch"]]
    return {
        "what": (
            "synthetic ENV events, fast mode, run flat out; msgpack observers in other "
            "process(es) (minimal clients that decode every message's envelope: see "
            "_RawObserver)"
        ),
        "results": rows,
        "targets_met": {
            "p99_under_10ms_at_100_observers": bool(at_100)
            and all(row["latency_p99_ms"] < 10 for row in at_100)
        },
    }


async def bench_sessions(count: int) -> dict[str, Any]:
    from areasync.simulation import Simulation

    oracle = Simulation.load("scenario_tutorial", mode="fast", oracle=True)
    await oracle.run()
    start = float(oracle.env.start_time or 0.0)
    plan = [
        (event.time - start, f"{event.app}__{event.function}", event.args)
        for event in oracle.events()
        if event.event_type == "AGENT"
    ]
    async with _service() as service:
        settle()
        before = rss_bytes()
        log(f"sessions: creating {count} sessions of scenario_tutorial")
        started = time.perf_counter()
        sessions = [service.registry.create("scenario_tutorial", mode="fast") for _ in range(count)]
        created_s = time.perf_counter() - started
        after_create = rss_bytes()
        settle()
        log(f"sessions: {count} oracle agents")
        outcome = await run_client(
            {
                "kind": "agents",
                "base": service.registry.ws_base,
                "session_ids": [s.id for s in sessions],
                "plan": plan,
            }
        )
        peak = rss_bytes()
        validations = [s.sim.validation for s in sessions]
        stream_items = sum(s.hub.seq for s in sessions)
    passed = sum(1 for v in validations if v is not None and v.success)
    return {
        "what": f"{count} fast sessions of scenario_tutorial, one oracle agent socket each",
        "sessions": count,
        "create_s": round(created_s, 2),
        "agents_wall_s": round(outcome["wall_s"], 2),
        "validated": passed,
        "agent_failures": outcome["failures"][:5],
        "stream_items_per_session": round(stream_items / count, 1),
        "rss_before_mb": round(before / 2**20, 1),
        "rss_per_session_kb_after_create": round((after_create - before) / count / 1024),
        "rss_per_session_kb_after_run": round((peak - before) / count / 1024),
    }


async def run_all(args: argparse.Namespace) -> dict[str, Any]:
    report: dict[str, Any] = {}
    wanted = set(args.only.split(","))
    # Sessions first: its resident-memory figures need a heap that earlier runs did not grow.
    if "sessions" in wanted:
        report["sessions"] = await bench_sessions(args.sessions)
    if "rtt" in wanted:
        report["rtt"] = await bench_rtt(args.calls, args.rounds)
    if "fanout" in wanted:
        report["fanout"] = await bench_fanout(args.events, args.observer_procs)
    return report


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "client":
        return client_main(argv[1:])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small counts (a smoke run)")
    parser.add_argument("--only", default="rtt,fanout,sessions")
    parser.add_argument("--calls", type=int, default=None, help="round trips per run")
    parser.add_argument("--rounds", type=int, default=None, help="interleaved rtt rounds")
    parser.add_argument(
        "--events", default=None, help="fan-out log sizes, comma-separated (default 2000,10000)"
    )
    parser.add_argument("--sessions", type=int, default=None, help="concurrent sessions")
    parser.add_argument(
        "--observer-procs",
        type=int,
        default=1,
        help="fan-out client processes to spread the observers over (default 1: on 2 cores "
        "more only compete with each other and the server)",
    )
    args = parser.parse_args(argv)
    args.calls = args.calls or (300 if args.quick else 3000)
    args.rounds = args.rounds or (1 if args.quick else 5)
    args.events = [
        int(n) for n in (args.events or ("300" if args.quick else "2000,10000")).split(",")
    ]
    args.sessions = args.sessions or (20 if args.quick else 200)
    logging.disable(logging.WARNING)  # ARE narrates every run at INFO; the JSON is the output
    load = [round(x, 2) for x in os.getloadavg()]  # other work on the machine, at the start
    started = time.perf_counter()
    results = anyio.run(run_all, args)
    return print_report(
        "areasync service: round trips, fan-out, concurrent sessions",
        load,
        results,
        started,
        websockets=metadata.version("websockets"),
        msgspec=metadata.version("msgspec"),
        are=metadata.version("meta-agents-research-environments"),
    )


if __name__ == "__main__":
    sys.exit(main())
