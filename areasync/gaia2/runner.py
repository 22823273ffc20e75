"""ARE's Gaia2 benchmark pipeline with only the clock replaced.

`virtual_clock()` is a context manager under which ARE's own benchmark code (`run_dataset`,
`MultiScenarioRunner`, `ScenarioRunner`, `preprocess_scenario` with its judge, the agent
builder, ARE's default agent, the exporter, `output.jsonl`, `benchmark_stats.json`) runs
unchanged, except at four names - the narrowest seam found, each one module attribute that
ARE's code reads at call time:

* `are.simulation.scenario_runner.Environment` - the environment `ScenarioRunner._run` builds
  for each run (agent or oracle) and `_judge` builds for offline judging;
* `are.simulation.scenarios.scenario_imported_from_json.utils.Environment` - the oracle
  pre-run `preprocess_scenario` makes to give the judge its reference events;

  both become `SyncEnvironment` on the current scenario's `VirtualWall`: ARE's Environment API
  without its thread, the time-based loop ticking only as the wall moves, the queue-based
  (oracle) loop run straight through;
* `are.simulation.agents.default_agent.are_simulation_main.time` - the module the default
  agent's loop idles with (`time.sleep(1)` when it has no message): its `sleep` moves the
  current scenario's wall instead of blocking, so idling costs no wall time and the
  environment runs exactly the ticks that second holds;
* `are.simulation.multi_scenario_runner.stream_pool` / `process_scenario` - every scenario is
  run in the calling thread, one after another (ARE's own sequential executor, which keeps
  `--scenario_timeout` as a wall-clock alarm), each on a fresh `VirtualWall`; no thread or
  process per scenario.

Everything is restored on exit (and ARE's SIGINT handler, which `MultiScenarioRunner` installs
process-wide, is put back). The patches are process-global while the block runs: do not run
ARE's threaded benchmark in the same process at the same time.
"""

from __future__ import annotations

import signal
import threading
import time as _time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any
from unittest.mock import patch

from areasync.bridge.sync import SyncEnvironment, VirtualWall


class WallHolder:
    """The virtual wall of the scenario being run (one per scenario)."""

    def __init__(self) -> None:
        self.wall = VirtualWall()
        self.walls = 0
        self.environments: list[SyncEnvironment] = []

    def fresh(self) -> VirtualWall:
        self.wall = VirtualWall()
        self.walls += 1
        return self.wall


class WallTime:
    """Stands in for the `time` module: `sleep` moves the current virtual wall."""

    def __init__(self, holder: WallHolder) -> None:
        self._holder = holder
        self.slept = 0.0

    def sleep(self, seconds: float) -> None:
        self.slept += seconds
        self._holder.wall.sleep(seconds)

    def __getattr__(self, name: str) -> Any:
        return getattr(_time, name)


def _environment_class(holder: WallHolder) -> type[SyncEnvironment]:
    class BenchEnvironment(SyncEnvironment):
        """ARE's `Environment` signature, on the current scenario's virtual wall."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, wall=holder.wall, **kwargs)
            holder.environments.append(self)

    return BenchEnvironment


@contextmanager
def virtual_clock() -> Iterator[WallHolder]:
    """Run ARE's benchmark pipeline inside this block on virtual clocks (see the module doc)."""
    import are.simulation.agents.default_agent.are_simulation_main as agent_main
    import are.simulation.multi_scenario_runner as multi
    import are.simulation.scenario_runner as scenario_runner
    import are.simulation.scenarios.scenario_imported_from_json.utils as preprocess

    holder = WallHolder()
    environment = _environment_class(holder)
    original_stream_pool = multi.stream_pool
    original_process = multi.process_scenario

    def process_scenario(*args: Any, **kwargs: Any) -> Any:
        holder.fresh()  # each scenario (with its oracle pre-run) on a wall of its own
        return original_process(*args, **kwargs)

    def stream_pool(*args: Any, **kwargs: Any) -> Any:
        kwargs["executor_type"] = "sequential"
        return original_stream_pool(*args, **kwargs)

    main_thread = threading.current_thread() is threading.main_thread()
    sigint = signal.getsignal(signal.SIGINT) if main_thread else None
    with ExitStack() as stack:
        stack.enter_context(patch.object(scenario_runner, "Environment", environment))
        stack.enter_context(patch.object(preprocess, "Environment", environment))
        stack.enter_context(patch.object(agent_main, "time", WallTime(holder)))
        stack.enter_context(patch.object(multi, "stream_pool", stream_pool))
        stack.enter_context(patch.object(multi, "process_scenario", process_scenario))
        try:
            yield holder
        finally:
            if main_thread:
                signal.signal(signal.SIGINT, sigint)
