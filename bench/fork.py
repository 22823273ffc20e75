"""Fork latency at any cut of a 10,000-event session, through a running server, against loading
the scenario afresh, under each snapshot policy. Prints JSON.

    PYTHONPATH=. python -m bench.fork [N]

A real `Service` in this process (with the garbage-collector policy `areasync serve` applies
once started), driven over loopback WebSockets by an admin client sending the protocol's own
frames. The scenario is `bench.synthetic`'s N-event Gaia2-shaped export, run by its oracle.
Each run below is one session; once it has ended, the client forks it at a quarter, half,
three quarters and 99.9% of its stream and with no cut (`fork_session`, timed from the frame
sent to its reply), and stops each fork at once (a fast fork would run on meanwhile), then reads
its apps' state at the same cuts (`get_state{at_seq}`: a fork read and thrown away) and now.
Beside them, `create_session` of the same scenario: what a fork saves against loading it afresh.

- `fast`: a fast-mode session under the default policy (`--fork-within 1`,
  `--snapshot-overhead 0.1`). It computes without a pause, so its snapshots are held to a tenth
  of its time: sparse.
- `fast_dense`: the same with `--snapshot-overhead 1`: snapshots as densely as the fork aim
  asks, whatever they cost the run (its run time against `fast_no_snapshots`'s is the price).
- `fast_no_snapshots`: `--snapshot-overhead 0`, the run's time with no snapshot at all.
- `paced`: a manual-mode session advanced by the client as an agent would between its turns:
  `jump{by}` then a pause (`--think`, standing in for the agent's model; real ones take seconds),
  under the default policy. The session waits most of its time, and takes its snapshots then.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import time
from typing import Any

import anyio
from websockets.asyncio.client import ClientConnection, connect

from areasync.protocol.frames import Mode
from areasync.service.config import ServiceConfig
from areasync.service.gc_policy import settle
from areasync.service.server import Service
from bench.synthetic import synthetic_scenario_json

ADMIN = "bench"
CUTS = (0.25, 0.5, 0.75, 0.999)
ENDED = ("session_ended", "bad_state")  # a fast fork may have run to its end already
_ids = itertools.count(1)


async def call(ws: ClientConnection, frame: dict[str, Any]) -> tuple[dict[str, Any], float]:
    """Send `frame`; its reply (stream items meanwhile are skipped) and the round trip, in s."""
    frame = {**frame, "id": next(_ids)}
    started = time.perf_counter()
    await ws.send(json.dumps(frame))
    while True:
        reply = json.loads(await ws.recv())
        if reply.get("id") == frame["id"]:
            elapsed = time.perf_counter() - started
            assert reply.get("type") == "result", reply
            return reply["value"], elapsed


async def stop(ws: ClientConnection, session_id: str) -> None:
    """Stop a fork; one that ran to its end already is as good."""
    frame = {"type": "stop_session", "session_id": session_id, "id": next(_ids)}
    await ws.send(json.dumps(frame))
    while True:
        reply = json.loads(await ws.recv())
        if reply.get("id") == frame["id"]:
            assert reply.get("type") == "result" or reply.get("code") in ENDED, reply
            return


async def admin(service: Service, session_id: str) -> ClientConnection:
    ws = await connect(service.ws_url(session_id), max_size=None)
    await ws.send(json.dumps({"type": "hello", "id": 0, "role": "admin", "token": ADMIN}))
    await ws.recv()
    return ws


async def ended(service: Service, session_id: str) -> None:
    session = service.registry.sessions[session_id]
    with anyio.fail_after(600):
        await session.done.wait()


async def forks(service: Service, ws: ClientConnection, source: str) -> dict[str, Any]:
    """Fork `source` at each cut and with none; each fork's round trip, in s."""
    sim = service.registry.sessions[source].sim
    end = sim.log.seq
    timings: dict[str, Any] = {}
    for label, cut in [*((f"at_{c}", max(1, int(end * c))) for c in CUTS), ("no_cut", None)]:
        frame: dict[str, Any] = {"type": "fork_session", "session_id": source}
        if cut is not None:
            frame["at_seq"] = cut
        created, elapsed = await call(ws, frame)
        await stop(ws, created["session_id"])
        timings[label] = round(elapsed, 3)
    return timings


async def states_at(service: Service, source: str) -> dict[str, Any]:
    """`get_state{at_seq}` of `source` at each cut (the dashboard's comparison: a fork read and
    thrown away), and `get_state` now, over a connection to `source`; each round trip, in s."""
    end = service.registry.sessions[source].sim.log.seq
    ws = await admin(service, source)
    timings: dict[str, Any] = {"now": round((await call(ws, {"type": "get_state"}))[1], 3)}
    for c in CUTS:
        _, elapsed = await call(ws, {"type": "get_state", "at_seq": max(1, int(end * c))})
        timings[f"at_{c}"] = round(elapsed, 3)
    await ws.close()
    return timings


def snapshots_of(service: Service, session_id: str) -> dict[str, Any]:
    kept = service.registry.sessions[session_id].snapshots
    assert kept is not None
    return {
        "snapshot_seqs": [s.seq for s in kept.kept],
        "snapshot_mb": [round(len(s.data) / 1e6, 1) for s in kept.kept],
        "snapshot_lane_s": [round(s.cost_s, 3) for s in kept.kept],
    }


async def fast_run(text: str, overhead: float, with_forks: bool) -> dict[str, Any]:
    async with Service(config(overhead), ["scenario_tutorial"]) as service:
        settle()
        ws = await admin(service, "scenario_tutorial")
        frame = {"type": "create_session", "scenario_json": text, "mode": "fast", "oracle": True}
        started = time.perf_counter()
        created, _ = await call(ws, frame)
        await ended(service, created["session_id"])
        out: dict[str, Any] = {"load_and_run_s": round(time.perf_counter() - started, 3)}
        if with_forks:
            out.update(snapshots_of(service, created["session_id"]))
            out["stream_seq"] = service.registry.sessions[created["session_id"]].sim.log.seq
            out["fork_s"] = await forks(service, ws, created["session_id"])
            out["state_at_s"] = await states_at(service, created["session_id"])
            loads = []
            for _ in range(2):
                fresh, elapsed = await call(ws, {**frame, "mode": "manual"})
                await stop(ws, fresh["session_id"])
                loads.append(elapsed)
            out["create_session_s"] = round(statistics.median(loads), 3)
        await ws.close()
    return out


async def paced_run(text: str, step_s: float, think_s: float) -> dict[str, Any]:
    async with Service(config(0.1), ["scenario_tutorial"]) as service:
        settle()
        ws = await admin(service, "scenario_tutorial")
        frame = {"type": "create_session", "scenario_json": text, "mode": "manual", "oracle": True}
        created, _ = await call(ws, frame)
        session_id = created["session_id"]
        sim = service.registry.sessions[session_id].sim
        driver = await admin(service, session_id)
        started, jumps = time.perf_counter(), 0
        while not sim.ended and len(sim.env.event_queue) > 0:
            await call(driver, {"type": "jump", "by": step_s})
            jumps += 1
            await anyio.sleep(think_s)
        await driver.close()
        out = {
            "jumps": jumps,
            "think_s": think_s,
            "wall_s": round(time.perf_counter() - started, 3),
            "lane_work_s": round(sim.lane.work_s, 3),
            "stream_seq": sim.log.seq,
            **snapshots_of(service, session_id),
            "fork_s": await forks(service, ws, session_id),
            "state_at_s": await states_at(service, session_id),
        }
        await ws.close()
    return out


def config(overhead: float) -> ServiceConfig:
    return ServiceConfig(
        port=0,
        admin_token=ADMIN,
        mode=Mode.MANUAL,
        trace_dir=None,
        max_scenario_bytes=64 * 1024 * 1024,
        snapshot_overhead=overhead,
    )


async def main(n_events: int, step_s: float, think_s: float) -> dict[str, Any]:
    text = synthetic_scenario_json(n_events)
    return {
        "events": n_events,
        "fast": await fast_run(text, 0.1, with_forks=True),
        "fast_dense": await fast_run(text, 1.0, with_forks=True),
        "fast_no_snapshots": await fast_run(text, 0.0, with_forks=False),
        "paced": await paced_run(text, step_s, think_s),
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("events", type=int, nargs="?", default=10_000)
    parser.add_argument("--step", type=float, default=100.0, help="simulated s per jump")
    parser.add_argument("--think", type=float, default=0.1, help="wall s between jumps")
    args = parser.parse_args()
    print(json.dumps(anyio.run(main, args.events, args.step, args.think)))
