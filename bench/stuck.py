"""Slow and stuck consumers: does anyone else notice them? Latency, pace and memory, side by side.

One realtime session (`PaddedScenario`: N ENV events of ~2 kB, ten per simulated second, so
that a client that stops reading fills its buffers within seconds) streams to one well-behaved
observer (msgpack, reads everything at once), run twice in one process:

- `baseline`: the observer alone;
- `stuck`: the same, plus misbehaving clients attached from the start (`bench/misbehaving.py`):
  `--never-reading` clients that say hello and never read a byte, `--mid-frame` clients that
  also stop in the middle of a frame, and `--slow` readers that read one message every 20 ms
  and, once evicted, reconnect with `since` and go on reading slowly (a persistent laggard).
  The slow readers run in a second process: they do real client work (parsing what they read,
  replays after each eviction), which in this process would be charged to the observer.

Reported per run: the observer's latency (from the session's stream append, timed in the
server, to the observer's `recv` returning, timed in the client: same process, same clock;
p50, p99, max), how far the realtime clock ran behind its schedule (`clock.lag`: max of the
samples) and the run's wall time against its simulated duration / speed, evictions (4008),
the most any one connection buffered (socket buffer + unread replies, sampled every 2 ms) with
the bound it must respect, and the process's resident memory before and after.

    .venv/bin/python bench/stuck.py            # ~30 s, prints JSON
    .venv/bin/python bench/stuck.py --quick    # a smoke run
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `bench` and `areasync` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import anyio
from are.simulation.apps.app import App
from are.simulation.scenarios.scenario import Scenario
from are.simulation.tool_utils import OperationType
from are.simulation.types import Action, Event, EventType, event_registered
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from areasync.protocol import (
    CloseCode,
    Encoding,
    EndedItem,
    Hello,
    Mode,
    Role,
    Welcome,
    decode_server_frame,
    encode_client_frame,
)
from areasync.service import Service, ServiceConfig
from areasync.service.fanout.frames import WRITE_BYTES
from areasync.service.gc_policy import settle as settle_gc
from bench.common import log, percentile, rss_bytes
from bench.misbehaving import RawClient, hello_frame, partial_frame, small_socket

TOKEN = "bench-admin"
SESSION = "areasync_bench_padded"
SCRIPT = str(Path(__file__).resolve())
PER_SECOND = 10  # events per simulated second
PAD = "x" * 2000


class NoteApp(App):
    """Notes down text; each note is one ~2 kB ENV event on the stream."""

    def __init__(self, name: str | None = "NoteApp") -> None:
        super().__init__(name)
        self.count = 0

    @event_registered(operation_type=OperationType.WRITE, event_type=EventType.ENV)
    def note(self, text: str) -> int:
        self.count += 1
        return self.count

    def get_state(self) -> dict[str, Any]:
        return {"count": self.count}

    def load_state(self, state_dict: dict[str, Any]) -> None:
        self.count = int(state_dict["count"])


class PaddedScenario(Scenario):
    """`n_events` ENV events of ~2 kB, PER_SECOND per simulated second."""

    scenario_id: str = SESSION
    n_events: int = 5000
    start_time: float | None = 0.0
    duration: float | None = None

    def init_and_populate_apps(self, *args: Any, **kwargs: Any) -> None:
        self.apps = [NoteApp()]

    def build_events_flow(self) -> None:
        app = self.get_typed_app(NoteApp)
        self.events = [
            Event(
                event_type=EventType.ENV,
                event_relative_time=float(i // PER_SECOND),
                action=Action(function=app.note, args={"text": f"{i}:{PAD}"}, app=app),
            )
            for i in range(self.n_events)
        ]
        self.duration = float(self.n_events // PER_SECOND + 1)


def padded_scenario(n_events: int) -> PaddedScenario:
    scenario = PaddedScenario(n_events=n_events)
    scenario.initialize()
    return scenario


def buffered(service: Service) -> int:
    """The most any one connection holds now: its socket's buffer plus its unread replies."""
    return max((connection.buffered_bytes for connection in service.connections), default=0)


async def observe(url: str, appended: dict[int, float], latencies: list[float]) -> int:
    """The well-behaved observer: reads to `ended`; returns the last seq (checked contiguous)."""
    async with connect(url, max_size=None) as ws:
        hello = Hello(id=0, role=Role.OBSERVER, token=TOKEN, since=0)
        await ws.send(encode_client_frame(hello, Encoding.MSGPACK))
        welcome = decode_server_frame(await ws.recv())
        assert isinstance(welcome, Welcome)
        last = 0
        while True:
            frame = decode_server_frame(await ws.recv())
            now = time.perf_counter()
            seq = getattr(frame, "seq", None)
            if seq is None:
                continue
            assert seq == last + 1, f"gap: {last} -> {seq}"
            last = seq
            if seq > welcome.seq and seq in appended:  # live items, not the initial replay
                latencies.append(now - appended[seq])
            if isinstance(frame, EndedItem):
                return last


async def laggard(port: int, url: str, pause: float, stop: anyio.Event, evicted: list[int]) -> None:
    """Reads one message per `pause`; evicted, it reconnects with since and goes on slowly."""
    since, epoch = 0, None
    while not stop.is_set():
        sock = await small_socket(port)
        async with connect(url, sock=sock, max_queue=1, max_size=None) as ws:
            hello = Hello(id=0, role=Role.OBSERVER, token=TOKEN, since=since, epoch=epoch)
            await ws.send(encode_client_frame(hello, Encoding.JSON))
            welcome = decode_server_frame(await ws.recv())
            assert isinstance(welcome, Welcome)
            epoch = welcome.epoch
            try:
                while not stop.is_set():
                    frame = decode_server_frame(await ws.recv())
                    since = getattr(frame, "seq", since)
                    if isinstance(frame, EndedItem):
                        return
                    await anyio.sleep(pause)
            except ConnectionClosed as exc:
                evicted.append(0 if exc.rcvd is None else exc.rcvd.code)


async def run_once(
    events: int, speed: float, max_lag: int, never_reading: int, mid_frame: int, slow: int
) -> dict[str, Any]:
    config = ServiceConfig(
        port=0,
        admin_token=TOKEN,
        trace_dir=None,
        mode=Mode.REALTIME,
        speed=speed,
        ping_interval=None,
        max_lag=max_lag,
    )
    scenario = padded_scenario(events)
    rss_before = rss_bytes()
    async with Service(config, [scenario]) as service:
        settle_gc()  # the GC policy `areasync serve` applies after start-up
        assert service.port is not None
        session = service.registry.get(SESSION)
        assert session is not None
        url = service.ws_url(SESSION)
        appended: dict[int, float] = {}
        session.sim.log.listeners.append(
            lambda seq, item: appended.__setitem__(seq, time.perf_counter())
        )
        latencies: list[float] = []
        stuck: list[RawClient] = []
        peak, lag = [0], [0.0]
        stop = anyio.Event()
        for n in range(never_reading + mid_frame):
            client = await RawClient.open(service.port, SESSION)
            await client.send(hello_frame(TOKEN))
            if n >= never_reading:
                await client.send(partial_frame())
            stuck.append(client)

        laggards = None
        if slow:
            laggards = await asyncio.create_subprocess_exec(
                sys.executable,
                SCRIPT,
                "--laggards",
                str(slow),
                "--port",
                str(service.port),
                stdout=asyncio.subprocess.DEVNULL,
            )

        async def sample() -> None:
            while not stop.is_set():
                peak[0] = max(peak[0], buffered(service))
                lag[0] = max(lag[0], session.sim.lag)
                await anyio.sleep(0.002)

        started = time.perf_counter()
        async with anyio.create_task_group() as tg:
            tg.start_soon(sample)
            last = await observe(url, appended, latencies)
            wall = time.perf_counter() - started
            stop.set()
        if laggards is not None:
            laggards.terminate()  # they would read on, slowly, to `ended`
            with anyio.fail_after(60):
                await laggards.wait()
        largest = max(len(frame.text_frame) for frame in session.hub.frames)
        evictions = service.metrics.closes[CloseCode.SLOW_CONSUMER]
        for client in stuck:
            client.close()
    simulated = float((events - 1) // PER_SECOND)
    return {
        "clients": {"never_reading": never_reading, "mid_frame": mid_frame, "slow": slow},
        "items": last,
        "observer_latency_ms": {
            "n": len(latencies),
            "p50": round(percentile(latencies, 50) * 1e3, 3),
            "p99": round(percentile(latencies, 99) * 1e3, 3),
            "max": round(max(latencies, default=float("nan")) * 1e3, 3),
        },
        "pace": {
            "wall_s": round(wall, 3),
            "scheduled_s": round(simulated / speed, 3),
            "max_clock_lag_s": round(lag[0], 4),
        },
        "evictions_4008": evictions,
        "per_connection_buffer_peak_bytes": peak[0],
        "per_connection_buffer_bound_bytes": config.write_limit + WRITE_BYTES + largest,
        "rss_mb": {"before": round(rss_before / 2**20, 1), "after": round(rss_bytes() / 2**20, 1)},
    }


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    runs = {}
    for name, counts in (
        ("baseline", (0, 0, 0)),
        ("stuck", (args.never_reading, args.mid_frame, args.slow)),
    ):
        log(f"{name}: {args.events} events at speed {args.speed:g}, clients {counts}")
        runs[name] = await run_once(args.events, args.speed, args.max_lag, *counts)
    base, stuck = runs["baseline"]["observer_latency_ms"], runs["stuck"]["observer_latency_ms"]
    return {
        "what": "a well-behaved observer's latency with and without stuck and slow clients",
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "runs": runs,
        "ratio_stuck_over_baseline": {
            "p50": round(stuck["p50"] / base["p50"], 2) if base["p50"] else None,
            "p99": round(stuck["p99"] / base["p99"], 2) if base["p99"] else None,
        },
    }


async def laggards_main(count: int, port: int) -> None:
    """The slow readers' process: `count` laggards until the session ends."""
    url = f"ws://127.0.0.1:{port}/sessions/{SESSION}"
    never = anyio.Event()
    async with anyio.create_task_group() as tg:
        for _ in range(count):
            tg.start_soon(laggard, port, url, 0.02, never, [])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=6_000)
    parser.add_argument("--speed", type=float, default=60.0, help="simulated s per wall s")
    parser.add_argument("--max-lag", type=int, default=1_000, help="ServiceConfig.max_lag")
    parser.add_argument("--never-reading", type=int, default=50)
    parser.add_argument("--mid-frame", type=int, default=25)
    parser.add_argument("--slow", type=int, default=25)
    parser.add_argument("--quick", action="store_true", help="3,000 events, 10+5+5 clients")
    parser.add_argument("--laggards", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.laggards:
        asyncio.run(laggards_main(args.laggards, args.port))
        return 0
    if args.quick:
        args.events, args.never_reading, args.mid_frame, args.slow = 3_000, 10, 5, 5
    result = asyncio.run(main_async(args))
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
