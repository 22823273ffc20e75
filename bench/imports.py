"""Import benchmark: ARE's JSON import against areasync's, and the event loop while one runs.

    python bench/imports.py                  # prints one JSON document; ~1.5 min on 2 cores
    python bench/imports.py --quick          # 1k/4k events, ARE's side at 1k only
    python bench/imports.py --sizes 1000,4000,16000 --are-max 4000 --stall-events 6000

Scenarios are `bench.synthetic.synthetic_scenario_json(n)`: ARE's export format, Gaia2-shaped
(4 turns, ENV chains with placeholders, oracle events fanning in on up to three others, one
end of turn per turn), so every check ARE runs per event runs.

- `imports`: for each size, the best of `--repeat` runs of
  * ARE plain: `JsonScenarioImporter.import_from_json` + `Scenario.initialize`;
  * ARE benchmark: `import_from_json_to_benchmark` + `preprocess_scenario(judge_config=None)`;
  * areasync plain / benchmark: `bridge.scenarios.load` (vet_json, the import in pieces with
    the linear event import, initialisation, `confine_file_systems`): everything that runs
    in create_session's worker thread;
  * areasync session: `Simulation.load` of the imported scenario (the ARE environment, its
    event queue), what create_session then does on the event loop.
  ARE's side is quadratic, so it runs only up to `--are-max` events (default 4,000: ~25 s a
  run there); `ratio` is ARE's time over areasync's, `us_per_event` shows linear growth.
- `stall`: a real server on loopback (`areasync.service.Service`), a `/health` GET every 10 ms
  from another process (its own clock: CLOCK_MONOTONIC, shared by every process), and an admin
  creating a session from a `--stall-events` scenario over a WebSocket. Reported: the worst
  and p99 `/health` latency while the create was in flight, and the create's own time; once
  as the server does it (import in a worker thread), once the old way (the same import, but
  on the event loop: `SessionRegistry.create`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import best_of, log, percentile

SCRIPT = str(Path(__file__).resolve())
ADMIN = "bench-admin-token"


def _are(text: str, benchmark: bool) -> None:
    from are.simulation.data_handler.importer import JsonScenarioImporter
    from are.simulation.scenarios.scenario_imported_from_json.utils import preprocess_scenario

    importer = JsonScenarioImporter()
    if benchmark:
        scenario, _, _ = importer.import_from_json_to_benchmark(text, load_completed_events=False)
        preprocess_scenario(scenario, judge_config=None)
    else:
        scenario, _, _ = importer.import_from_json(text, load_completed_events=False)
        scenario.initialize()


def _areasync(text: str, benchmark: bool) -> Any:
    from areasync.bridge.scenarios import loading as scenarios

    return scenarios.load(text, import_mode="benchmark" if benchmark else "plain")


def imports(sizes: list[int], are_max: int, repeat: int) -> list[dict[str, Any]]:
    from areasync import Simulation
    from bench.synthetic import synthetic_scenario_json

    rows = []
    for n in sizes:
        text = synthetic_scenario_json(n)
        row: dict[str, Any] = {"events": n, "json_bytes": len(text)}
        for mode, benchmark in (("plain", False), ("benchmark", True)):
            ours = best_of(lambda b=benchmark, t=text: _areasync(t, b), repeat)
            entry: dict[str, Any] = {
                "areasync_s": round(ours, 3),
                "areasync_us_per_event": round(ours / n * 1e6, 1),
            }
            if n <= are_max:
                log(f"imports: ARE {mode} import of {n} events...")
                theirs = best_of(lambda b=benchmark, t=text: _are(t, b), 1)
                entry.update(
                    are_s=round(theirs, 3),
                    are_us_per_event=round(theirs / n * 1e6, 1),
                    ratio=round(theirs / ours, 1),
                )
            row[mode] = entry
        scenario = _areasync(text, False)
        session = best_of(lambda s=scenario: Simulation.load(s, mode="manual"), 1)
        row["session_build_on_loop_s"] = round(session, 3)
        log(f"imports: {json.dumps(row)}")
        rows.append(row)
    return rows


# -- the event loop while a create_session runs ---------------------------------------------


def pinger(port: int) -> None:
    """`/health` every 10 ms until stdin closes; prints "ready" after the first answer, then
    [[sent_ns, latency_ns], ...]. Imports nothing heavy: it must start fast."""
    import threading

    done = threading.Event()

    def wait_for_eof() -> None:
        sys.stdin.read()
        done.set()

    threading.Thread(target=wait_for_eof, daemon=True).start()
    samples = []
    request = f"GET /health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    next_at = time.perf_counter_ns()
    while not done.is_set():
        sent = time.perf_counter_ns()
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(request.encode())
            while sock.recv(65536):
                pass
        samples.append([sent, time.perf_counter_ns() - sent])
        if len(samples) == 1:
            print("ready", flush=True)  # the parent starts once the server answers
        next_at += 10_000_000
        time.sleep(max(0.0, (next_at - time.perf_counter_ns()) / 1e9))
    print(json.dumps(samples), flush=True)


async def _create_once(events: int, on_loop: bool) -> dict[str, Any]:
    from websockets.asyncio.client import connect

    from areasync.protocol import Mode
    from areasync.service import Service, ServiceConfig
    from bench.synthetic import synthetic_scenario_json

    config = ServiceConfig(port=0, admin_token=ADMIN, mode=Mode.MANUAL, trace_dir=None)
    service = Service(config, scenarios=["scenario_tutorial"])
    from areasync.service.gc_policy import settle

    text = synthetic_scenario_json(events)
    async with service:
        settle()  # as `areasync serve` does once its start-up sessions are loaded
        if on_loop:  # the old way: import and start on the loop, in one synchronous call
            registry = service.registry

            async def on_the_loop(source: Any, **options: Any) -> Any:
                return registry.create(source, **options)

            registry.create_async = on_the_loop  # type: ignore[method-assign]
        proc = await asyncio.to_thread(
            subprocess.Popen,
            [sys.executable, SCRIPT, "pinger", str(service.port)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None
        await asyncio.to_thread(proc.stdout.readline)
        async with connect(service.ws_url("scenario_tutorial")) as ws:
            await asyncio.sleep(0.5)  # the pinger's baseline
            hello = {"type": "hello", "id": 0, "role": "admin", "token": ADMIN}
            await ws.send(json.dumps(hello))
            await ws.recv()
            frame = {"type": "create_session", "id": 1, "scenario_json": text, "mode": "manual"}
            start = time.perf_counter_ns()
            await ws.send(json.dumps(frame))
            while True:
                reply = json.loads(await ws.recv())
                if reply.get("id") == 1:
                    break
            end = time.perf_counter_ns()
            assert reply.get("type") == "result", reply
            await asyncio.sleep(0.3)
        out, _ = await asyncio.to_thread(proc.communicate, "")  # the rest: the samples
    samples = json.loads(out)
    during = [lat / 1e6 for sent, lat in samples if sent + lat >= start and sent <= end]
    before = [lat / 1e6 for sent, lat in samples if sent + lat < start]
    return {
        "create_s": round((end - start) / 1e9, 3),
        "health_requests_during": len(during),
        "health_max_ms": round(max(during, default=float("nan")), 1),
        "health_p99_ms": round(percentile(during, 99), 1),
        "health_p50_ms": round(percentile(during, 50), 1),
        "health_p50_ms_before": round(percentile(before, 50), 1),
    }


def stall(events: int) -> dict[str, Any]:
    result: dict[str, Any] = {"events": events}
    for name, on_loop in (("worker_thread", False), ("on_loop_old", True)):
        log(f"stall: create_session of {events} events, import {name}...")
        result[name] = asyncio.run(_create_once(events, on_loop))
        log(f"stall: {json.dumps(result[name])}")
    return result


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["pinger"]:
        pinger(int(argv[1]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,4000,16000")
    parser.add_argument("--are-max", type=int, default=4000, help="largest size ARE's side runs")
    parser.add_argument("--repeat", type=int, default=2, help="areasync runs per size (best)")
    parser.add_argument("--stall-events", type=int, default=6000)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    if args.quick:
        args.sizes, args.are_max, args.repeat = "1000,4000", 1000, 1
    logging.disable(logging.WARNING)  # ARE logs every app it loads
    report = {
        "cpus": os.cpu_count(),
        "python": sys.version.split()[0],
        "are_max_events": args.are_max,
        "imports": imports([int(n) for n in args.sizes.split(",")], args.are_max, args.repeat),
        "stall": stall(args.stall_events),
    }
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
