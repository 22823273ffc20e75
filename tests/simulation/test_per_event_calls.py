"""The engine's per-event and per-call cost, counted in Python calls rather than timed.

A regression on the hot path (a check per event instead of per call, a conversion per event,
a log line formatted and dropped) shows as more Python calls per ENV event or per tool call,
which `sys.setprofile` counts exactly on any machine, loaded or not. Each figure is the
difference between two runs of different lengths divided by the difference in their lengths,
so the set-up cancels out. The bounds sit a few calls above what the code makes today
(docs/topics/performance.md, "The loop": what those calls cost in time, and what they
are); raise one only with a reason, and say it there.
"""

from __future__ import annotations

import gc
import heapq
import sys
from collections.abc import Awaitable, Callable
from types import FrameType
from typing import Any

from areasync import Simulation
from bench.synthetic import synthetic_scenario

TOOL = "SystemApp__get_current_time"
# Python calls (functions and builtins) per unit of work: today's counts (96.4 per event, with
# one call of room; 202 per tool call, 211 with the service's bounds: no room, the count is
# exact on any machine).
MAX_CALLS_PER_EVENT = 97
MAX_CALLS_PER_TOOL_CALL = 202
MAX_CALLS_PER_BOUNDED_TOOL_CALL = 211
# One batch of steps for the whole run: the driver yields every `step_budget` wall seconds, so
# with the default the count of batches, and their calls, would depend on the machine's speed.
ONE_BATCH = 1e9
SERVICE_BOUNDS: dict[str, Any] = {
    "tool_budget": 10.0,
    "max_listing": 100_000,
    "max_files_created": 100_000,
}


class CallCounter:
    """Counts the Python and C function calls made on this thread while it is on (only the
    calls of `only`'s C functions, if given)."""

    def __init__(self, only: frozenset[object] | None = None) -> None:
        self.calls = 0
        self._only = only

    def _profile(self, frame: FrameType, event: str, arg: object) -> None:
        if self._only is not None:
            if event == "c_call" and arg in self._only:
                self.calls += 1
        elif event == "call" or event == "c_call":
            self.calls += 1

    async def count(self, work: Callable[[], Awaitable[None]]) -> int:
        gc.collect()
        gc.disable()  # a collection's callbacks are no part of the work
        sys.setprofile(self._profile)
        try:
            await work()
        finally:
            sys.setprofile(None)
            gc.enable()
        return self.calls


async def _calls_for_a_fast_run(events: int) -> int:
    sim = Simulation.load(
        synthetic_scenario(events), mode="fast", oracle=True, step_budget=ONE_BATCH
    )
    calls = await CallCounter().count(sim.run)
    assert len(sim.env.event_log) == events
    return calls


async def _heap_pops_of_a_fast_run(events: int) -> int:
    sim = Simulation.load(
        synthetic_scenario(events), mode="fast", oracle=True, step_budget=ONE_BATCH
    )
    pops = await CallCounter(only=frozenset({heapq.heappop})).count(sim.run)
    assert len(sim.env.event_log) == events
    return pops


async def test_the_events_a_fast_run_loaded_leave_the_queue_without_a_heap_pop() -> None:
    # A heap pop's cost grows with the queue (~2 log2(n) comparisons over memory that grows
    # with n); the events scheduled at load are taken from a sorted run instead. (The event
    # loop's own timers may pop a heap, the same number of times in both runs.)
    assert await _heap_pops_of_a_fast_run(600) == await _heap_pops_of_a_fast_run(300)


async def _calls_for_tool_calls(calls: int, **options: Any) -> int:
    sim = Simulation.load("scenario_tutorial", mode="manual", **options)
    for _ in range(20):  # the first calls build the tool registry and the bindings
        await sim.call_tool(TOOL, {})

    async def work() -> None:
        for _ in range(calls):
            await sim.call_tool(TOOL, {})

    counted = await CallCounter().count(work)
    await sim.stop()
    return counted


async def test_an_env_event_of_a_fast_run_costs_a_bounded_number_of_python_calls() -> None:
    await _calls_for_a_fast_run(50)  # first-use costs of the process
    per_event = (await _calls_for_a_fast_run(600) - await _calls_for_a_fast_run(300)) / 300
    assert per_event <= MAX_CALLS_PER_EVENT, per_event


async def test_a_tool_call_costs_a_bounded_number_of_python_calls() -> None:
    per_call = (await _calls_for_tool_calls(300) - await _calls_for_tool_calls(100)) / 200
    assert per_call <= MAX_CALLS_PER_TOOL_CALL, per_call


async def test_a_tool_call_within_the_services_bounds_costs_a_bounded_number_of_calls() -> None:
    per_call = (
        await _calls_for_tool_calls(300, **SERVICE_BOUNDS)
        - await _calls_for_tool_calls(100, **SERVICE_BOUNDS)
    ) / 200
    assert per_call <= MAX_CALLS_PER_BOUNDED_TOOL_CALL, per_call
