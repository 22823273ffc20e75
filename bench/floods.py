"""Floods: can idle pre-hello sockets or a request flooder keep legitimate clients out or slow?

Three runs against one in-process `Service` (default limits; manual mode: only requests cost):

- `baseline`: N legitimate clients connect, send `hello` at once and make `--pings` pings each;
- `idle_pre_hello`: the same while `--idlers` sockets (default 1,100) complete the WebSocket
  handshake and never say hello, reopening as soon as the server closes one (`Idlers`, in a
  second process, so that their work is not charged to the server's loop);
- `flooder`: the same while one authenticated client sends pings as fast as it can, ignoring
  `rate_limited` (in a second process), until it is closed.

Reported per run: the legitimate clients' connect+hello success rate, connect+hello time
(p50/p99) and ping round trip (p50/p99); for the idlers, how many sockets they opened and how
each was closed (close code, or "dropped" with no close frame); for the flooder, how it was
closed and how many replies it got.

    .venv/bin/python bench/floods.py            # ~1 min, prints JSON
    .venv/bin/python bench/floods.py --quick    # a smoke run

`Idlers` is also what `tests/hardening/test_floods.py` holds open. Every wait is bounded.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import collections
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
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from areasync.protocol import (
    Encoding,
    Hello,
    Mode,
    Ping,
    Role,
    Welcome,
    decode_server_frame,
    encode_client_frame,
)
from areasync.service import Service, ServiceConfig
from bench.common import log, percentile
from bench.misbehaving import close_code

TOKEN = "bench-admin"
SESSION = "scenario_tutorial"
SCRIPT = str(Path(__file__).resolve())
HELLO = Hello(id=0, role=Role.OBSERVER, token=TOKEN)


def raise_open_files_limit() -> None:
    """As `areasync serve` does (areasync.service.fdlimit; absent from older trees)."""
    try:
        from areasync.service.fdlimit import raise_open_files_limit as raise_limit
    except ImportError:
        import resource

        _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        return
    raise_limit()


def _handshake(port: int, session: str) -> bytes:
    key = base64.b64encode(os.urandom(16)).decode()
    return (
        f"GET /sessions/{session} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        "Upgrade: websocket\r\nConnection: Upgrade\r\n"
        f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
    ).encode()


class Idlers:
    """`count` sockets that finish the WebSocket handshake and never say hello, each reopened
    as soon as the server closes it, until `stop()` (or `seconds` pass).

    `closes` counts how each socket ended: its close code, "dropped" (the TCP connection ended
    with no close frame: aborted before or after the handshake), or "refused" (the handshake
    was answered with an HTTP error, or the connection failed).
    """

    def __init__(self, port: int, count: int, *, session: str = SESSION, seconds: float = 60.0):
        self.port = port
        self.count = count
        self.session = session
        self.seconds = seconds
        self.opened = 0
        self.open_now = 0
        self.handshakes = 0
        self.closes: collections.Counter[str] = collections.Counter()
        self.full = anyio.Event()  # set once `count` sockets have been open together
        self._stop = anyio.Event()

    def stop(self) -> None:
        self._stop.set()

    async def run(self) -> None:
        with anyio.move_on_after(self.seconds):
            async with anyio.create_task_group() as tg:
                for _ in range(self.count):
                    tg.start_soon(self._one)
                await self._stop.wait()
                tg.cancel_scope.cancel()

    async def _one(self) -> None:
        while not self._stop.is_set():
            await self._hold_once()

    async def _hold_once(self) -> None:
        writer = None
        outcome = "refused"
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
            self.opened += 1
            self.open_now += 1
            if self.open_now >= self.count:
                self.full.set()
            try:
                writer.write(_handshake(self.port, self.session))
                head = await reader.readuntil(b"\r\n\r\n")
                if not head.startswith(b"HTTP/1.1 101"):
                    return
                self.handshakes += 1
                outcome = "dropped"
                received = b""
                while True:  # never send a byte more; read until the server closes
                    chunk = await reader.read(65536)
                    if not chunk:
                        break
                    received += chunk
                    code = close_code(received)
                    if code is not None:
                        outcome = str(code)
                        break
            finally:
                self.open_now -= 1
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        finally:
            if not self._stop.is_set():
                self.closes[outcome] += 1
            if writer is not None:
                writer.transport.abort()
            await asyncio.sleep(0)


async def legit_client(url: str, pings: int, bound: float = 10.0) -> dict[str, Any]:
    """Connect, say hello at once, ping `pings` times, all within `bound` seconds: the outcome
    and the times, in us."""
    started = time.perf_counter()
    try:
        with anyio.fail_after(bound):
            async with connect(url, open_timeout=bound, compression=None) as ws:
                await ws.send(encode_client_frame(HELLO, Encoding.JSON))
                welcome = decode_server_frame(await ws.recv())
                if not isinstance(welcome, Welcome):
                    return {"ok": False, "why": f"got {type(welcome).__name__}"}
                hello_us = (time.perf_counter() - started) * 1e6
                rtts = []
                for n in range(pings):
                    sent = time.perf_counter()
                    await ws.send(encode_client_frame(Ping(id=n + 1), Encoding.JSON))
                    await ws.recv()
                    rtts.append((time.perf_counter() - sent) * 1e6)
                return {"ok": True, "hello_us": hello_us, "rtts": rtts}
    except (OSError, TimeoutError, ConnectionClosed) as exc:
        return {"ok": False, "why": f"{type(exc).__name__}: {exc}"[:200]}
    except Exception as exc:  # InvalidStatus (503) and the like
        return {"ok": False, "why": f"{type(exc).__name__}: {exc}"[:200]}


async def legit_round(
    url: str, clients: int, pings: int, spacing: float, bound: float = 10.0
) -> dict[str, Any]:
    """`clients` legitimate clients, one every `spacing` seconds, concurrently."""
    results: list[dict[str, Any]] = []

    async def one(delay: float) -> None:
        await anyio.sleep(delay)
        results.append(await legit_client(url, pings, bound))

    async with anyio.create_task_group() as tg:
        for i in range(clients):
            tg.start_soon(one, i * spacing)
    ok = [r for r in results if r["ok"]]
    hellos = [r["hello_us"] for r in ok]
    rtts = [x for r in ok for x in r["rtts"]]
    why = collections.Counter(r["why"].split(":")[0] for r in results if not r["ok"])
    return {
        "clients": clients,
        "welcomed": len(ok),
        "round_trips": len(rtts),
        "success_rate": round(len(ok) / clients, 3),
        "failures": dict(why),
        "connect_hello_p50_ms": round(percentile(hellos, 50) / 1000, 2) if hellos else None,
        "connect_hello_p99_ms": round(percentile(hellos, 99) / 1000, 2) if hellos else None,
        "ping_p50_ms": round(percentile(rtts, 50) / 1000, 3) if rtts else None,
        "ping_p99_ms": round(percentile(rtts, 99) / 1000, 3) if rtts else None,
    }


# -- the misbehaving side, in a process of its own ----------------------------------------------


async def _until_stdin_closes(idlers: Idlers) -> None:
    # The parent closes our stdin when it is done measuring.
    await anyio.to_thread.run_sync(sys.stdin.buffer.read, abandon_on_cancel=True)
    idlers.stop()


async def _say_when_full(idlers: Idlers) -> None:
    await idlers.full.wait()
    print(json.dumps({"full": idlers.count}), flush=True)


async def _idlers_main(port: int, count: int, seconds: float) -> None:
    idlers = Idlers(port, count, seconds=seconds)
    async with anyio.create_task_group() as tg:
        tg.start_soon(_until_stdin_closes, idlers)
        tg.start_soon(_say_when_full, idlers)
        await idlers.run()
        tg.cancel_scope.cancel()
    print(
        json.dumps(
            {
                "idlers": count,
                "sockets_opened": idlers.opened,
                "handshakes_completed": idlers.handshakes,
                "closed": dict(idlers.closes),
            }
        ),
        flush=True,
    )


async def _flooder_main(url: str, seconds: float) -> None:
    replies: collections.Counter[str] = collections.Counter()
    code: int | None = None
    sent = 0
    started = time.perf_counter()
    with anyio.move_on_after(seconds):
        async with connect(url, compression=None, max_queue=None) as ws:
            await ws.send(encode_client_frame(HELLO, Encoding.JSON))
            await ws.recv()

            async def drain() -> None:
                async for data in ws:
                    frame = decode_server_frame(data)
                    replies[type(frame).__name__ if frame is not None else "?"] += 1

            try:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(drain)
                    ping = encode_client_frame(Ping(id=1), Encoding.JSON)
                    while True:
                        for _ in range(100):
                            await ws.send(ping)
                        sent += 100
                        await asyncio.sleep(0)
            except* ConnectionClosed:
                pass
            code = ws.close_code
    print(
        json.dumps(
            {
                "sent": sent,
                "replies": dict(replies),
                "close_code": code,
                "closed_after_s": round(time.perf_counter() - started, 2),
            }
        ),
        flush=True,
    )


async def _clients_main(port: int, clients: int, pings: int, bound: float) -> None:
    # Legitimate clients in a process of their own, as they would be: their hello goes out when
    # the server's handshake reaches them, not when a loop they share with the server frees up.
    url = f"ws://127.0.0.1:{port}/sessions/{SESSION}"
    print(json.dumps(await legit_round(url, clients, pings, 0.0, bound)), flush=True)


def helper_main(argv: list[str]) -> int:
    raise_open_files_limit()
    kind, port, *rest = argv
    if kind == "idlers":
        anyio.run(_idlers_main, int(port), int(rest[0]), float(rest[1]))
    elif kind == "clients":
        anyio.run(_clients_main, int(port), int(rest[0]), int(rest[1]), float(rest[2]))
    else:
        anyio.run(_flooder_main, f"ws://127.0.0.1:{port}/sessions/{SESSION}", float(rest[0]))
    return 0


async def _helper(*args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        SCRIPT,
        "helper",
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )


async def _report(process: asyncio.subprocess.Process) -> dict[str, Any]:
    assert process.stdout is not None and process.stdin is not None
    process.stdin.close()  # stop now
    with anyio.fail_after(120):
        out = await process.stdout.read()
        await process.wait()
    return json.loads(out.decode().strip().splitlines()[-1]) if out.strip() else {}


async def run_all(args: argparse.Namespace) -> dict[str, Any]:
    overrides = {"max_pending_hellos": args.pool} if args.pool else {}
    config = ServiceConfig(port=0, admin_token=TOKEN, mode=Mode.MANUAL, trace_dir=None, **overrides)
    async with Service(config, [SESSION]) as service:
        url = service.ws_url(SESSION)
        port = str(service.port)
        results: dict[str, Any] = {}
        log("baseline")
        results["baseline"] = await legit_round(url, args.clients, args.pings, args.spacing)

        log(f"idle pre-hello: {args.idlers} sockets")
        idlers = await _helper("idlers", port, str(args.idlers), str(args.seconds))
        await anyio.sleep(args.settle)  # let the idlers fill the pool and churn
        under = await legit_round(url, args.clients, args.pings, args.spacing)
        under["pending_evictions"] = getattr(service.metrics, "pending_evictions", None)
        under["idlers"] = await _report(idlers)
        results["idle_pre_hello"] = under

        log("flooder")
        before = getattr(service.metrics, "rate_limit_disconnects", 0)
        flooder = await _helper("flooder", port, str(args.seconds))
        await anyio.sleep(0.2)
        flooded = await legit_round(url, args.clients, args.pings, args.spacing)
        flooded["flooder"] = await _report(flooder)
        flooded["rate_limit_disconnects"] = (
            getattr(service.metrics, "rate_limit_disconnects", 0) - before
        )
        results["flooder"] = flooded
        return results


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "helper":
        return helper_main(argv[1:])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small counts (a smoke run)")
    parser.add_argument("--clients", type=int, default=None, help="legitimate clients per run")
    parser.add_argument("--pings", type=int, default=50, help="pings per legitimate client")
    parser.add_argument("--idlers", type=int, default=1100, help="idle pre-hello sockets")
    parser.add_argument("--spacing", type=float, default=0.05, help="s between legit clients")
    parser.add_argument("--settle", type=float, default=3.0, help="s for the idlers to settle")
    parser.add_argument("--pool", type=int, default=None, help="max_pending_hellos")
    parser.add_argument("--seconds", type=float, default=None, help="idlers/flooder give up")
    args = parser.parse_args(argv)
    args.clients = args.clients or (10 if args.quick else 100)
    args.seconds = args.seconds or (15.0 if args.quick else 30.0)
    raise_open_files_limit()
    load = [round(x, 2) for x in os.getloadavg()]
    started = time.perf_counter()
    results = anyio.run(run_all, args)
    report = {
        "benchmark": "areasync service: legitimate clients beside idle pre-hello sockets and a "
        "flooder",
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "load_average_at_start": load,
        },
        "defaults": {
            name: getattr(ServiceConfig(), name, None)
            for name in (
                "max_connections",
                "max_pending_hellos",
                "handshake_timeout",
                "hello_timeout",
                "rate",
                "burst",
                "rate_strikes",
            )
        },
        **results,
        "total_wall_s": round(time.perf_counter() - started, 1),
    }
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
