"""Bridge micro-benchmark: what one tool call, one ENV event and a session's first tool call cost.

    python bench/bridge.py                      # prints JSON; ~20 s
    python bench/bridge.py --only hot,first     # or events, split (comma-separated)
    python bench/bridge.py --calls 2000 --only hot --no-timing   # a fixed workload (callgrind)
    python bench/bridge.py --only hot,events --bounded  # with the service's per-call bounds
    python bench/bridge.py --clock cpu          # CPU time, on a machine other work keeps busy

In-process, no socket: this is the simulation's share of a round trip (`Simulation.call_tool`),
not the service's (see `bench/service.py`).

- `hot`: a manual-mode `scenario_tutorial` session, `SystemApp__get_current_time` called
  `--calls` times in a loop (after 500 warm-up calls, the heap frozen out of the GC); us per call,
  median of `--repeats` loops (each loop's figure in `each`). ARE logs every call (an AGENT event
  on the session's stream).
- `events`: `bench.synthetic` with `--events` ENV events run in fast oracle mode to the end; us
  per event, median of `--repeats` runs. Its app's events match no notification template.
- `split`: where the hot loop's time goes, each figure the median of `--repeats` loops of
  `--calls`: `Simulation.call_tool`; ARE's call alone (`SystemApp.get_current_time()` on the
  session's app: ARE's `event_registered` wrapper, the app, `add_to_log`, the notification
  system, and areasync's hooks in them); the same without the session's stream listener (no
  stream record); the same call on ARE's own `Environment` (no areasync at all); the app's
  function alone (`disable_events()`: no event).
- `first`: the agent's first tool call of a fresh session, where ARE builds the tool registry of
  every app (`App.get_tools()`): CPU (`time.process_time`), then, in as many other sessions,
  the Python allocations it leaves behind (tracemalloc, `current` after minus before; `peak`
  during), for the first session of the process and the median of the `--sessions` after it.

- `budget`: the per-call budget's cost (`areasync.bridge.budget`: the watchdog's marker around
  each tool call and each ENV event, the count of listed entries), `hot` and `events` with the
  service's bounds (`tool_budget`, `max_listing`, `max_files_created` as `ServiceConfig` has
  them) and without (the library's default), alternating in one run.

- `guard`: the sandbox guard's cost (`areasync.bridge.sandbox.audit`), on vs off in the same run,
  alternating: `hot` and `events` with the session's lane entering its sandbox (as always) and
  with it not entering it (the audit hook stays installed, it cannot be removed: "off" is the
  hook's no-session path); plus the hook alone per audited event: a non-file event, a file
  event outside any session, and an `open` checked inside a session.

For a deterministic figure run the `hot` part under callgrind at two sizes and divide the
difference in instructions by the difference in calls (the set-up cancels out):

    PYTHONHASHSEED=0 valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.1000 \\
        python bench/bridge.py --only hot --no-timing --calls 1000
    (the same with --calls 3000 into /tmp/cg.3000; each file's `totals:` line is its count;
    (totals_3000 - totals_1000) / 2000 = instructions per call, reproducible to ~0.1%; a run
    takes ~3 minutes)

To compare two versions of the code, run each from its own tree back to back, alternating
(`PYTHONPATH=<tree> python <tree>/bench/bridge.py`).
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import statistics
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `bench` and `areasync` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import anyio

from areasync import Simulation
from bench.floor import CLOCK

TOOL = "SystemApp__get_current_time"
WARM_UP = 500


def _unguarded(sim: Simulation) -> Simulation:
    """`sim` with its lane no longer entering the session's sandbox (for `guard`)."""
    sim.lane._sandbox = None
    return sim


async def hot(
    calls: int, repeats: int, timing: bool, guarded: bool = True, **options: Any
) -> dict[str, Any]:
    sim = Simulation.load("scenario_tutorial", mode="manual", **options)
    if not guarded:
        _unguarded(sim)
    for _ in range(WARM_UP):
        await sim.call_tool(TOOL, {})
    each = []
    for _ in range(repeats if timing else 1):
        gc.collect()
        gc.freeze()  # each loop starts with everything before it out of the GC's way
        start = CLOCK.read()
        for _ in range(calls):
            await sim.call_tool(TOOL, {})
        each.append((CLOCK.read() - start) / calls * 1e6)
    await sim.stop()
    gc.unfreeze()
    return {
        "calls": calls,
        "us_per_call": round(statistics.median(each), 2),
        "each": [round(x, 2) for x in each],
    }


def _median_us(function: Any, calls: int, repeats: int) -> float:
    each = []
    for _ in range(repeats):
        gc.collect()
        gc.freeze()
        start = CLOCK.read()
        for _ in range(calls):
            function()
        each.append((CLOCK.read() - start) / calls * 1e6)
    gc.unfreeze()
    return round(statistics.median(each), 2)


async def split(calls: int, repeats: int) -> dict[str, Any]:
    from are.simulation.apps.system import SystemApp
    from are.simulation.environment import Environment, EnvironmentConfig
    from are.simulation.notification_system import VerboseNotificationSystem
    from are.simulation.types import disable_events

    from areasync.conformance.scenarios import load_scenario

    out: dict[str, Any] = {"call_tool": (await hot(calls, repeats, True))["us_per_call"]}
    sim = Simulation.load("scenario_tutorial", mode="manual")
    app = sim.env.get_app_with_class(SystemApp)
    out["are_call_in_areasync"] = _median_us(app.get_current_time, calls, repeats)
    sim.env.event_listeners.clear()
    out["are_call_in_areasync_no_stream"] = _median_us(app.get_current_time, calls, repeats)
    env = Environment(
        EnvironmentConfig(oracle_mode=False), notification_system=VerboseNotificationSystem()
    )
    env.register_apps(load_scenario("scenario_tutorial").apps or [])
    are_app = env.get_app_with_class(SystemApp)
    out["are_call_in_are_environment"] = _median_us(are_app.get_current_time, calls, repeats)
    with disable_events():
        out["app_function_alone"] = _median_us(are_app.get_current_time, calls, repeats)
    return out


async def events(n: int, repeats: int, guarded: bool = True, **options: Any) -> dict[str, Any]:
    from bench.synthetic import synthetic_scenario

    each = []
    for _ in range(repeats):
        scenario = synthetic_scenario(n)
        sim = Simulation.load(scenario, mode="fast", oracle=True, **options)
        if not guarded:
            _unguarded(sim)
        gc.collect()
        start = CLOCK.read()
        await sim.run()
        each.append((CLOCK.read() - start) / n * 1e6)
    return {
        "events": n,
        "us_per_event": round(statistics.median(each), 2),
        "each": [round(x, 2) for x in each],
    }


async def _on_and_off(
    calls: int, n: int, repeats: int, on: dict[str, Any], off: dict[str, Any]
) -> dict[str, Any]:
    """`hot` and `events` with the keyword arguments `on`, then `off`, alternating, so that
    machine noise hits both alike."""
    on_calls, off_calls, on_events, off_events = [], [], [], []
    for _ in range(repeats):
        on_calls.append((await hot(calls, 1, True, **on))["us_per_call"])
        off_calls.append((await hot(calls, 1, True, **off))["us_per_call"])
        on_events.append((await events(n, 1, **on))["us_per_event"])
        off_events.append((await events(n, 1, **off))["us_per_event"])
    return {
        "tool_call_us": {
            "on": round(statistics.median(on_calls), 2),
            "off": round(statistics.median(off_calls), 2),
            "each_on": on_calls,
            "each_off": off_calls,
        },
        "env_event_us": {
            "on": round(statistics.median(on_events), 2),
            "off": round(statistics.median(off_events), 2),
            "each_on": on_events,
            "each_off": off_events,
        },
    }


async def guard(calls: int, n: int, repeats: int) -> dict[str, Any]:
    import os

    from areasync.bridge.sandbox import audit as sandbox

    out = await _on_and_off(calls, n, repeats, {"guarded": True}, {"guarded": False})
    sim = Simulation.load("scenario_tutorial", mode="manual")
    inside = os.path.join(sim.sandbox.roots[0], "Documents")
    args = (inside, "rb", os.O_RDONLY)
    with sim.sandbox.entered():
        open_checked = _median_us(lambda: sandbox._hook("open", args), calls, repeats)
    out["hook_alone_us"] = {
        "non_file_event": _median_us(lambda: sandbox._hook("sys._getframe", ()), calls, repeats),
        "file_event_outside_sessions": _median_us(
            lambda: sandbox._hook("open", args), calls, repeats
        ),
        "open_checked_in_a_session": open_checked,
    }
    return out


def service_bounds() -> dict[str, Any]:
    """The per-call bounds a session of the service has (`ServiceConfig`'s defaults)."""
    from areasync.service import ServiceConfig

    config = ServiceConfig()
    return {
        "tool_budget": config.tool_budget,
        "max_listing": config.max_listing,
        "max_files_created": config.max_files_created,
    }


async def budget(calls: int, n: int, repeats: int) -> dict[str, Any]:
    return await _on_and_off(calls, n, repeats, service_bounds(), {})


async def first(sessions: int) -> dict[str, Any]:
    cpu: list[float] = []
    kept: list[int] = []
    peak: list[int] = []
    # CPU without tracemalloc (which slows allocation-heavy code several times), then memory.
    for _ in range(sessions + 1):
        sim = Simulation.load("scenario_tutorial", mode="manual")
        gc.collect()
        start = time.process_time()
        await sim.call_tool(TOOL, {})
        cpu.append(time.process_time() - start)
        await sim.stop()
    for _ in range(sessions + 1):
        sim = Simulation.load("scenario_tutorial", mode="manual")
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        await sim.call_tool(TOOL, {})
        current, top = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        kept.append(current - before)
        peak.append(top - before)
        await sim.stop()
    return {
        "tools": len(sim.list_tools()),
        "first_session": {"cpu_ms": round(cpu[0] * 1e3, 2), "kept_kb": round(kept[0] / 1024, 1)},
        "later_sessions": {
            "sessions": sessions,
            "cpu_ms": round(statistics.median(cpu[1:]) * 1e3, 2),
            "kept_kb": round(statistics.median(kept[1:]) / 1024, 1),
            "peak_kb": round(statistics.median(peak[1:]) / 1024, 1),
        },
    }


async def main(args: argparse.Namespace) -> dict[str, Any]:
    parts = args.only.split(",")
    out: dict[str, Any] = {}
    bounds = service_bounds() if args.bounded else {}
    if "hot" in parts:
        out["hot"] = await hot(args.calls, args.repeats, args.timing, **bounds)
    if "events" in parts:
        out["events"] = await events(args.events, args.repeats, **bounds)
    if "split" in parts:
        out["split"] = await split(args.calls, args.repeats)
    if "first" in parts:
        out["first"] = await first(args.sessions)
    if "guard" in parts:
        out["guard"] = await guard(args.calls, args.events, args.repeats)
    if "budget" in parts:
        out["budget"] = await budget(args.calls, args.events, args.repeats)
    return out


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", default="hot,events,first")
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--events", type=int, default=5000)
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-timing", dest="timing", action="store_false")
    parser.add_argument(
        "--bounded", action="store_true", help="hot and events with the service's per-call bounds"
    )
    CLOCK.add_option(parser)
    args = parser.parse_args()
    CLOCK.use(args.clock)
    logging.disable(logging.WARNING)
    print(json.dumps(anyio.run(main, args), indent=1))


if __name__ == "__main__":
    cli()
