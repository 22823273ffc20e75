"""Replay cost, side by side in one run: a fast run of an N-event synthetic scenario against the
replay of its records (events/s), and forking a session at its middle (`until_seq`) against
loading the scenario afresh. Prints JSON.

    PYTHONPATH=. python -m bench.replay [N]
"""

from __future__ import annotations

import json
import sys
import time

import anyio

from areasync import Simulation
from bench.synthetic import synthetic_scenario_json


async def main(n_events: int) -> dict[str, float | int]:
    # JSON, so that the scenario is built inside the session (a Scenario instance initialised
    # beforehand drew its event ids outside it, from the operating system).
    source = synthetic_scenario_json(n_events)
    started = time.perf_counter()
    live = Simulation.load(source, mode="fast", oracle=True, seed=1, created_at=0.0)
    await live.run()
    fast_s = time.perf_counter() - started
    assert live.creation is not None
    records = list(live.flush_records())
    events = len(live.events())

    started = time.perf_counter()
    again = Simulation.replay(source, live.creation, records)
    replay_s = time.perf_counter() - started
    assert again.log.items == live.log.items

    started = time.perf_counter()
    fresh = Simulation.load(source, mode="fast", oracle=True, seed=1, created_at=0.0)
    load_s = time.perf_counter() - started
    started = time.perf_counter()
    fork = Simulation.replay(source, live.creation, records, until_seq=live.log.seq // 2)
    fork_s = time.perf_counter() - started
    del fresh, fork
    return {
        "events": events,
        "records": len(records),
        "fast_run_s": round(fast_s, 4),
        "fast_events_per_s": round(events / fast_s),
        "replay_s": round(replay_s, 4),
        "replay_events_per_s": round(events / replay_s),
        "load_fresh_s": round(load_s, 4),
        "fork_at_half_s": round(fork_s, 4),
    }


if __name__ == "__main__":
    print(json.dumps(anyio.run(main, int(sys.argv[1]) if len(sys.argv) > 1 else 10_000)))
