"""Replay and fork cost, side by side in one run: a fast run of an N-event synthetic scenario
against the replay of its records (events/s); forking it at its middle (`until_seq`) and at
its end, by a replay from the scenario's load and from a snapshot (`simulation/snapshots.py`),
against loading the scenario afresh (a fork at the end from a snapshot is what a fork with no
cut costs, and every later one of a session that did nothing since); what a snapshot costs
(bytes, the wall time it holds the session's lane, the longest the event loop went unserved
meanwhile, against the longest in an idle second). Prints JSON.

    PYTHONPATH=. python -m bench.replay [N]
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from areasync import Simulation
from areasync.simulation.snapshots import (
    Snapshot,
    SnapshotPolicy,
    Snapshots,
    keep_taking,
    take,
    thawed,
)
from bench.synthetic import synthetic_scenario_json


async def loop_stall(work: Callable[[], Awaitable[Any]]) -> tuple[Any, float]:
    """What `work` returns, and the longest the loop went without running a 1 ms ticker."""
    worst = 0.0
    done = False

    async def ticker() -> None:
        nonlocal worst
        last = time.perf_counter()
        while not done:
            await anyio.sleep(0.001)
            now = time.perf_counter()
            worst, last = max(worst, now - last), now

    async with anyio.create_task_group() as tg:
        tg.start_soon(ticker)
        result = await work()
        done = True
    return result, worst


async def snapshot_at(sim: Simulation, seq: int) -> tuple[Snapshot, float]:
    """A snapshot of `sim`, running, taken once its stream reaches `seq`; the loop's stall."""
    while sim.log.seq < seq:  # noqa: ASYNC110 (the bench polls: no hook for it in the run)
        await anyio.sleep(0.001)
    snapshot, stall = await loop_stall(lambda: take(sim))
    assert snapshot is not None
    return snapshot, stall


async def with_policy(source: str, n_events: int) -> dict[str, Any]:
    """The same run taking snapshots as a server's session does (`keep_taking`, the default
    policy, with no bound on their count), and a fork at the middle from the nearest."""
    live = Simulation.load(source, mode="fast", oracle=True, seed=1, created_at=0.0)
    kept = Snapshots(SnapshotPolicy(max_count=1000, max_bytes=1 << 40))
    started = time.perf_counter()
    async with anyio.create_task_group() as tg:
        tg.start_soon(keep_taking, live, kept)
        await live.run()
        tg.cancel_scope.cancel()
    run_s = time.perf_counter() - started
    half = live.log.seq // 2
    nearest = kept.serving(half, None)
    fork_s = None
    if nearest is not None:
        _, fork_s = timed(lambda: thawed(nearest, live.flush_records(), until_seq=half))
    return {
        "policy_fast_run_s": round(run_s, 4),
        "policy_snapshot_seqs": [s.seq for s in kept.kept],
        "policy_snapshots_lane_s": round(sum(s.cost_s for s in kept.kept), 4),
        "policy_fork_at_half_s": None if fork_s is None else round(fork_s, 4),
    }


def timed(make: Callable[[], Simulation]) -> tuple[Simulation, float]:
    started = time.perf_counter()
    sim = make()
    return sim, time.perf_counter() - started


async def main(n_events: int) -> dict[str, Any]:
    # JSON, so that the scenario is built inside the session (a Scenario instance initialised
    # beforehand drew its event ids outside it, from the operating system).
    source = synthetic_scenario_json(n_events)
    live = Simulation.load(source, mode="fast", oracle=True, seed=1, created_at=0.0)
    taken: list[tuple[Snapshot, float]] = []
    started = time.perf_counter()
    async with anyio.create_task_group() as tg:

        async def snapshot_early() -> None:
            # The stream ends near seq 1.5 N: this is a little before its middle.
            taken.append(await snapshot_at(live, n_events * 7 // 10))

        tg.start_soon(snapshot_early)
        await live.run()
    fast_s = time.perf_counter() - started
    creation = live.creation
    assert creation is not None
    records = list(live.flush_records())
    events = len(live.events())
    (early, early_stall), (end, end_stall) = taken[0], await snapshot_at(live, 0)

    again, replay_s = timed(lambda: Simulation.replay(source, creation, records))
    assert again.log.items == live.log.items
    del again
    _, load_s = timed(lambda: Simulation.load(source, mode="fast", oracle=True, seed=1))
    half = live.log.seq // 2
    assert early.serves(half, None)
    fork, fork_s = timed(lambda: Simulation.replay(source, creation, records, until_seq=half))
    copy, copy_s = timed(lambda: thawed(early, records, until_seq=half))
    assert copy.log.items == fork.log.items and copy.records == fork.records
    del fork, copy
    at_end, at_end_s = timed(lambda: thawed(end, records))
    assert at_end.log.items == live.log.items
    _, idle_stall = await loop_stall(lambda: anyio.sleep(1.0))
    policy = await with_policy(source, n_events)
    return {
        **policy,
        "events": events,
        "records": len(records),
        "fast_run_s": round(fast_s, 4),
        "fast_events_per_s": round(events / fast_s),
        "replay_s": round(replay_s, 4),
        "replay_events_per_s": round(events / replay_s),
        "load_fresh_s": round(load_s, 4),
        "fork_at_half_s": round(fork_s, 4),
        "fork_at_half_from_snapshot_s": round(copy_s, 4),
        "stream_seq": live.log.seq,
        "snapshot_before_half_seq": early.seq,
        "fork_at_end_replay_s": round(replay_s, 4),
        "fork_at_end_from_snapshot_s": round(at_end_s, 4),
        "snapshot_before_half_bytes": len(early.data),
        "snapshot_before_half_lane_s": round(early.cost_s, 4),
        "snapshot_before_half_loop_stall_s": round(early_stall, 4),
        "snapshot_at_end_bytes": len(end.data),
        "snapshot_at_end_lane_s": round(end.cost_s, 4),
        "snapshot_at_end_loop_stall_s": round(end_stall, 4),
        "loop_stall_idle_1s_s": round(idle_stall, 4),
    }


if __name__ == "__main__":
    print(json.dumps(anyio.run(main, int(sys.argv[1]) if len(sys.argv) > 1 else 10_000)))
