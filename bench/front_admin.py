"""An admin's fork and stop, and `/metrics`, through `areasync serve --workers 2` against a
single process, side by side in one run.

    PYTHONPATH=. python bench/front_admin.py [--forks 20] [--scrapes 100]

Prints one JSON document. Every server is a real `areasync serve` process (manual mode, two
`scenario_tutorial` sessions: with two workers, one on each), its clients in this process:

* `admin`: an admin connected to the first session sends `fork_session` of the second (as it
  is now), then `stop_session` of the fork, `--forks` times, sequentially: milliseconds from
  send to result (median, p90, p99), with `--workers 0` (with and without `--state-dir`:
  workers always journal) and 2 (the admin's socket relayed by the front, the fork made on
  the worker holding its source, over the pool's channel: `front/admin.py`).
* `metrics`: `GET /metrics` as the admin, `--scrapes` times: milliseconds per answer, and its
  size; with 2 workers the front asks each worker for its text and merges them.
* `merge_us`: the front's merge alone (`front/metrics.py`) of two workers' expositions,
  microseconds per merge (best of 5 rounds of 1,000).
* `machine`: cores and the load average at the start (the machine may be shared).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
import urllib.request
from typing import Any

from websockets.asyncio.client import ClientConnection, connect

from areasync.front.metrics import merge
from bench.common import best_of, print_report
from bench.front import TOKEN, Server, _summary


async def _request(ws: ClientConnection, frame: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    """(milliseconds, reply) of one request."""
    started = time.perf_counter()
    await ws.send(json.dumps(frame))
    while True:
        answer = json.loads(await ws.recv())
        if answer.get("id") == frame["id"]:
            assert answer["type"] == "result", answer
            return (time.perf_counter() - started) * 1000, answer


async def admin(server: Server, forks: int) -> dict[str, Any]:
    listed = server.get("/api/sessions")["sessions"]  # with workers: one on each
    via, source = listed[0]["id"], listed[-1]["id"]
    assert via != source and listed[0].get("worker", 0) != listed[-1].get("worker", 1)
    ws = await connect(server.url(via), compression=None, max_size=None)
    await ws.send(json.dumps({"type": "hello", "id": 0, "role": "admin", "token": TOKEN}))
    json.loads(await ws.recv())
    fork_ms, stop_ms = [], []
    for n in range(forks):
        fork = {"type": "fork_session", "id": 2 * n + 1, "session_id": source}
        took, created = await _request(ws, fork)
        fork_ms.append(took)
        stop = {
            "type": "stop_session",
            "id": 2 * n + 2,
            "session_id": created["value"]["session_id"],
        }
        stop_ms.append((await _request(ws, stop))[0])
    await ws.close()
    return {"fork_ms": _summary(fork_ms), "stop_ms": _summary(stop_ms)}


def _scrape(server: Server) -> str:
    request = urllib.request.Request(
        f"http://127.0.0.1:{server.port}/metrics", headers={"Authorization": f"Bearer {TOKEN}"}
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return str(response.read().decode())


def metrics(server: Server, scrapes: int) -> dict[str, Any]:
    took, text = [], ""
    for _ in range(scrapes):
        started = time.perf_counter()
        text = _scrape(server)
        took.append((time.perf_counter() - started) * 1000)
    return {"scrape_ms": _summary(took), "bytes": len(text)}


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {"admin": {}, "metrics": {}}
    configurations = [("workers_0", 0, False), ("workers_0_journaled", 0, True)]
    configurations += [("workers_2", 2, False)]
    exposition = ""
    for name, workers, journaled in configurations:
        with tempfile.TemporaryDirectory(prefix="bench-front-admin-") as directory:
            server = Server(workers, 2, directory if journaled else None)
            try:
                out["admin"][name] = await admin(server, args.forks)
                out["metrics"][name] = metrics(server, args.scrapes)
                if workers == 0:
                    exposition = _scrape(server)
            finally:
                server.stop()
    up = {"worker-0": True, "worker-1": True}
    rounds = 1000
    seconds = best_of(lambda: [merge([exposition, exposition], up) for _ in range(rounds)], 5)
    out["merge_us"] = round(seconds / rounds * 1e6, 1)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--forks", type=int, default=20)
    parser.add_argument("--scrapes", type=int, default=100)
    args = parser.parse_args()
    load = [round(x, 2) for x in os.getloadavg()]
    started = time.perf_counter()
    return print_report("front_admin", load, asyncio.run(main_async(args)), started)


if __name__ == "__main__":
    sys.exit(main())
