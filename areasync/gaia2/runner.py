"""ARE's Gaia2 benchmark pipeline with only the clock (and the concurrency) replaced.

`virtual_clock()` is a context manager under which ARE's own benchmark code (`run_dataset`,
`MultiScenarioRunner`, `ScenarioRunner`, `preprocess_scenario` with its judge, the agent
builder, ARE's default agent, the exporter, `output.jsonl`, `benchmark_stats.json`) runs
unchanged, except at a few names - the narrowest seams found, each one module attribute that
ARE's code reads at call time:

* `are.simulation.scenario_runner.Environment` - the environment `ScenarioRunner._run` builds
  for each run (agent or oracle) and `_judge` builds for offline judging;
* `are.simulation.scenarios.scenario_imported_from_json.utils.Environment` - the oracle
  pre-run `preprocess_scenario` makes to give the judge its reference events;

  both become `SyncEnvironment` on the current run's `VirtualWall`: ARE's Environment API
  without its thread, the time-based loop ticking only as the wall moves, the queue-based
  (oracle) loop run straight through (with `--executor_type thread` ARE pre-runs the oracle
  as it loads each scenario, before any run: that pre-run gets a wall of its own);
* `are.simulation.agents.default_agent.are_simulation_main.time` - the module the default
  agent's loop idles with (`time.sleep(1)` when it has no message): its `sleep` moves the
  current run's wall instead of blocking, so idling costs no wall time and the environment
  runs exactly the ticks that second holds;
* `are.simulation.multi_scenario_runner.stream_pool` - `areasync.gaia2.pool.stream_pool`:
  every scenario run (oracle pre-run, judge and agent run) is a greenlet on one event loop,
  up to `--max_concurrent_scenarios` at once, each on a wall of its own (`process_scenario`
  gives each run a fresh `VirtualWall` in its own context); no thread or process per run;
* `are.simulation.agents.llm.litellm.litellm_engine.completion` - LiteLLM's blocking call,
  made by the agent's and the judge's engines: under a run it awaits `litellm.acompletion`
  with the same arguments instead (`cooperative.wait`), so runs overlap their model calls;
  other engines (Hugging Face, Llama API) still block, and their runs take turns;
* `jinja_format` in `are.simulation.validation.judge` and `...validation.utils.llm_utils` -
  `areasync.bridge.judge.templates.cached_jinja_format`: the same text, each template
  compiled once per process instead of ~8,000 times per scenario while the judge is built;
* `are.simulation.multi_scenario_runner.tqdm` and `MultiScenarioRunner._setup_signal_handlers`
  (with a `Sweep`, see `areasync.gaia2.sweep`): plain progress lines off a terminal, and
  Ctrl-C handled on the loop (`run`): the first stops the sweep gracefully - no new run, the
  running ones cancelled, ARE writes what finished - the second interrupts at once;
* `datasets.load_dataset` (with a `Sweep`): what ARE's Hub loader could not load is noted, and
  gaia2-cli's rows (`{scenario_id, scenario}`) are read as ARE's (`layouts`);
* ARE's two `threading.local`s (`EventRegisterer._thread_local`: whether events are being
  captured; `logging_config._thread_local`: which scenario a log line belongs to) become
  per-greenlet (`cooperative.GreenletLocal`), since the runs now share one thread.

Everything is restored on exit (and ARE's SIGINT handler, which `MultiScenarioRunner` installs
process-wide, is put back). The patches are process-global while the block runs: do not run
ARE's threaded benchmark in the same process at the same time. Run ARE's entry point under
the block with `pool.run_cooperatively(fn)` on an event loop (`run(fn)` does both).
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
import time as _time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar
from unittest.mock import patch

import anyio

from areasync.bridge.judge import templates as judge_templates
from areasync.bridge.sync import SyncEnvironment, VirtualWall
from areasync.gaia2 import cooperative, layouts, pool, sweep, timings

R = TypeVar("R")

logger = logging.getLogger("areasync.gaia2")

_wall: ContextVar[VirtualWall] = ContextVar("areasync_gaia2_wall")


def current_wall() -> VirtualWall:
    """The virtual wall of the scenario run calling (each run has its own)."""
    try:
        return _wall.get()
    except LookupError:
        raise RuntimeError(
            "no scenario run is active here: ARE's Environment was built outside a run of "
            "areasync's benchmark pipeline (use areasync.gaia2.runner.run)"
        ) from None


@contextmanager
def own_wall() -> Iterator[VirtualWall]:
    """A fresh virtual wall for ARE code run directly in this block (e.g. one
    `ScenarioRunner.run` under `virtual_clock()`, outside the benchmark's pool)."""
    wall = VirtualWall()
    token = _wall.set(wall)
    try:
        yield wall
    finally:
        _wall.reset(token)


class RunStats:
    """What `virtual_clock()` saw: the last environment built (only the last: a sweep builds
    thousands, each holding its world)."""

    def __init__(self) -> None:
        self.last_environment: SyncEnvironment | None = None


class WallTime:
    """Stands in for the `time` module: `sleep` moves the current run's virtual wall."""

    def sleep(self, seconds: float) -> None:
        current_wall().sleep(seconds)

    def __getattr__(self, name: str) -> Any:
        return getattr(_time, name)


def _environment_class(stats: RunStats, *, outside_runs: bool = False) -> type[SyncEnvironment]:
    """`outside_runs`: an environment built where no run is active gets a fresh wall."""

    def wall() -> VirtualWall:
        if outside_runs:
            return _wall.get(None) or VirtualWall()
        return current_wall()

    class BenchEnvironment(SyncEnvironment):
        """ARE's `Environment` signature, on the current run's virtual wall."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, wall=wall(), **kwargs)
            stats.last_environment = self

    return BenchEnvironment


def _cooperative_completion(blocking: Callable[..., Any]) -> Callable[..., Any]:
    def completion(*args: Any, **kwargs: Any) -> Any:
        try:
            if not cooperative.cooperating():
                return blocking(*args, **kwargs)
            import litellm

            return cooperative.wait(litellm.acompletion(*args, **kwargs))
        except Exception as error:
            sweep.note_endpoint_error(error)  # the model endpoint failed this run
            raise

    return completion


def _noting_hub_failures(load: Callable[..., Any], plan: sweep.Sweep) -> Callable[..., Any]:
    """`datasets.load_dataset` as ARE's Hub loader calls it, noting what it could not load,
    and reading gaia2-cli's rows as ARE's (`layouts.with_data`). ARE's benchmark imports
    `datasets` already: patching it costs no import."""

    def load_dataset(path: str, *args: Any, **kwargs: Any) -> Any:
        try:
            return layouts.with_data(load(path, *args, **kwargs))
        except Exception as error:
            where = "/".join(str(part) for part in (path, kwargs.get("name")) if part)
            plan.hub_failures.append(f"{where}: {error}")
            raise

    return load_dataset


def _process_scenario(
    dispatch: Callable[..., Any] | None, plan: sweep.Sweep | None
) -> Callable[..., Any]:
    """ARE's `process_scenario` (or `dispatch`, which runs it elsewhere) for one run, on a
    wall of its own, with `plan`'s resume, retry and records (if any); its phase marks."""
    import are.simulation.multi_scenario_runner as multi

    original = dispatch or multi.process_scenario

    def attempt_run(item: Any, *args: Any, **kwargs: Any) -> tuple[Any, sweep.RunAttempt]:
        # Each run is its own greenlet with its own context: this wall is the run's alone.
        _wall.set(VirtualWall())
        attempt = sweep.begin_attempt()
        try:
            return original(item, *args, **kwargs), attempt
        except Exception as error:
            attempt.raised = error
            return None, attempt

    def process_scenario(item: Any, *args: Any, **kwargs: Any) -> Any:
        timings.first("first_run_dispatched")
        if dispatch is None:
            timings.first("first_run_started")
        try:
            return run_scenario(item, *args, **kwargs)
        finally:
            timings.latest("last_run_ended")

    def run_scenario(item: Any, *args: Any, **kwargs: Any) -> Any:
        if plan is None:
            _wall.set(VirtualWall())
            return original(item, *args, **kwargs)
        scenario_id, run_number = multi.extract_scenario_id_and_run_number(item)
        records = plan.records_for(kwargs.get("config"))
        if plan.resume and records is not None:
            record = records.get(scenario_id, run_number)
            if record is not None and not record.infrastructure_failure:
                plan.resumed += 1
                return record.to_result()
        attempts = 0
        while True:
            attempts += 1
            result, attempt = attempt_run(item, *args, **kwargs)
            succeeded = attempt.raised is None and result.success is True
            if not succeeded and attempt.endpoint_error_count and attempts <= plan.retry:
                plan.retried += 1
                logger.warning(
                    "%s run %s: the model endpoint failed (%s); retrying, attempt %d of %d",
                    scenario_id,
                    run_number,
                    attempt.endpoint_errors[-1],
                    attempts + 1,
                    plan.retry + 1,
                )
                continue
            if attempt.raised is not None:
                raise attempt.raised
            if records is not None:
                record = sweep.record_of(scenario_id, run_number, result, attempt, attempts)
                records.put(record)
            plan.finished += 1
            return result

    return process_scenario


@contextmanager
def virtual_clock(
    *,
    models: bool = True,
    plan: sweep.Sweep | None = None,
    dispatch: Callable[..., Any] | None = None,
    dispatch_bounds_runs: bool = False,
) -> Iterator[RunStats]:
    """Run ARE's benchmark pipeline inside this block on virtual clocks (see the module doc).

    `models=False` (an `--oracle` run, which calls no model, or runs dispatched to other
    processes, which call theirs there) leaves LiteLLM unimported.
    `plan` adds a sweep's records, resume, retry and progress lines (`areasync.gaia2.sweep`).
    `dispatch` stands in for ARE's `process_scenario` under `plan` (`--ray`: on a host;
    `--workers`: in a worker process). `dispatch_bounds_runs`: it bounds each run's time
    itself (`--run-budget`), so ARE's `--scenario_timeout` is not applied around it too.
    """
    import are.simulation.agents.default_agent.are_simulation_main as agent_main
    import are.simulation.logging_config as logging_config
    import are.simulation.multi_scenario_runner as multi
    import are.simulation.scenario_runner as scenario_runner
    import are.simulation.scenarios.scenario_imported_from_json.utils as preprocess
    from are.simulation.types import EventRegisterer

    stats = RunStats()
    environment = _environment_class(stats)
    process_scenario = _process_scenario(dispatch, plan)

    main_thread = threading.current_thread() is threading.main_thread()
    sigint = signal.getsignal(signal.SIGINT) if main_thread else None
    with ExitStack() as stack:
        stack.enter_context(patch.object(scenario_runner, "Environment", environment))
        stack.enter_context(
            patch.object(preprocess, "Environment", _environment_class(stats, outside_runs=True))
        )
        stack.enter_context(patch.object(agent_main, "time", WallTime()))
        stream_pool = pool.untimed_stream_pool if dispatch_bounds_runs else pool.stream_pool
        stack.enter_context(patch.object(multi, "stream_pool", stream_pool))
        stack.enter_context(patch.object(multi, "process_scenario", process_scenario))
        stack.enter_context(judge_templates.cached_templates())
        stack.enter_context(
            patch.object(EventRegisterer, "_thread_local", cooperative.GreenletLocal())
        )
        stack.enter_context(
            patch.object(logging_config, "_thread_local", cooperative.GreenletLocal())
        )
        if plan is not None:
            import datasets  # type: ignore[import-untyped]  # ARE imports load_dataset at each call

            stack.enter_context(
                patch.object(
                    datasets, "load_dataset", _noting_hub_failures(datasets.load_dataset, plan)
                )
            )
            stack.enter_context(patch.object(multi, "tqdm", sweep.progress_bar))
            stack.enter_context(
                patch.object(multi.MultiScenarioRunner, "_setup_signal_handlers", lambda self: None)
            )
        if models:
            import are.simulation.agents.llm.litellm.litellm_engine as litellm_engine

            stack.enter_context(
                patch.object(
                    litellm_engine,
                    "completion",
                    _cooperative_completion(litellm_engine.completion),
                )
            )
        try:
            yield stats
        finally:
            if main_thread:
                signal.signal(signal.SIGINT, sigint)


def run(
    fn: Callable[[], R],
    *,
    models: bool = True,
    plan: sweep.Sweep | None = None,
    interruption: pool.Interruption | None = None,
    dispatch: Callable[..., Any] | None = None,
    dispatch_bounds_runs: bool = False,
) -> R:
    """Call ARE's benchmark entry point `fn` under `virtual_clock()` on a new event loop.

    On the main thread the first Ctrl-C requests `interruption` (the sweep stops gracefully
    and `fn` returns with what finished), the next one raises `KeyboardInterrupt` at once.
    """
    interruption = interruption or pool.Interruption()

    async def main() -> R:
        import asyncio

        loop = asyncio.get_running_loop()
        on_main_thread = threading.current_thread() is threading.main_thread()

        def on_sigint() -> None:
            loop.remove_signal_handler(signal.SIGINT)  # the next Ctrl-C interrupts at once
            print(
                "\nStopping: no new runs; the runs still going are cancelled and what "
                "finished is written. Press Ctrl-C again to quit at once.",
                file=sys.stderr,
                flush=True,
            )
            interruption.request()

        if on_main_thread:
            loop.add_signal_handler(signal.SIGINT, on_sigint)
        try:
            return await pool.run_cooperatively(fn, interruption)
        finally:
            if on_main_thread:
                loop.remove_signal_handler(signal.SIGINT)

    with virtual_clock(
        models=models, plan=plan, dispatch=dispatch, dispatch_bounds_runs=dispatch_bounds_runs
    ):
        return anyio.run(main)
