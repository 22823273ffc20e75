"""What a hostile client can make one server hold through its ports: memory, descriptors, time.

Runs against `areasync serve` started as a child of its own (`--mode manual --gaia2-port`), as
it runs by default (a front and one session worker per CPU; `--workers N` passes its own
count, 0 for one process), so that its resident memory and open descriptors are measured
alone: summed over every process of the server (the front, its fork server and its workers;
`processes` says how many), since through a front what a connection holds is split between
the front (before the hand-off) and the session's worker (after):

- `bodies`: `--posts` (100) clients at once POST `/openenv/<wrong token>/step` announcing a
  `--body-mib` (16) MiB body and sending it. Reported: the server's peak and settled RSS over
  its baseline, and how the requests were answered (the screens refuse them from their heads:
  401 before a byte of body is read).
- `hellos`: `--posts` sockets open a WebSocket and send a first message of `--body-mib` MiB
  (no hello yet: nobody knows who they are). Reported as above (a first message is held to
  `HELLO_BYTES` until the hello is accepted).
- `streams`: one observer token opens gaia2-cli `/events` streams until `--streams` (2,000)
  were tried. Reported: how many were served and refused (429 at `gaia2_streams_per_token`),
  the server's open descriptors at the peak, and whether `/health` on the main port answered.
- `stall` (in this process): a client says hello and never reads while a manual session
  streams 3,000 events of ~2 kB; the wall time from the server's decision to close it
  (`write_timeout` 0.5 s) to the client's socket seeing the reset (`close_timeout` 0.5 s).

    .venv/bin/python bench/ports.py            # ~1 min, prints JSON
    .venv/bin/python bench/ports.py --quick

Every wait is bounded.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import os
import select
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `bench` and `areasync` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import anyio

from bench.common import log

TOKEN = "bench-admin"
ROOT = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _tree(root: int) -> list[int]:
    """`root` and every process descending from it."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parents[int(entry)] = int(stat.rpartition(")")[2].split()[1])
    found, frontier = [root], [root]
    while frontier:
        frontier = [pid for pid, parent in parents.items() if parent in frontier]
        found += frontier
    return found


def _rss(root: int) -> int:
    """The resident bytes of `root` and its descendants."""
    total = 0
    for pid in _tree(root):
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
    return total


def _fds(root: int) -> int:
    """The open descriptors of `root` and its descendants."""
    total = 0
    for pid in _tree(root):
        with contextlib.suppress(OSError):
            total += len(os.listdir(f"/proc/{pid}/fd"))
    return total


class Server:
    """`areasync serve` in a child process, on free ports."""

    def __init__(self, workers: int | None) -> None:
        self.port = _free_port()
        self.gaia2_port = _free_port()
        command = [sys.executable, "-m", "areasync.cli", "serve", "--mode", "manual"]
        command += ["--port", str(self.port), "--gaia2-port", str(self.gaia2_port)]
        if workers is not None:
            command += ["--workers", str(workers)]
        command += ["--token", TOKEN, "--log-level", "warning"]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.process = subprocess.Popen(
            command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )

    async def ready(self) -> None:
        with anyio.fail_after(60):
            while True:
                if await _status(self.port, "/health") == 200:
                    return
                await anyio.sleep(0.1)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:  # pragma: no cover
            self.process.kill()


async def _status(port: int, target: str, limit: float = 5.0) -> int | None:
    head = f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    try:
        with anyio.fail_after(limit):
            async with await anyio.connect_tcp("127.0.0.1", port) as stream:
                await stream.send(head.encode())
                data = await stream.receive()
                return int(data.split(b" ", 2)[1])
    except (OSError, TimeoutError, ValueError, IndexError, anyio.EndOfStream):
        return None


async def _send_and_answer(port: int, head: bytes, body: bytes, limit: float) -> str:
    """Send `head` then `body`, as far as the server takes it; its answer's status, or how the
    connection ended."""
    try:
        with anyio.fail_after(limit):
            async with await anyio.connect_tcp("127.0.0.1", port) as stream:
                await stream.send(head)
                try:
                    for start in range(0, len(body), 1 << 20):
                        await stream.send(body[start : start + (1 << 20)])
                except (anyio.BrokenResourceError, OSError):
                    pass
                data = await stream.receive()
                return data.split(b" ", 2)[1].decode() if data.startswith(b"HTTP/") else "frame"
    except TimeoutError:
        return "no answer"
    except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
        return "closed"


async def _memory_run(server: Server, heads: list[bytes], body: bytes) -> dict[str, Any]:
    pid = server.process.pid
    base = _rss(pid)
    peak = base
    answers: dict[str, int] = {}

    async def one(head: bytes) -> None:
        answer = await _send_and_answer(server.port, head, body, 60.0)
        answers[answer] = answers.get(answer, 0) + 1

    async def sample(done: anyio.Event) -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, _rss(pid))
            await anyio.sleep(0.02)

    done = anyio.Event()
    async with anyio.create_task_group() as tg:
        tg.start_soon(sample, done)
        async with anyio.create_task_group() as clients:
            for head in heads:
                clients.start_soon(one, head)
        done.set()
    await anyio.sleep(2.0)
    mib = 1024 * 1024
    return {
        "requests": len(heads),
        "answers": answers,
        "rss_base_mib": round(base / mib, 1),
        "rss_peak_over_base_mib": round((peak - base) / mib, 1),
        "rss_after_2s_over_base_mib": round((_rss(pid) - base) / mib, 1),
    }


async def bodies(server: Server, posts: int, size: int) -> dict[str, Any]:
    head = (
        f"POST /openenv/wrong-token/step HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
        f"Content-Length: {size}\r\nConnection: close\r\n\r\n"
    ).encode()
    return await _memory_run(server, [head] * posts, b"x" * size)


async def hellos(server: Server, sockets: int, size: int) -> dict[str, Any]:
    from websockets.frames import Frame, Opcode

    heads = []
    for _ in range(sockets):
        key = base64.b64encode(os.urandom(16)).decode()
        heads.append(
            (
                f"GET /sessions/scenario_tutorial HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
                "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
            ).encode()
        )
    frame = Frame(Opcode.TEXT, b"x" * size).serialize(mask=True)
    return await _memory_run(server, heads, frame)


async def streams(server: Server, tries: int) -> dict[str, Any]:
    target = f"/gaia2/{TOKEN}/scenario_tutorial/events"
    held: list[anyio.abc.SocketStream] = []
    statuses: dict[str, int] = {}
    pid = server.process.pid
    fds_peak = _fds(pid)
    try:
        for _ in range(tries):
            try:
                stream = await anyio.connect_tcp("127.0.0.1", server.gaia2_port)
            except OSError:
                statuses["connect failed"] = statuses.get("connect failed", 0) + 1
                continue
            head = f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1:{server.gaia2_port}\r\n\r\n"
            await stream.send(head.encode())
            try:
                with anyio.fail_after(5):
                    data = await stream.receive()
                status = data.split(b" ", 2)[1].decode()
            except (TimeoutError, anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                status = "no answer"
            statuses[status] = statuses.get(status, 0) + 1
            if status == "200":
                held.append(stream)
            else:
                await stream.aclose()
            fds_peak = max(fds_peak, _fds(pid))
        health = await _status(server.port, "/health")
    finally:
        for stream in held:
            await stream.aclose()
    return {"tried": tries, "answers": statuses, "server_fds_peak": fds_peak, "health": health}


async def stall() -> dict[str, Any]:
    from areasync.protocol import Jump, Role
    from bench.misbehaving import RawClient, hello_frame
    from tests.hardening.test_slow_consumers import SESSION, PaddedTimeline
    from tests.service.support import ADMIN, attach, serving
    from tests.waiting import eventually

    limits: dict[str, Any] = {"write_timeout": 0.5, "close_timeout": 0.5, "ping_interval": None}
    limits |= {"max_lag": 10**9, "write_limit": 16 * 1024}
    async with serving(PaddedTimeline(3000), **limits) as service:
        client = await RawClient.open(service.port or 0, SESSION)
        try:
            await client.send(hello_frame(ADMIN))
            async with attach(service, Role.CONTROLLER, session=SESSION) as controller:
                await controller.call(Jump, by=400.0)
            await eventually(lambda: service.metrics.write_timeout_disconnects > 0, within=60)
            decided = time.monotonic()
            poller = select.poll()
            poller.register(client.sock, select.POLLHUP | select.POLLERR)
            events = await anyio.to_thread.run_sync(poller.poll, 200_000)
            gone = time.monotonic() - decided
        finally:
            client.close()
    return {"closed_after_s": round(gone, 2) if events else None, "close_timeout_s": 0.5}


async def main(args: argparse.Namespace) -> dict[str, Any]:
    size = args.body_mib * 1024 * 1024
    report: dict[str, Any] = {"python": sys.version.split()[0], "workers": args.workers}
    server = Server(args.workers)
    try:
        await server.ready()
        report["processes"] = len(_tree(server.process.pid))
        log("bodies")
        report["bodies"] = await bodies(server, args.posts, size)
        log("hellos")
        report["hellos"] = await hellos(server, args.posts, size)
        log("streams")
        report["streams"] = await streams(server, args.streams)
    finally:
        server.stop()
    log("stall")
    report["stall"] = await stall()
    return report


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--posts", type=int, default=100)
    parser.add_argument("--body-mib", type=int, default=16)
    parser.add_argument("--streams", type=int, default=2000)
    parser.add_argument(
        "--workers", type=int, default=None, help="serve's --workers (default: serve's own)"
    )
    parser.add_argument("--quick", action="store_true", help="10 posts of 4 MiB, 50 streams")
    parsed = parser.parse_args()
    if parsed.quick:
        parsed.posts, parsed.body_mib, parsed.streams = 10, 4, 50
    print(json.dumps(asyncio.run(main(parsed)), indent=2))
