"""Where a fast run's microseconds go above ARE's floor: the loop run with the layers above a
part left out, one at a time.

    python bench/loop_parts.py --clock cpu [--n 10000] [--repeats 7]

Prints one JSON document: us per event, best of `--repeats`, runners interleaved, for
- `floor`: ARE's `execute` + `add_to_log` on pre-sorted events (`bench.floor`);
- `process_event`: areasync's `process_event` on each event in time order, with no stream
  listener (ARE's work with the notification pre-filter), then `with_stream` (the record and
  the stream item);
- `popped`: `Simulation.load`, then the events popped from the queue by time, the clock set
  and `process_event` (no tick);
- `ticks`: the same with ARE's `tick()` (areasync's) at each time;
- `steps`: `Engine.step_fast` until it stops (no driver);
- `run`: `Simulation.load` + `anyio.run(sim.run)`, as `bench/loop.py` times it.
Each row minus the one before is what that part adds (docs/topics/performance.md, "The loop").
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable
from pathlib import Path

if __package__ in (None, ""):  # run as a script (`python bench/loop_parts.py`)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import anyio

from areasync import Simulation
from bench.floor import CLOCK, quiet_gc, run_floor
from bench.synthetic import synthetic_scenario

Part = Callable[[int], float]


def _loaded(n: int) -> Simulation:
    return Simulation.load(synthetic_scenario(n), mode="fast", oracle=True)


def in_order(n: int, *, stream: bool) -> float:
    """`process_event` on every event in time order: no queue, no tick, no load timed."""
    sim = _loaded(n)
    env = sim.env
    if not stream:
        env.event_listeners.clear()
    future = env.event_queue.future_events
    events = list(future)  # in time order
    while not future.empty():
        future.get()
    process = env.process_event
    with quiet_gc(), sim.sandbox.entered():
        started = CLOCK.read()
        for event in events:
            process(event)
        seconds = CLOCK.read() - started
    assert len(env.event_log) == n
    return seconds


def below_the_driver(n: int, part: str) -> float:
    """`Simulation.load`, then the loop down to `part` (popped, ticks, steps), no driver."""
    scenario = synthetic_scenario(n)
    with quiet_gc():
        started = CLOCK.read()
        sim = Simulation.load(scenario, mode="fast", oracle=True)
        env, clock, engine = sim.env, sim.clock, sim.engine
        queue = env.event_queue
        future = queue.future_events
        with sim.sandbox.entered():
            if part == "steps":
                while engine.step_fast():
                    pass
            else:
                while future.head_us is not None:
                    due = future.head_us
                    clock.advance_us(due)
                    if part == "ticks":
                        env.tick()
                        continue
                    env.current_time = due / 1e6
                    for event in queue.pop_due_us(due):
                        env.process_event(event)
        seconds = CLOCK.read() - started
    assert len(env.event_log) == n
    return seconds


def run(n: int) -> float:
    scenario = synthetic_scenario(n)
    with quiet_gc():
        started = CLOCK.read()
        sim = Simulation.load(scenario, mode="fast", oracle=True)
        anyio.run(sim.run)
        seconds = CLOCK.read() - started
    assert len(sim.env.event_log) == n
    return seconds


PARTS: dict[str, Part] = {
    "floor": lambda n: run_floor(synthetic_scenario(n)).seconds,
    "process_event": lambda n: in_order(n, stream=False),
    "with_stream": lambda n: in_order(n, stream=True),
    "popped": lambda n: below_the_driver(n, "popped"),
    "ticks": lambda n: below_the_driver(n, "ticks"),
    "steps": lambda n: below_the_driver(n, "steps"),
    "run": run,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=10_000, help="events per run")
    parser.add_argument("--repeats", type=int, default=7, help="samples per part")
    CLOCK.add_option(parser)
    args = parser.parse_args(argv)
    CLOCK.use(args.clock)
    logging.disable(logging.WARNING)  # ARE logs every event at INFO
    for part in PARTS.values():  # warm-up: imports, caches, first-call costs
        part(200)
    samples: dict[str, list[float]] = {name: [] for name in PARTS}
    for _ in range(max(1, args.repeats)):
        for name, part in PARTS.items():
            samples[name].append(part(args.n))
    us = {name: round(min(s) / args.n * 1e6, 2) for name, s in samples.items()}
    report = {
        "benchmark": "areasync loop, part by part: synthetic ENV events, fast + oracle",
        "n": args.n,
        "method": f"best of {args.repeats}, parts interleaved, gc off, {args.clock} clock",
        "us_per_event": us,
    }
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
