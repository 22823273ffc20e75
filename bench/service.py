"""Service benchmark: tool-call round trips, stream fan-out, and many concurrent sessions.

    python bench/service.py                 # prints one JSON document; ~1-2 min
    python bench/service.py --quick         # smaller counts, for a smoke run

The server runs in this process (`areasync.service.Service` on a free loopback port); every
client runs in a *separate* process (`python bench/service.py client ...`), as a real agent or
dashboard would, so the two sides do not share an event loop. Latencies across the two processes
use `time.perf_counter_ns`, which is CLOCK_MONOTONIC on Linux: one clock for both.

- `rtt`: one agent makes sequential tool calls (`SystemApp__get_current_time`, which ARE logs, so
  each round trip carries the AGENT event on the stream and then the result) and pings, in
  msgpack and in JSON; p50 / p99 per round trip (targets: msgpack p50 < 300 us, p99 < 1 ms).
- `fanout`: one fast-mode session of N synthetic ENV events (`bench.synthetic`) runs flat out to
  1, 10 and 100 observers (msgpack): items delivered per second (all observers together) and the
  latency from ARE logging an event (the session stream's append, timed in the server) to an
  observer receiving it; p99 target < 10 ms at 100 observers. Side by side, the approach of ARE's
  own dashboard at the same log size: every subscriber re-serialises the whole event log per
  poll (`make_serializable(env.event_log.to_dict())` + `json.dumps`, as ARE's GraphQL
  subscription does every 0.25 s in one thread per subscriber): measured per-poll cost, and the
  latency bound it implies (poll interval + subscribers x cost, GIL-serialised).
- `sessions`: S concurrent fast-mode sessions of scenario_tutorial, each driven by an oracle agent
  over its own socket (waits with `SystemApp__wait_for_notification` until the oracle's time,
  makes the oracle's tool call, then idles); total wall time until every session has ended, and
  the server's resident memory per session.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import logging
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `bench` and `areasync` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import anyio
import msgspec

TOKEN = "bench-admin"
SCRIPT = str(Path(__file__).resolve())
PING_TOOL = "SystemApp__get_current_time"
WAIT_TOOL = "SystemApp__wait_for_notification"


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(p / 100 * (len(ordered) - 1))))
    return ordered[index]


def rss_bytes() -> int:
    """Resident set size of this process (Linux /proc)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


# -- client side (a separate process) ------------------------------------------------------


class _Seq(msgspec.Struct):
    """Just enough of a server frame to route it: its type, seq and id."""

    type: str
    seq: int | None = None
    id: int | None = None


async def client_rtt(url: str, encoding: str, calls: int, warmup: int) -> dict[str, Any]:
    from websockets.asyncio.client import connect

    from areasync.protocol import CallTool, Encoding, Hello, Ping, Role, encode_client_frame

    enc = Encoding(encoding)
    decode: Callable[[Any], _Seq] = (
        msgspec.json.Decoder(_Seq).decode
        if enc is Encoding.JSON
        else msgspec.msgpack.Decoder(_Seq).decode
    )
    out: dict[str, list[float]] = {"call_tool": [], "ping": []}
    async with connect(url, compression=None) as ws:
        await ws.send(encode_client_frame(Hello(id=0, role=Role.AGENT, token=TOKEN), enc))
        await ws.recv()
        next_id = 1
        for kind in ("call_tool", "ping"):
            for i in range(warmup + calls):
                frame: Any = Ping(id=next_id)
                if kind == "call_tool":
                    frame = CallTool(id=next_id, tool=PING_TOOL)
                data = encode_client_frame(frame, enc)
                started = time.perf_counter_ns()
                await ws.send(data)
                while decode(await ws.recv()).id != next_id:
                    pass
                elapsed = time.perf_counter_ns() - started
                if i >= warmup:
                    out[kind].append(elapsed / 1000)
                next_id += 1
    return {
        kind: {
            "n": len(values),
            "p50_us": round(percentile(values, 50), 1),
            "p99_us": round(percentile(values, 99), 1),
            "mean_us": round(statistics.fmean(values), 1),
        }
        for kind, values in out.items()
    }


class _RawObserver(asyncio.Protocol):
    """A minimal WebSocket observer: handshake, hello, then frame parsing and a clock read.

    The fan-out clients share a 2-core machine with the server; with a full client library
    (~20 us per received frame in Python) the client process, not the server, would set the
    numbers at 100 observers. This one does what a browser's native WebSocket does for a page:
    split frames, then (here) read the `seq` of each.
    """

    def __init__(self, path: str, host: str, sink: list[tuple[int, int]]) -> None:
        import base64

        from websockets.frames import Frame, Opcode

        from areasync.protocol import Hello, Role

        self.sink = sink
        self.buffer = bytearray()
        self.handshaken = False
        self.welcomed = asyncio.get_running_loop().create_future()
        self.ended = asyncio.get_running_loop().create_future()
        self.decode = msgspec.msgpack.Decoder(_Seq).decode
        self.gaps = 0
        key = base64.b64encode(os.urandom(16)).decode()
        self.request = (
            f"GET {path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
            "Sec-WebSocket-Version: 13\r\n\r\n"
        ).encode()
        hello = msgspec.msgpack.encode(Hello(id=0, role=Role.OBSERVER, token=TOKEN))
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
        # Split the frames; decode only the first and the last of this read (their seqs), and
        # check that the ones between are exactly the seqs between: contiguity is verified
        # while the per-frame cost stays a header parse.
        offset = 0
        size = len(buffer)
        view = memoryview(buffer)
        spans: list[tuple[int, int]] = []
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
            spans.append((start, start + length))
            offset = start + length
        if spans:
            first = self.decode(view[spans[0][0] : spans[0][1]])
            last = self.decode(view[spans[-1][0] : spans[-1][1]]) if len(spans) > 1 else first
            if first.type == "welcome":  # (its `seq` is the stream position, not an item's)
                if not self.welcomed.done():
                    self.welcomed.set_result(None)
                spans = spans[1:]
                if spans:  # live items right behind the welcome
                    first = self.decode(view[spans[0][0] : spans[0][1]])
            if spans and first.seq is not None and last.seq is not None:
                if last.seq - first.seq + 1 != len(spans):
                    self.gaps += 1
                self.sink.extend((seq, now) for seq in range(first.seq, last.seq + 1))
            if last.type == "ended" and not self.ended.done():
                self.ended.set_result(None)
        view.release()
        del buffer[:offset]


async def client_fanout(url: str, observers: int) -> dict[str, Any]:
    """Attach `observers` observers, say "ready", then record when each item arrives."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    loop = asyncio.get_running_loop()
    received: list[list[tuple[int, int]]] = [[] for _ in range(observers)]
    clients = []
    for sink in received:
        _, client = await loop.create_connection(
            lambda sink=sink: _RawObserver(parts.path, parts.netloc, sink),  # type: ignore[misc]
            parts.hostname or "127.0.0.1",
            parts.port or 80,
        )
        await client.welcomed
        clients.append(client)
    print("ready", flush=True)
    await asyncio.gather(*(client.ended for client in clients))
    for client in clients:
        client.transport.close()
    return {"received": received, "gaps": sum(client.gaps for client in clients)}


async def client_agents(
    base: str, session_ids: list[str], plan: list[tuple[float, str, dict[str, Any]]]
) -> dict[str, Any]:
    """One oracle agent per session, all concurrently; wall time until every session ended."""
    from websockets.asyncio.client import connect

    from areasync.protocol import (
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
            await ws.send(msgspec.msgpack.encode(Hello(id=0, role=Role.AGENT, token=TOKEN)))
            welcome = decode_server_frame(await ws.recv())
            assert isinstance(welcome, Welcome)
            start, now = welcome.clock.start_time, welcome.clock.time
            ids = iter(range(1, 10**9))

            async def request(frame: Any) -> Any:
                nonlocal now
                await ws.send(msgspec.msgpack.encode(frame))
                while True:
                    got = decode_server_frame(await ws.recv())
                    if isinstance(got, EventItem):
                        now = max(now, got.event.time)
                    elif isinstance(got, NotificationItem):
                        now = max(now, got.notification.timestamp)
                    elif isinstance(got, ClockItem):
                        now = max(now, got.clock.time)
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
            while not isinstance(decode_server_frame(await ws.recv()), EndedItem):
                pass

    started = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for session_id in session_ids:
            tg.start_soon(agent, session_id)
    return {"wall_s": time.perf_counter() - started, "failures": failures}


def client_main(argv: list[str]) -> int:
    spec = json.loads(argv[0])
    kind = spec.pop("kind")
    runner = {"rtt": client_rtt, "fanout": client_fanout, "agents": client_agents}[kind]
    result = anyio.run(lambda: runner(**spec))  # type: ignore[operator]
    print(json.dumps(result), flush=True)
    return 0


async def run_client(spec: dict[str, Any], *, ready: anyio.Event | None = None) -> Any:
    """Run a client process; if `ready` is given, set it when the client prints "ready"."""
    command = [sys.executable, SCRIPT, "client", json.dumps(spec)]
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


def _service(**overrides: Any) -> Any:
    from areasync.protocol import Mode
    from areasync.service import Service, ServiceConfig

    fields: dict[str, Any] = {
        "port": 0,
        "admin_token": TOKEN,
        "mode": Mode.MANUAL,
        "trace_dir": None,
        "rate": None,
        "ping_interval": None,
        "max_sessions": 1000,
        "max_lag": 10**7,
    }
    fields.update(overrides)
    return Service(ServiceConfig(**fields), scenarios=[])


async def bench_rtt(calls: int, rounds: int = 3) -> dict[str, Any]:
    """`rounds` interleaved rounds per encoding (the machine is noisy); the median round counts."""
    runs: dict[str, list[dict[str, Any]]] = {"msgpack": [], "json": []}
    async with _service() as service:
        for round_number in range(rounds):
            for encoding in ("msgpack", "json"):
                session = service.registry.create("scenario_tutorial", mode="manual")
                settle()
                log(f"rtt: round {round_number + 1}, {calls} tool calls and pings, {encoding}")
                runs[encoding].append(
                    await run_client(
                        {
                            "kind": "rtt",
                            "url": service.ws_url(session.id),
                            "encoding": encoding,
                            "calls": calls,
                            "warmup": min(500, calls // 4),
                        }
                    )
                )
    results = {}
    for encoding, rows in runs.items():
        median = sorted(rows, key=lambda row: row["call_tool"]["p50_us"])[len(rows) // 2]
        results[encoding] = {
            **median,
            "rounds_call_tool_p50_us": [row["call_tool"]["p50_us"] for row in rows],
            "rounds_call_tool_p99_us": [row["call_tool"]["p99_us"] for row in rows],
        }
    msgpack_call = results["msgpack"]["call_tool"]
    return {
        "what": (
            "sequential round trips over loopback, client in another process; "
            f"median of {rounds} interleaved rounds by call_tool p50"
        ),
        "results": results,
        "targets_met": {
            "msgpack_call_tool_p50_under_300us": msgpack_call["p50_us"] < 300,
            "msgpack_call_tool_p99_under_1ms": msgpack_call["p99_us"] < 1000,
        },
    }


def settle() -> None:
    """Freeze what exists into the permanent GC generation, as `areasync serve` does at start-up:
    full collections would otherwise scan ARE's ~1M long-lived objects mid-measurement."""
    gc.collect()
    gc.freeze()


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
def _timing_writes(written: list[tuple[int, int]]) -> Iterator[None]:
    """Record (seq, time) as the server hands each stream item to a socket (bench-only hook)."""
    from areasync.service.connection import Connection

    original = Connection._write_some

    def timed(self: Connection) -> None:
        before = self.position
        original(self)
        now = time.perf_counter_ns()
        written.extend((seq, now) for seq in range(before + 1, self.position + 1))

    Connection._write_some = timed  # type: ignore[method-assign]
    try:
        yield
    finally:
        Connection._write_some = original  # type: ignore[method-assign]


async def fanout_once(events: int, observers: int) -> dict[str, Any]:
    from bench.synthetic import synthetic_scenario

    logged: dict[int, int] = {}
    written: list[tuple[int, int]] = []
    outcome: dict[str, Any] = {}
    ready = anyio.Event()

    def on_logged(seq: int, item: Any) -> None:
        logged[seq] = time.perf_counter_ns()

    with _timing_writes(written):
        async with _service() as service:
            session = service.registry.create(synthetic_scenario(events), mode="fast")
            # The first listener: when ARE logged the item, before any fan-out work.
            session.sim.log.listeners.insert(0, on_logged)
            url = service.ws_url(session.id)

            async def observe() -> None:
                spec = {"kind": "fanout", "url": url, "observers": observers}
                outcome.update(await run_client(spec, ready=ready))

            async with anyio.create_task_group() as tg:
                tg.start_soon(observe)
                await ready.wait()
                settle()
                session.start_without_hold()  # go: the session runs flat out to its end
            slow = service.metrics.slow_consumer_disconnects
            env = session.sim.env
    received = outcome["received"]
    latencies = [(t - logged[seq]) / 1e6 for stream in received for seq, t in stream]
    write_latencies = [(t - logged[seq]) / 1e6 for seq, t in written if seq in logged]
    delivered = sum(len(stream) for stream in received)
    span_s = (max(t for stream in received for _, t in stream) - min(logged.values())) / 1e9
    expected = sorted(logged)
    complete = outcome["gaps"] == 0 and all(
        [seq for seq, _ in stream] == expected[-len(stream) :] for stream in received
    )
    are_cost = are_poll_cost(env)
    return {
        "observers": observers,
        "stream_items": len(logged),
        "delivered": delivered,
        "complete_and_in_order": complete,
        "slow_consumer_disconnects": slow,
        "items_per_s": round(delivered / span_s),
        "latency_p50_ms": round(percentile(latencies, 50), 2),
        "latency_p99_ms": round(percentile(latencies, 99), 2),
        "latency_max_ms": round(max(latencies), 2),
        "server_write_p50_ms": round(percentile(write_latencies, 50), 2),
        "server_write_p99_ms": round(percentile(write_latencies, 99), 2),
        "are_dashboard": {
            "log_events": len(env.event_log),
            "serialise_per_poll_ms": round(are_cost * 1000, 2),
            "cpu_per_poll_round_ms": round(are_cost * 1000 * observers, 1),
            "latency_bound_ms": round(250 + are_cost * 1000 * observers, 1),
        },
    }


async def bench_fanout(events: int, counts: list[int]) -> dict[str, Any]:
    rows = []
    for observers in counts:
        log(f"fanout: {events} events to {observers} observers")
        rows.append(await fanout_once(events, observers))
    at_100 = next((row for row in rows if row["observers"] == 100), None)
    return {
        "what": (
            f"{events} synthetic ENV events, fast mode, run flat out; msgpack observers in one "
            "other process (a minimal frame-splitting client: see _RawObserver)"
        ),
        "results": rows,
        "targets_met": {
            "p99_under_10ms_at_100_observers": None
            if at_100 is None
            else at_100["latency_p99_ms"] < 10
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
    passed = sum(1 for v in validations if v and v.get("success"))
    return {
        "what": f"{count} fast sessions of scenario_tutorial, one oracle agent socket each",
        "sessions": count,
        "create_s": round(created_s, 2),
        "agents_wall_s": round(outcome["wall_s"], 2),
        "validated": passed,
        "agent_failures": outcome["failures"][:5],
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
        report["rtt"] = await bench_rtt(args.calls)
    if "fanout" in wanted:
        report["fanout"] = await bench_fanout(args.events, [1, 10, 100])
    return report


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "client":
        return client_main(argv[1:])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small counts (a smoke run)")
    parser.add_argument("--only", default="rtt,fanout,sessions")
    parser.add_argument("--calls", type=int, default=None, help="round trips per encoding")
    parser.add_argument("--events", type=int, default=None, help="fan-out events")
    parser.add_argument("--sessions", type=int, default=None, help="concurrent sessions")
    args = parser.parse_args(argv)
    args.calls = args.calls or (500 if args.quick else 3000)
    args.events = args.events or (300 if args.quick else 2000)
    args.sessions = args.sessions or (20 if args.quick else 200)
    logging.disable(logging.WARNING)  # ARE narrates every run at INFO; the JSON is the output
    started = time.perf_counter()
    results = anyio.run(run_all, args)
    report = {
        "benchmark": "areasync service: round trips, fan-out, concurrent sessions",
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "websockets": metadata.version("websockets"),
            "are": metadata.version("meta-agents-research-environments"),
        },
        **results,
        "total_wall_s": round(time.perf_counter() - started, 1),
    }
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
