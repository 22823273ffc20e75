"""Throughput benchmark: tool calls per core-second of the server, beside bare pings.

    python bench/throughput.py              # prints JSON; ~1 min
    python bench/throughput.py --quick      # small counts, a smoke run

What a tool call costs the *server*, in CPU, when agents keep it busy: the figure that says how
many agents one core serves. The server is `areasync.service.Service` in this process, set up
as in `bench/service.py` (`SERVICE_OVERRIDES`: manual-mode sessions, no traces, a rate bucket
that never refuses); the agents are plain `websockets` clients (msgpack, single frames) in one
other process. Each agent connects, makes `--warmup` calls, then, once every agent is ready,
makes its share of calls one after the other (each waits for its answer); with many sessions
their calls interleave on the server. Then the same with `ping` (the same round trip with no
simulation work), then calls again, and so on for `--rounds` rounds of each, alternated.

A figure is requests divided by the server process's CPU time (`time.process_time`: every
thread of it, the call watchdog's included) from the moment every agent is ready to the moment
they have all had their last answer; the best round of each kind is reported, with every
round's. `in_process` is `Simulation.call_tool` on its own (no socket), timed the same way
(`time.thread_time`), for the simulation's share. Cores are shared with the agents' process,
which is why the wall-clock rates are given only as context.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `bench` and `areasync` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import anyio

from bench.common import log, print_report
from bench.service import (
    PING_TOOL,
    _service,
    hello_agent,
    request_frame,
    run_client,
    settle,
)

SCRIPT = str(Path(__file__).resolve())


async def client_agents(urls: list[str], kind: str, calls: int, warmup: int) -> dict[str, Any]:
    """One agent per url: connect and warm up, print "ready", then `calls` sequential
    requests of `kind` each (all agents at once); the wall time of that part."""
    from websockets.asyncio.client import connect

    from areasync.protocol import (
        Encoding,
        Error,
        Pong,
        Result,
        decode_server_frame,
        encode_client_frame,
    )

    encoding = Encoding.MSGPACK
    go = anyio.Event()
    ready = 0
    failures: list[str] = []

    async def agent(url: str) -> None:
        nonlocal ready
        async with connect(url, compression=None, max_size=None) as ws:
            await hello_agent(ws, encoding)
            for number in range(1, warmup + calls + 1):
                if number == warmup + 1:
                    ready += 1
                    if ready == len(urls):
                        go.set()
                    await go.wait()
                await ws.send(encode_client_frame(request_frame(kind, number), encoding))
                while True:
                    answer = decode_server_frame(await ws.recv())
                    if isinstance(answer, Result | Pong | Error) and answer.id == number:
                        if isinstance(answer, Error):
                            failures.append(answer.message)
                        break

    started = 0.0

    async def start_clock() -> None:
        nonlocal started
        await go.wait()
        print("ready", flush=True)
        started = time.perf_counter()

    async with anyio.create_task_group() as group:
        group.start_soon(start_clock)
        for url in urls:
            group.start_soon(agent, url)
    return {"wall_s": time.perf_counter() - started, "failures": failures[:3]}


async def one_round(urls: list[str], kind: str, calls: int, warmup: int) -> dict[str, Any]:
    """One client process running every agent; the server's CPU while they make their calls."""
    ready = anyio.Event()
    cpu: dict[str, float] = {}

    async def mark_ready() -> None:
        await ready.wait()
        cpu["start"] = time.process_time()

    spec = {"kind": "agents", "urls": urls, "kind_of_request": kind, "calls": calls}
    spec["warmup"] = warmup
    async with anyio.create_task_group() as group:
        group.start_soon(mark_ready)
        outcome = await run_client(spec, ready=ready, script=SCRIPT)
    cpu_s = time.process_time() - cpu["start"]
    requests = calls * len(urls)
    if outcome["failures"]:
        raise RuntimeError(f"{kind}: the server answered errors: {outcome['failures']}")
    return {
        "requests": requests,
        "server_cpu_s": round(cpu_s, 4),
        "per_core_second": round(requests / cpu_s),
        "server_cpu_us_per_request": round(cpu_s / requests * 1e6, 1),
        "wall_per_second": round(requests / outcome["wall_s"]),
    }


async def bench_sessions(sessions: int, calls: int, rounds: int, warmup: int) -> dict[str, Any]:
    rows: dict[str, list[dict[str, Any]]] = {"call_tool": [], "ping": []}
    async with _service() as service:
        urls = [
            service.ws_url(service.registry.create("scenario_tutorial", mode="manual").id)
            for _ in range(sessions)
        ]
        for number in range(rounds):
            for kind in ("call_tool", "ping") if number % 2 == 0 else ("ping", "call_tool"):
                settle()
                log(f"throughput: {sessions} sessions, round {number + 1}, {kind}")
                rows[kind].append(await one_round(urls, kind, calls, warmup))
    report: dict[str, Any] = {}
    for kind, each in rows.items():
        best = max(each, key=lambda row: row["per_core_second"])
        report[kind] = {**best, "rounds_per_core_second": [r["per_core_second"] for r in each]}
    report["call_tool_cpu_over_ping"] = round(
        report["call_tool"]["server_cpu_us_per_request"]
        / report["ping"]["server_cpu_us_per_request"],
        2,
    )
    return report


async def in_process(calls: int, rounds: int) -> dict[str, Any]:
    """`Simulation.call_tool` alone: calls per core-second of the simulation's share."""
    import gc

    from areasync import Simulation

    sim = Simulation.load("scenario_tutorial", mode="manual")
    for _ in range(500):
        await sim.call_tool(PING_TOOL, {})
    best = float("inf")
    for _ in range(rounds):
        gc.collect()
        gc.freeze()
        started = time.thread_time()
        for _ in range(calls):
            await sim.call_tool(PING_TOOL, {})
        best = min(best, time.thread_time() - started)
        gc.unfreeze()
    await sim.stop()
    return {"per_core_second": round(calls / best), "cpu_us_per_call": round(best / calls * 1e6, 1)}


def client_main(argv: list[str]) -> int:
    spec = json.loads(argv[0])
    spec.pop("kind")
    kind = spec.pop("kind_of_request")
    result = anyio.run(lambda: client_agents(kind=kind, **spec))
    print(json.dumps(result), flush=True)
    return 0


async def run_all(args: argparse.Namespace) -> dict[str, Any]:
    report: dict[str, Any] = {"in_process": await in_process(args.calls * 2, args.rounds)}
    for sessions in (1, args.sessions):
        per_session = max(args.calls // sessions, 10)
        report[f"sessions_{sessions}"] = await bench_sessions(
            sessions, per_session, args.rounds, warmup=min(50, per_session)
        )
    return report


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "client":
        return client_main(argv[1:])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small counts (a smoke run)")
    parser.add_argument("--calls", type=int, default=None, help="requests per round, in all")
    parser.add_argument("--rounds", type=int, default=None, help="rounds of each kind")
    parser.add_argument("--sessions", type=int, default=200, help="the many-sessions figure")
    args = parser.parse_args(argv)
    args.calls = args.calls or (1000 if args.quick else 6000)
    args.rounds = args.rounds or (1 if args.quick else 3)
    logging.disable(logging.WARNING)  # ARE narrates every run at INFO; the JSON is the output
    load = [round(x, 2) for x in os.getloadavg()]
    started = time.perf_counter()
    results = anyio.run(run_all, args)
    return print_report(
        "areasync service: tool calls per core-second of the server, beside pings",
        load,
        results,
        started,
    )


if __name__ == "__main__":
    sys.exit(main())
