"""ARE's own loops, run as the reference areasync is compared with.

A `fast` run must log what ARE's queue-based loop logs, and a `realtime` run what its time-based
loop logs, on the same tick count. This module runs ARE's unmodified `Environment` both ways,
in oracle mode, fast enough for a test suite (a fake wall clock instead of a real second per
tick), and re-raises what kills ARE's thread, so a reference run never passes for a finished one.

The two ARE loops, and tick counts
    `run_are_queue_loop` is ARE's oracle run as its tests and `scenario_runner` do it (queue-based
    loop, oracle mode, `exit_when_no_events`, the scenario's start time and increment) on the real
    clock: it is fast already. Its `env.tick_count` is set by `jump_to_next_event_time` to
    `ceil((t - start) / increment)` of the last event jumped to, i.e. the *index* of the last tick,
    not a count (scenario_tutorial: 17, last event at 17 s). When the loop stops on `duration` the
    jump has already set the index of a tick that never ran.

    `run_are_time_loop` is ARE's time-based loop: one tick per `time.sleep(1)`, `tick_count`
    incremented after each tick, so it *is* a count of ticks run (scenario_tutorial: 18, ticks at
    0..17 s, then the queue is empty). For real that takes a wall second per tick, so by default it
    runs ARE's unmodified loop code under `fake_wall_clock()`, which swaps the `time` module seen
    by `are.simulation.environment` and `are.simulation.time_manager` (those two module globals
    only, restored on exit) for a clock whose `sleep(s)` advances it by `s` at once.
    `wall_clock=True` runs the genuine thing (a slow test shows both agree on scenario_tutorial).

Epsilon at the duration bound
    The time loop runs while `time_passed() <= duration`. On the wall clock every tick also costs
    processing time, so after k sleeps `time_passed()` is k*increment plus a little, and a tick at
    exactly `start + duration` never runs: the bound is exclusive. A fake clock
    without that epsilon would run one more tick. `FakeWallClock` therefore adds `sleep_overhead`
    (default 1e-6 s) to every `sleep`: tiny next to ARE's own drift (~1 ms per tick here), big
    enough to survive float arithmetic, and it keeps the rule. The queue loop gets the same effect
    from the real clock (it checks `time_passed() > duration` right after jumping, and the jump
    lands a few microseconds late).

Termination with `duration=None` (scenario_find_image_file)
    The queue loop needs nothing: it loops while the queue is non-empty. The time loop has no bound
    at all then; only `exit_when_no_events=True` (ARE checks `get_event_queue_length() == 0` at the
    top of each iteration) ends it: ticks 0 and 1 run, the queue is empty, tick_count == 2. That is
    why `run_are_time_loop` defaults it to True, as ARE's `scenario_runner` does without an agent.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator

from are.simulation.environment import Environment, EnvironmentConfig
from are.simulation.scenarios.scenario import Scenario

from areasync.conformance.scenarios import load_scenario

__all__ = [
    "FAKE_READ_OVERHEAD",
    "FAKE_SLEEP_OVERHEAD",
    "FakeClockLimitError",
    "FakeWallClock",
    "fake_wall_clock",
    "oracle_config",
    "run_are_queue_loop",
    "run_are_time_loop",
]

# Wall seconds a fake `sleep` costs on top of what it was asked for (see module docstring).
FAKE_SLEEP_OVERHEAD = 1e-6
# Per clock read in the fake queue loop: stands for the real clock's processing time, which is
# what keeps an event at exactly start + duration from running ("Epsilon" in the docstring).
FAKE_READ_OVERHEAD = 1e-7


def oracle_config(scenario: Scenario, *, queue_based_loop: bool) -> EnvironmentConfig:
    """The configuration of an oracle run of `scenario` without an agent."""
    # As ARE's scenario_runner and preprocess_scenario: the scenario's own start and increment.
    return EnvironmentConfig(
        start_time=scenario.start_time or 0,
        duration=scenario.duration,
        time_increment_in_seconds=scenario.time_increment_in_seconds,
        oracle_mode=True,
        queue_based_loop=queue_based_loop,
        exit_when_no_events=True,
        verbose=False,
    )


def run_are_queue_loop(scenario: Scenario | str, *, wall_clock: bool = False) -> Environment:
    """ARE's own oracle run: queue-based loop, oracle mode, exit when no events, on ARE's thread.

    Returns the finished environment; `env.tick_count` is the index of the last tick jumped to.
    By default ARE's unmodified loop runs under `fake_wall_clock()` with a tiny cost per clock
    read (`FAKE_READ_OVERHEAD`), standing for the processing time of the real clock: on a loaded
    machine the real clock's drift can exceed the normal form's rounding (a `get_current_time`
    result 60 ms late), which would make two ARE runs disagree. `wall_clock=True` runs it for real.
    """
    scenario = load_scenario(scenario)
    if wall_clock:
        env = Environment(oracle_config(scenario, queue_based_loop=True))
        env.exit_when_no_events = True  # as ARE's scenarios_test sets it
        _run_reraising(env, scenario)  # env.run: starts ARE's thread and joins it
        return env
    with fake_wall_clock(read_overhead=FAKE_READ_OVERHEAD):
        env = Environment(oracle_config(scenario, queue_based_loop=True))
        env.exit_when_no_events = True
        _run_reraising(env, scenario)
    return env


class FakeClockLimitError(RuntimeError):
    """The fake clock slept longer than allowed: the time-based loop would never end."""


class FakeWallClock:
    """Stands in for the `time` module inside ARE's environment and time manager.

    `time()` returns a fake wall time; `sleep(s)` advances it by `s + sleep_overhead` at once. The
    start is arbitrary (not 0, so nothing can take it for "unset"). Only ARE's event-loop thread
    sleeps and the caller's thread waits in `join`, so no lock is needed.
    """

    def __init__(
        self,
        start: float = 1_000_000.0,
        sleep_overhead: float = FAKE_SLEEP_OVERHEAD,
        max_sleeps: int | None = None,
        read_overhead: float = 0.0,
    ) -> None:
        self.now = start
        self.read_overhead = read_overhead
        self.sleep_overhead = sleep_overhead
        self.max_sleeps = max_sleeps
        self.sleeps = 0

    def time(self) -> float:
        self.now += self.read_overhead
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps += 1
        if self.max_sleeps is not None and self.sleeps > self.max_sleeps:
            raise FakeClockLimitError(f"more than {self.max_sleeps} fake sleeps")
        self.now += seconds + self.sleep_overhead


# The patch is process-wide (module globals): other threads wait for the current run to finish.
# Reentrant, so a nested fake clock saves and restores the outer one.
_PATCH_LOCK = threading.RLock()


@contextlib.contextmanager
def fake_wall_clock(
    sleep_overhead: float = FAKE_SLEEP_OVERHEAD,
    max_sleeps: int | None = None,
    read_overhead: float = 0.0,
) -> Iterator[FakeWallClock]:
    """Run ARE's unmodified loop code on a `FakeWallClock`, restoring the real clock on exit.

    Patches only the `time` global of `are.simulation.environment` and `are.simulation.time_manager`
    (the two modules whose `time.time()`/`time.sleep()` drive the loop); apps keep the real clock.
    `max_sleeps` bounds the run (the time loop sleeps once per tick): FakeClockLimitError beyond.
    """
    import are.simulation.environment as environment_module
    import are.simulation.time_manager as time_manager_module

    clock = FakeWallClock(
        sleep_overhead=sleep_overhead, max_sleeps=max_sleeps, read_overhead=read_overhead
    )
    with _PATCH_LOCK:
        saved = environment_module.time, time_manager_module.time
        environment_module.time = clock
        time_manager_module.time = clock
        try:
            yield clock
        finally:
            environment_module.time, time_manager_module.time = saved


def run_are_time_loop(
    scenario: Scenario | str,
    *,
    wall_clock: bool = False,
    exit_when_no_events: bool = True,
    sleep_overhead: float = FAKE_SLEEP_OVERHEAD,
    max_ticks: int = 1_000_000,
) -> Environment:
    """ARE's time-based loop in oracle mode; `env.tick_count` is the number of ticks run.

    By default ARE's own loop code runs under `fake_wall_clock()` (milliseconds instead of one wall
    second per tick); `wall_clock=True` runs it for real. `max_ticks` stops a fake run that would
    never end (no duration and events that keep rescheduling) with FakeClockLimitError.
    """
    scenario = load_scenario(scenario)
    config = oracle_config(scenario, queue_based_loop=False)
    config.exit_when_no_events = exit_when_no_events
    if scenario.duration is None and not exit_when_no_events:
        raise ValueError("duration is None and exit_when_no_events is False: the loop never ends")
    if wall_clock:
        env = Environment(config)
        _run_reraising(env, scenario)
        return env
    with fake_wall_clock(sleep_overhead, max_sleeps=max_ticks) as clock:
        # Created inside the patch so that every TimeManager read is fake from the start.
        env = Environment(config)
        _run_reraising(env, scenario)
    if clock.sleeps < env.tick_count:  # one sleep per tick (more if paused): fewer means a leak
        raise AssertionError(f"only {clock.sleeps} fake sleeps for {env.tick_count} ticks")
    return env


def _run_reraising(env: Environment, scenario: Scenario) -> None:
    """`env.run(scenario)`, re-raising here what killed ARE's event-loop thread.

    ARE leaves such an exception to `threading.excepthook` and `join` returns as if the run had
    ended; a reference run must not pass for a finished one.
    """
    loop: Callable[[], None] = env._event_loop
    failure: list[BaseException] = []

    def guarded_loop() -> None:
        try:
            loop()
        except BaseException as exc:  # re-raised below, on the caller's thread
            failure.append(exc)

    env._event_loop = guarded_loop  # instance attribute: Environment.start targets self._event_loop
    env.run(scenario)
    if failure:
        raise failure[0]
