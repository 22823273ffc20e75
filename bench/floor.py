"""The two ARE baselines areasync is measured against.

- The *floor*: ARE's own per-event work with no loop at all, i.e. `Event.execute()` followed by
  `Environment.add_to_log()`, called in a plain Python loop over the scenario's events in time
  order. No event loop, queue or clock can do less than this per event while still running ARE's
  events through ARE's code, so areasync's events/s is reported as a fraction of it.
- ARE's queue-based loop: ARE's own oracle run (`oracle_mode=True, queue_based_loop=True`,
  `exit_when_no_events`), as ARE's tests run scenarios. It is quadratic in N (the queue length and
  the log view are re-sorted for every event), so it is only run at small N.

Both take a fresh, initialized scenario (see `bench.synthetic`) and return a `Timing`.
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from are.simulation.environment import Environment
from are.simulation.scenarios.scenario import Scenario

from areasync.conformance.reference_loops import oracle_config


class Clock:
    """What the runners time with: the wall (`perf_counter`, the default), or this process's
    CPU time (`process_time`, every thread of it: ARE's loop runs in one), which a shared
    machine's other work does not inflate (`bench/loop.py --clock cpu`)."""

    def __init__(self) -> None:
        self.read: Callable[[], float] = time.perf_counter

    def use(self, name: str) -> None:
        self.read = {"wall": time.perf_counter, "cpu": time.process_time}[name]

    @staticmethod
    def add_option(parser: argparse.ArgumentParser) -> None:
        """`--clock wall|cpu` (then `CLOCK.use(args.clock)`)."""
        parser.add_argument(
            "--clock",
            choices=("wall", "cpu"),
            default="wall",
            help="time with the wall (default) or this process's CPU time (a shared machine)",
        )


CLOCK = Clock()


@dataclass(frozen=True)
class Timing:
    """One timed run: wall seconds for `events` events, and the environment it left."""

    seconds: float
    events: int
    env: Any  # the ARE Environment (or subclass) after the run
    setup_seconds: float | None = None  # the part of `seconds` spent before the first event

    @property
    def events_per_s(self) -> float:
        return self.events / self.seconds if self.seconds > 0 else float("inf")

    @property
    def us_per_event(self) -> float:
        return self.seconds / self.events * 1e6 if self.events else 0.0


@contextmanager
def quiet_gc() -> Iterator[None]:
    """Collect, then keep the cyclic GC out of the timed region (as `timeit` does).

    A full collection in the middle of a 100,000-event run costs time proportional to everything
    alive, which would be charged to whichever runner happened to trigger it.
    """
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def run_floor(scenario: Scenario) -> Timing:
    """`Event.execute` + `Environment.add_to_log` for every event, in time order, nothing else."""
    env = Environment(oracle_config(scenario, queue_based_loop=True))
    env.register_apps(scenario.apps or [])
    events = list(scenario.events)
    for event in events:  # scheduling is not execution: absolute times are set before timing
        event.compute_absolute_time(env.start_time)
    events.sort(key=lambda event: event.event_time)  # stable: ties keep scenario order
    execute_and_log = _execute_and_log(env)
    with quiet_gc():
        started = CLOCK.read()
        for event in events:
            execute_and_log(event)
        seconds = CLOCK.read() - started
    return Timing(seconds, len(events), env)


def _execute_and_log(env: Environment) -> Callable[[Any], None]:
    add_to_log = env.add_to_log

    def execute_and_log(event: Any) -> None:
        add_to_log(event.execute())

    return execute_and_log


def run_are_queue_loop(scenario: Scenario) -> Timing:
    """ARE's oracle run on its queue-based loop, timed from construction to the end of the run."""
    with quiet_gc():
        started = CLOCK.read()
        env = Environment(oracle_config(scenario, queue_based_loop=True))
        env.run(scenario)  # registers apps, schedules, runs ARE's thread and joins it
        seconds = CLOCK.read() - started
    return Timing(seconds, len(scenario.events), env)
