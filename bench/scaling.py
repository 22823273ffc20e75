"""What a second core buys: tool calls per second with 1 and 2 session workers, their ratio, and
the CPU each process spent per call.

    PYTHONPATH=. python bench/scaling.py [--sessions 32] [--calls 200] [--repeats 2]

Prints one JSON document with a verdict. For each of `--workers 1` and `--workers 2` (alternated
over `--repeats`, each a fresh `areasync serve` in manual mode, journaling as workers always
do: into a private temporary directory, or under `--state-dir`), `--sessions` sessions, one
agent each, all calling at once, each agent one call in flight (`SystemApp__get_current_time`,
as bench/front.py's `throughput`): `--calls` calls per agent after a warm-up. A reply waits for
its record's sync, so with one call in flight per session, calls/s is at most sessions / (sync
latency + CPU per call): enough sessions hide the disk's latency, and then the CPU is the limit.

The load comes from a separate process (this script's `load` command) made as cheap as a client
can honestly be: its WebSocket frames are written by hand, every call frame pre-encoded and
masked with a zero key (the protocol allows any key; XOR with zero leaves the bytes as they
are), every connection an `asyncio.Protocol` on one loop, a reply recognised by its first bytes,
never decoded. The server does its whole work (decoding, checks, the tool, the journal, the
event and the reply). The load process's CPU is reported beside the server's
(`load_share_of_cpu`), so a reader sees what the server had left: on 2 cores, CPU the client
spends is CPU the workers cannot.

CPU is read from /proc/PID/stat (user + system, all threads) before and after the calls, for
the front, each worker, the fork server and the load process, in microseconds per call. Wall
time is what calls/s rests on; on a shared machine it moves with the load (given before and
after), CPU per call much less. `cpu_capacity_calls_per_s` is what that CPU alone allows
(arithmetic: the busiest process has one core at most, and every process, the load's
included, shares the machine's cores). `journal` is the workers' own account (`/metrics`):
records and files synced per call, thread rounds per call (below the syncs: group commit
across sessions) and the mean wait of a record for its sync (what a reply waits for
durability).

`--single-process` adds the same calls against `--workers 0`, without a journal (its default)
and with one (`--state-dir`): what the journal costs a call, and what the worker adds.

`verdict` says whether 2 workers carried at least `--target` times the calls/s of 1 (medians of
the repeats), and the same ratio from the CPU per call.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.front import TOKEN, TOOL, Server

CLOCK_TICK = os.sysconf("SC_CLK_TCK")
CORES = len(os.sched_getaffinity(0))
WARMUP = 50


# -- the load process ---------------------------------------------------------------------------


def _client_frame(payload: bytes) -> bytes:
    """A masked text frame from a client (RFC 6455 5.2), with a zero masking key."""
    n = len(payload)
    if n < 126:
        head = bytes([0x81, 0x80 | n])
    elif n < 65536:
        head = bytes([0x81, 0x80 | 126]) + n.to_bytes(2, "big")
    else:
        head = bytes([0x81, 0x80 | 127]) + n.to_bytes(8, "big")
    return head + b"\0\0\0\0" + payload


PONG = bytes([0x8A, 0x80]) + b"\0\0\0\0"
RESULT = b'{"type":"result"'
CLOSE = bytes([0x88, 0x82]) + b"\0\0\0\0" + (1000).to_bytes(2, "big")


class Agent(asyncio.Protocol):
    """One agent's connection: the upgrade, the hello, then `calls` calls one at a time."""

    def __init__(self, host: str, port: int, session: str, calls: int, on_done: Any) -> None:
        self.request = (
            f"GET /sessions/{session} HTTP/1.1\r\nHost: {host}:{port}\r\n"
            "Upgrade: websocket\r\nConnection: Upgrade\r\n"
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        ).encode()
        hello = {"type": "hello", "id": 0, "role": "agent", "token": TOKEN}
        self.hello = _client_frame(json.dumps(hello).encode())
        self.frames = [
            _client_frame(
                json.dumps({"type": "call_tool", "id": n, "tool": TOOL, "args": {}}).encode()
            )
            for n in range(1, calls + 1)
        ]
        self.next = 0
        self.buffer = b""
        self.upgraded = False
        loop = asyncio.get_running_loop()
        self.welcomed = loop.create_future()
        self.closed: asyncio.Future[None] = loop.create_future()  # we sent a close frame
        self.ended: asyncio.Future[None] = loop.create_future()  # the connection is gone
        self.on_done = on_done
        self.stop_at = 0  # calls to make before waiting for `go` (the warm-up), then all

    def close(self) -> asyncio.Future[None]:
        """Send a close frame (1000); the future is done once the server's close came back."""
        self.transport.write(CLOSE)  # type: ignore[attr-defined]
        self.closed.set_result(None)
        return self.ended

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.ended.done():
            self.ended.set_result(None)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport
        transport.write(self.request)  # type: ignore[attr-defined]

    def run_to(self, stop_at: int) -> None:
        self.stop_at = stop_at
        self.transport.write(self.frames[self.next])  # type: ignore[attr-defined]
        self.next += 1

    def data_received(self, data: bytes) -> None:
        buffer = self.buffer + data
        if not self.upgraded:
            end = buffer.find(b"\r\n\r\n")
            if end < 0:
                self.buffer = buffer
                return
            if not buffer.startswith(b"HTTP/1.1 101"):
                raise RuntimeError(f"no upgrade: {buffer[:200]!r}")
            self.upgraded = True
            buffer = buffer[end + 4 :]
            self.transport.write(self.hello)  # type: ignore[attr-defined]
        while len(buffer) >= 2:
            opcode, n = buffer[0] & 0x0F, buffer[1] & 0x7F
            start = 2
            if n == 126:
                if len(buffer) < 4:
                    break
                n, start = int.from_bytes(buffer[2:4], "big"), 4
            elif n == 127:
                if len(buffer) < 10:
                    break
                n, start = int.from_bytes(buffer[2:10], "big"), 10
            if len(buffer) < start + n:
                break
            payload = buffer[start : start + n]
            buffer = buffer[start + n :]
            if opcode == 0x9:
                self.transport.write(PONG)  # type: ignore[attr-defined]
            elif opcode == 0x8:
                if not self.closed.done():
                    raise RuntimeError(f"closed by the server: {payload!r}")
                self.transport.close()
            elif not self.welcomed.done():
                if b'"welcome"' not in payload[:20]:
                    raise RuntimeError(f"refused: {payload[:300]!r}")
                self.welcomed.set_result(None)
            elif payload.startswith(RESULT):
                if self.next < self.stop_at:
                    self.transport.write(self.frames[self.next])  # type: ignore[attr-defined]
                    self.next += 1
                else:
                    self.on_done()
        self.buffer = buffer


async def handshakes(spec: dict[str, Any]) -> None:
    """Say `ready`, wait for `go`, then open, welcome and close `handshakes` agent connections,
    `concurrency` at a time over the sessions; say how long it took; wait for stdin to close."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    print("ready", flush=True)
    await reader.readline()
    sessions, count = spec["sessions"], spec["handshakes"]

    async def one_lane(lane: int) -> None:
        for n in range(lane, count, spec["concurrency"]):
            make = functools.partial(
                Agent, "127.0.0.1", spec["port"], sessions[n % len(sessions)], 0, lambda: None
            )
            _, agent = await loop.create_connection(make, "127.0.0.1", spec["port"])
            await agent.welcomed
            await agent.close()

    started = time.perf_counter()
    await asyncio.gather(*(one_lane(lane) for lane in range(spec["concurrency"])))
    elapsed = time.perf_counter() - started
    print(json.dumps({"elapsed_s": elapsed, "calls": count}), flush=True)
    await reader.read()


async def load(spec: dict[str, Any]) -> None:
    """Connect every agent, warm up, say `ready`, wait for `go` on stdin, run every call, say
    how long it took, then wait for stdin to close (so the caller reads our CPU first)."""
    loop = asyncio.get_running_loop()
    calls = spec["calls"]
    pending = 0
    finished = loop.create_future()

    def done() -> None:
        nonlocal pending
        pending -= 1
        if pending == 0:
            finished.set_result(None)

    # (host, port, session) of each agent: a server's sessions, or each at its own address.
    targets = spec.get("targets") or [("127.0.0.1", spec["port"], s) for s in spec["sessions"]]
    agents = []
    for host, port, session in targets:
        make = functools.partial(Agent, host, port, session, WARMUP + calls, done)
        _, agent = await loop.create_connection(make, host, port)
        await agent.welcomed
        agents.append(agent)
    pending, finished = len(agents), loop.create_future()
    for agent in agents:
        agent.run_to(WARMUP)
    await finished
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    print("ready", flush=True)
    await reader.readline()
    pending, finished = len(agents), loop.create_future()
    started = time.perf_counter()
    for agent in agents:
        agent.run_to(WARMUP + calls)
    await finished
    elapsed = time.perf_counter() - started
    print(json.dumps({"elapsed_s": elapsed, "calls": calls * len(agents)}), flush=True)
    await reader.read()


# -- the measuring process ----------------------------------------------------------------------


def _cpu(pid: int) -> float:
    """CPU seconds (user + system, every thread) of process `pid` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICK


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def _journal(server: Server) -> dict[str, float]:
    """The workers' journal counters, summed (`/metrics`)."""
    request_text = _metrics(server)
    out: dict[str, float] = {}
    for name in (
        "areasync_journal_records_total",
        "areasync_journal_syncs_total",
        "areasync_journal_sync_rounds_total",
        "areasync_journal_wait_seconds_total",
    ):
        found = re.search(rf"^{name} (\S+)$", request_text, re.MULTILINE)
        out[name] = float(found[1]) if found else float("nan")
    return out


def _metrics(server: Server) -> str:
    import urllib.request

    request = urllib.request.Request(
        f"http://127.0.0.1:{server.port}/metrics", headers={"Authorization": f"Bearer {TOKEN}"}
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return str(response.read().decode())


def _driven(
    server: Server, command: str, spec: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, float], dict[str, float]]:
    """Run the load process's `command` against `server`: what it said, the CPU each process
    spent per call (us) while it ran, and the journal counters' increase."""
    workers_pids = server.worker_pids()
    processes = {"front": server.process.pid}
    processes |= {name: pid for name, pid in sorted(workers_pids.items())}
    if workers_pids:
        processes["fork_server"] = _parent(next(iter(workers_pids.values())))
    spec = {"port": server.port, "sessions": server.ids, **spec}
    client = subprocess.Popen(
        [sys.executable, __file__, command, json.dumps(spec)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert client.stdin is not None and client.stdout is not None
    try:
        if client.stdout.readline().strip() != "ready":
            raise RuntimeError(f"the load process failed before its {command}")
        processes["load"] = client.pid
        before = {name: _cpu(pid) for name, pid in processes.items()}
        journal_before = _journal(server)
        client.stdin.write("go\n")
        client.stdin.flush()
        result = json.loads(client.stdout.readline())
        after = {name: _cpu(pid) for name, pid in processes.items()}
        journal_after = _journal(server)
    finally:
        client.stdin.close()
        client.wait(60)
    total = result["calls"]
    cpu_us = {n: round((after[n] - before[n]) / total * 1e6, 1) for n in processes}
    return result, cpu_us, {k: journal_after[k] - journal_before[k] for k in journal_after}


def measure(workers: int, sessions: int, calls: int, state_dir: str | None) -> dict[str, Any]:
    """One configuration: a fresh server, a fresh load process, the calls, the CPU."""
    server = Server(workers, sessions, state_dir)
    try:
        result, cpu_us, delta = _driven(server, "load", {"calls": calls})
    finally:
        server.stop()
    total = result["calls"]
    server_us = sum(v for n, v in cpu_us.items() if n != "load")
    records = delta["areasync_journal_records_total"]
    # What the CPU alone would allow: the busiest process takes a core at most, and all of
    # them (the load included) share the machine's cores.
    busiest = max(v for n, v in cpu_us.items() if n != "load")
    capacity = min(1e6 / busiest, CORES * 1e6 / (server_us + cpu_us["load"]))
    return {
        "calls": total,
        "calls_per_s": round(total / result["elapsed_s"]),
        "cpu_capacity_calls_per_s": round(capacity),
        "cpu_us_per_call": cpu_us | {"server": round(server_us, 1)},
        "load_share_of_cpu": round(
            cpu_us["load"] / (server_us + cpu_us["load"]) if server_us else 0.0, 3
        ),
        "journal": {
            "records_per_call": round(records / total, 2),
            "syncs_per_call": round(delta["areasync_journal_syncs_total"] / total, 3),
            "thread_rounds_per_call": round(delta["areasync_journal_sync_rounds_total"] / total, 3),
            "wait_us_per_record": round(
                delta["areasync_journal_wait_seconds_total"] / records * 1e6, 1
            )
            if records
            else None,
        },
    }


def measure_handshakes(count: int) -> dict[str, Any]:
    """The front's own cost: `count` agent connections opened, welcomed and closed, 8 at a
    time, through `--workers 2` (the front answers the upgrade, reads the hello, checks the
    token and hands the socket over; the worker welcomes it)."""
    server = Server(2, 8)
    try:
        result, cpu_us, _ = _driven(server, "handshakes", {"handshakes": count, "concurrency": 8})
    finally:
        server.stop()
    return {
        "handshakes": count,
        "per_s": round(count / result["elapsed_s"]),
        "cpu_us_per_handshake": cpu_us,
    }


def single_process(args: argparse.Namespace) -> dict[str, Any]:
    """The same calls against `--workers 0`: without a journal (its default) and with one."""
    with tempfile.TemporaryDirectory(prefix="bench-scaling-") as directory:
        return {
            "workers_0": measure(0, args.sessions, args.calls, None),
            "workers_0_journaled": measure(0, args.sessions, args.calls, directory),
        }


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] in ("load", "handshakes"):
        run = load if sys.argv[1] == "load" else handshakes
        asyncio.run(run(json.loads(sys.argv[2])))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=32)
    parser.add_argument("--calls", type=int, default=200, help="calls per agent")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--target", type=float, default=1.7)
    parser.add_argument("--handshakes", type=int, default=2000)
    parser.add_argument(
        "--single-process",
        action="store_true",
        help="also `--workers 0`, once without a journal and once with one",
    )
    parser.add_argument(
        "--state-dir",
        help="where the workers journal (default: a private temporary directory each run)",
    )
    args = parser.parse_args()
    started = time.perf_counter()
    load_before = [round(x, 2) for x in os.getloadavg()]
    runs: dict[str, list[dict[str, Any]]] = {"workers_1": [], "workers_2": []}
    for _ in range(args.repeats):
        for workers in (1, 2):
            state_dir = None
            if args.state_dir is not None:
                state_dir = tempfile.mkdtemp(prefix="bench-scaling-", dir=args.state_dir)
            result = measure(workers, args.sessions, args.calls, state_dir)
            runs[f"workers_{workers}"].append(result)
            if state_dir is not None:
                shutil.rmtree(state_dir, ignore_errors=True)
    medians = {
        name: statistics.median(run["calls_per_s"] for run in found) for name, found in runs.items()
    }
    ratio = medians["workers_2"] / medians["workers_1"]
    capacities = {
        name: statistics.median(run["cpu_capacity_calls_per_s"] for run in found)
        for name, found in runs.items()
    }
    cpu_ratio = capacities["workers_2"] / capacities["workers_1"]
    report = {
        "benchmark": "scaling",
        "sessions": args.sessions,
        "calls_per_agent": args.calls,
        "calls_per_s": medians,
        "ratio_2_over_1": round(ratio, 2),
        "cpu_capacity_calls_per_s": capacities,
        "cpu_ratio_2_over_1": round(cpu_ratio, 2),
        "verdict": (
            f"2 workers carried {ratio:.2f}x the calls/s of 1: "
            + ("meets" if ratio >= args.target else "misses")
            + f" the {args.target}x target (measured at load {load_before[0]}); by the CPU "
            f"each call took, {cpu_ratio:.2f}x"
        ),
        "runs": runs,
        "front_handshakes": measure_handshakes(args.handshakes),
        "single_process": single_process(args) if args.single_process else None,
        "machine": {
            "cores": os.cpu_count(),
            "load_before": load_before,
            "load_after": [round(x, 2) for x in os.getloadavg()],
        },
        "total_wall_s": round(time.perf_counter() - started, 1),
    }
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
