"""`areasync serve --workers N` against a single process: round trips, throughput, starts,
memory and recovery, side by side in one run.

    PYTHONPATH=. python bench/front.py [--calls 2000] [--sessions 8] [--agent-calls 300]

Prints one JSON document. Every server is a real `areasync serve` process (manual mode, the
admin token `TOKEN`), its clients plain `websockets` clients in this process:

* `rtt`: sequential round trips on one agent's socket, `call_tool` of a cheap tool
  (`SystemApp__get_current_time`) and `ping` (answered by the connection, no tool), in
  microseconds (median, p90, p99), with `--workers 0` (with and without `--state-dir`:
  workers always journal), 1 and 2.
* `throughput`: `--sessions` sessions, one agent each, all calling at once (`--agent-calls`
  sequential calls each): calls per second over all, with `--workers 0`, 1 and 2.
* `start`: seconds from the command to the banner of `--workers 2` (the fork server's boot
  and preload, both workers started and their services up); each worker's first start and,
  after the kills below, its restarts (the pool's measure: from asking the fork server for a
  process to its `Ready`).
* `memory`: each worker's RSS, PSS and USS once started (PSS/USS: what it adds beside the fork
  server's shared pages), then what 20 more sessions add to the workers' PSS, per session.
* `recovery`: from SIGKILL of the worker holding a session to that session's welcome on a live
  worker (the client says hello again every 10 ms meanwhile, as areasync's client retries
  4503), median of `--kills`.
* `machine`: cores and load average before and after (the machine may be shared).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from bench.workers import _memory

TOKEN = "bench-front-token"
TOOL = "SystemApp__get_current_time"
SERVE = [sys.executable, "-c", "import sys; from areasync.cli import main; sys.exit(main())"]


def _summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)

    def at(p: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(p * len(ordered)))], 1)

    return {"median": round(statistics.median(ordered), 1), "p90": at(0.9), "p99": at(0.99)}


class Server:
    """A running `areasync serve` and what its banner says."""

    def __init__(
        self,
        workers: int,
        sessions: int,
        state_dir: str | None = None,
        extra: Sequence[str] = (),
    ) -> None:
        command = [*SERVE, "serve", "--port", "0", "--mode", "manual", "--token", TOKEN]
        command += ["--workers", str(workers), "--log-level", "warning", *extra]
        if state_dir is not None:
            command += ["--state-dir", state_dir]
        for _ in range(sessions):
            command += ["--scenario", "scenario_tutorial"]
        self.started = time.perf_counter()
        self.process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
        banner = ""
        assert self.process.stdout is not None
        while "Ctrl-C" not in banner:
            line = self.process.stdout.readline()
            if not line:
                raise RuntimeError(f"the server ended before its banner: {banner}")
            banner += line
        self.start_s = time.perf_counter() - self.started
        self.banner = banner
        found = re.search(r"http://127\.0\.0\.1:(\d+)", banner)
        assert found
        self.port = int(found[1])
        # A session's line is "session ID  (...)"; the confinement line is no session's.
        self.ids = re.findall(r"^session (\S+)  \(", banner, re.MULTILINE)

    def url(self, session_id: str) -> str:
        return f"ws://127.0.0.1:{self.port}/sessions/{session_id}"

    def get(self, path: str) -> Any:
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}", headers={"Authorization": f"Bearer {TOKEN}"}
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            return json.loads(response.read())

    def post(self, body: dict[str, Any]) -> Any:
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/api/sessions",
            data=json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            return json.loads(response.read())

    def worker_pids(self) -> dict[str, int]:
        return {w["name"]: w["pid"] for w in self.get("/api/sessions")["workers"]}

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


async def _agent(url: str, **fields: Any) -> tuple[ClientConnection, dict[str, Any]]:
    ws = await connect(url, compression=None, max_size=None)
    await ws.send(json.dumps({"type": "hello", "id": 0, "role": "agent", "token": TOKEN, **fields}))
    try:
        return ws, json.loads(await ws.recv())
    except ConnectionClosed:
        return ws, {"type": "closed", "code": ws.close_code}


async def _round_trip(ws: ClientConnection, frame: dict[str, Any]) -> None:
    await ws.send(json.dumps(frame))
    while json.loads(await ws.recv()).get("id") != frame["id"]:
        pass


async def rtt(server: Server, calls: int) -> dict[str, Any]:
    ws, _ = await _agent(server.url(server.ids[0]))
    out: dict[str, list[float]] = {"call_tool": [], "ping": []}
    next_id = 1
    warmup = max(50, calls // 10)
    for kind in ("call_tool", "ping", "call_tool", "ping"):  # interleaved halves
        for n in range(warmup + calls // 2):
            frame: dict[str, Any] = {"type": "ping", "id": next_id}
            if kind == "call_tool":
                frame = {"type": "call_tool", "id": next_id, "tool": TOOL, "args": {}}
            started = time.perf_counter_ns()
            await _round_trip(ws, frame)
            if n >= warmup:
                out[kind].append((time.perf_counter_ns() - started) / 1000)
            next_id += 1
    await ws.close()
    return {kind: _summary(values) for kind, values in out.items()}


async def throughput(server: Server, calls: int) -> dict[str, Any]:
    agents = [await _agent(server.url(sid)) for sid in server.ids]

    async def run(ws: ClientConnection) -> None:
        for n in range(1, calls + 1):
            await _round_trip(ws, {"type": "call_tool", "id": n, "tool": TOOL, "args": {}})

    started = time.perf_counter()
    await asyncio.gather(*(run(ws) for ws, _ in agents))
    elapsed = time.perf_counter() - started
    for ws, _ in agents:
        await ws.close()
    total = calls * len(agents)
    return {"sessions": len(agents), "calls": total, "calls_per_s": round(total / elapsed)}


async def recovery(server: Server, kills: int) -> list[float]:
    times = []
    session_id = server.ids[0]
    for _ in range(kills):
        ws, welcome = await _agent(server.url(session_id))
        await ws.close()
        listed = server.get("/api/sessions")
        name = next(s["worker"] for s in listed["sessions"] if s["id"] == session_id)
        pid = next(w["pid"] for w in listed["workers"] if w["name"] == name)
        killed = time.perf_counter()
        os.kill(pid, signal.SIGKILL)
        while True:
            again, answer = await _agent(
                server.url(session_id), since=welcome["seq"], epoch=welcome["epoch"]
            )
            await again.close()
            if answer["type"] == "welcome":
                break
            await asyncio.sleep(0.01)
        times.append(time.perf_counter() - killed)
        for _ in range(1200):  # the restart: both workers up again
            if all(server.worker_pids().values()):
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)  # the restarted worker's service is up
    return times


async def memory(server: Server, more: int) -> dict[str, Any]:
    pids = server.worker_pids()
    before = {name: _memory(pid) for name, pid in pids.items()}
    for _ in range(more):
        server.post({"scenario": "scenario_tutorial", "mode": "manual"})
    after = {name: _memory(pid) for name, pid in pids.items()}
    added = sum(after[n]["pss_mb"] - before[n]["pss_mb"] for n in pids)
    return {
        "workers_started": before,
        "after_sessions": after,
        "sessions_added": more,
        "pss_mb_per_session": round(added / more, 2),
    }


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {"rtt": {}, "throughput": {}}
    # Workers always journal (a private directory without --state-dir): the single process
    # is measured both without journals (its default) and with them, the same durability.
    configurations = [("workers_0", 0, False), ("workers_0_journaled", 0, True)]
    configurations += [("workers_1", 1, False), ("workers_2", 2, False)]
    for name, workers, journaled in configurations:
        with tempfile.TemporaryDirectory(prefix="bench-front-") as directory:
            server = Server(workers, args.sessions, directory if journaled else None)
            try:
                out["rtt"][name] = await rtt(server, args.calls)
                out["throughput"][name] = await throughput(server, args.agent_calls)
            finally:
                server.stop()
    server = Server(2, 1)
    try:
        first = {w["name"]: w["starts_s"] for w in server.get("/api/sessions")["workers"]}
        out["memory"] = await memory(server, 20)
        times = await recovery(server, args.kills)
        later = [w["starts_s"] for w in server.get("/api/sessions")["workers"]]
        restarts = [s for starts in later for s in starts[1:]]
        out["start"] = {
            "banner_s": round(server.start_s, 2),
            "first_starts_s": {n: [round(s, 3) for s in v] for n, v in first.items()},
            "restart_s_median": round(statistics.median(restarts), 3) if restarts else None,
        }
        out["recovery"] = {
            "kills": len(times),
            "median_s": round(statistics.median(times), 3),
            "max_s": round(max(times), 3),
        }
    finally:
        server.stop()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--agent-calls", type=int, default=300)
    parser.add_argument("--kills", type=int, default=5)
    args = parser.parse_args()
    load_before = os.getloadavg()
    result = asyncio.run(main_async(args))
    result["machine"] = {
        "cores": os.cpu_count(),
        "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in os.getloadavg()],
    }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
