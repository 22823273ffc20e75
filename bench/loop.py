"""Loop benchmark: areasync fast+oracle against ARE's queue-based loop and ARE's execution floor.

    make bench            # or: python bench/loop.py [--sizes 1000,10000,100000] [--repeats 3]
    python bench/loop.py --clock cpu     # CPU time, on a machine other work keeps busy

Prints one JSON document. For each N (synthetic scenario of N ENV events, `bench.synthetic`):
- `floor`: ARE's `Event.execute` + `Environment.add_to_log` in a plain loop (`bench.floor`);
- `areasync`: `Simulation.load(scenario, mode="fast", oracle=True)` + `anyio.run(sim.run)`, timed
  from load (environment construction, app registration, scheduling) to the end of the run;
  `null` with a note while `areasync` cannot be imported (the bench predates the core);
- `are_queue_loop`: ARE's own oracle run, at N <= `--are-loop-max` only (it is quadratic).
Then the ratios the targets are set on: areasync/floor events/s at every N (>= 0.85), areasync
per-event cost at the largest N over the smallest (<= 1.5), areasync speed-up over ARE's loop at
1,000 events (>= 100). The machine is noisy: runners are interleaved at each N, every sample is a
fresh scenario, the best of `--repeats` samples counts, and GC is kept out of timed regions.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import sys
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script (`python bench/loop.py`): make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from are.simulation.scenarios.scenario import Scenario

from bench.common import log
from bench.floor import CLOCK, Timing, quiet_gc, run_are_queue_loop, run_floor
from bench.synthetic import bench_total, synthetic_scenario

DEFAULT_SIZES = (1_000, 10_000, 100_000)
TARGET_FRACTION_OF_FLOOR = 0.85
TARGET_COST_GROWTH = 1.5
TARGET_SPEEDUP_VS_ARE = 100.0

Runner = Callable[[Scenario], Timing]


def load_areasync(scenario: Scenario) -> Any:
    """`Simulation.load(scenario, mode="fast", oracle=True)`, imported only when called."""
    from areasync import Simulation

    return Simulation.load(scenario, mode="fast", oracle=True)


def run_areasync(scenario: Scenario) -> Any:
    """Run `scenario` fast+oracle through areasync; returns the environment (an ARE subclass)."""
    import anyio

    sim = load_areasync(scenario)
    anyio.run(sim.run)
    return sim.env


def timed_areasync(scenario: Scenario) -> Timing:
    """`run_areasync`, timed from `Simulation.load` to the end of the run (load reported apart)."""
    import anyio

    with quiet_gc():
        started = CLOCK.read()
        sim = load_areasync(scenario)
        loaded = CLOCK.read()
        anyio.run(sim.run)
        seconds = CLOCK.read() - started
    return Timing(seconds, len(scenario.events), sim.env, setup_seconds=loaded - started)


def areasync_unavailable() -> str | None:
    """Why the areasync column cannot be measured, or None if it can."""
    try:
        from areasync import Simulation  # noqa: F401
    except Exception as exc:  # any import-time failure of a work-in-progress core
        return f"areasync not importable yet ({type(exc).__name__}: {exc})"
    return None


def sample(runner: Runner, n: int) -> Timing:
    """One run on a fresh scenario, checked: every event ran exactly once."""
    scenario = synthetic_scenario(n)
    timing = runner(scenario)
    executed, logged = bench_total(scenario), len(timing.env.event_log)
    if executed != n or logged != n:
        raise RuntimeError(f"{runner.__name__}: {executed} executed, {logged} logged, {n} expected")
    return timing


def summary(samples: list[Timing]) -> dict[str, Any]:
    best = min(samples, key=lambda t: t.seconds)
    cell = {
        "seconds": round(best.seconds, 6),
        "events_per_s": round(best.events_per_s, 1),
        "us_per_event": round(best.us_per_event, 3),
        "samples_s": [round(t.seconds, 6) for t in samples],
    }
    if best.setup_seconds is not None:
        cell["of_which_load_s"] = round(best.setup_seconds, 6)
    return cell


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or denominator is None or denominator == 0:
        return None
    return round(numerator / denominator, 3)


def measure(
    sizes: list[int], repeats: int, are_loop_max: int, notes: list[str]
) -> list[dict[str, Any]]:
    """Sample every runner at every size. A failing areasync run drops that column (with a note
    in `notes`) instead of the whole benchmark: the core may be mid-change."""
    runners: dict[str, Runner] = {"floor": run_floor}
    unavailable = areasync_unavailable()
    if unavailable is None:
        runners["areasync"] = timed_areasync
    else:
        notes.append(unavailable + "; the areasync column is null")

    def take(name: str, n: int) -> Timing | None:
        try:
            return sample(runners[name], n)
        except Exception as exc:
            if name != "areasync":
                raise
            notes.append(f"areasync failed at n={n} ({type(exc).__name__}: {exc}); column null")
            del runners[name]
            return None

    for name in list(runners):  # warm-up: imports, caches, first-call costs
        take(name, 200)
    rows = []
    for n in sizes:
        samples: dict[str, list[Timing]] = {name: [] for name in ("floor", "areasync")}
        for _ in range(repeats if n < 100_000 else max(1, repeats - 1)):
            for name in list(runners):  # interleaved, so drift hits every runner alike
                timing = take(name, n)
                if timing is not None:
                    samples[name].append(timing)
                    log(f"n={n} {name}: {timing.seconds:.3f} s")
        row: dict[str, Any] = {
            "n": n,
            "floor": summary(samples["floor"]),
            "areasync": summary(samples["areasync"]) if "areasync" in runners else None,
            "are_queue_loop": None,
        }
        if n <= are_loop_max:
            row["are_queue_loop"] = summary([sample(run_are_queue_loop, n)])
            log(f"n={n} are_queue_loop: {row['are_queue_loop']['seconds']:.3f} s")
        rows.append(row)
    if "areasync" not in runners:  # a failure part-way: no partial column
        for row in rows:
            row["areasync"] = None
    return rows


def ratios(rows: list[dict[str, Any]]) -> dict[str, Any]:
    def metric(row: dict[str, Any], column: str, key: str) -> float | None:
        cell = row[column]
        return None if cell is None else float(cell[key])

    first, last = rows[0], rows[-1]
    at_1k = next((row for row in rows if row["n"] == 1_000), None)
    return {
        "areasync_over_floor_events_per_s": {
            str(row["n"]): ratio(
                metric(row, "areasync", "events_per_s"), metric(row, "floor", "events_per_s")
            )
            for row in rows
        },
        f"areasync_us_per_event_{last['n']}_over_{first['n']}": ratio(
            metric(last, "areasync", "us_per_event"), metric(first, "areasync", "us_per_event")
        ),
        f"floor_us_per_event_{last['n']}_over_{first['n']}": ratio(
            metric(last, "floor", "us_per_event"), metric(first, "floor", "us_per_event")
        ),
        "areasync_speedup_vs_are_queue_loop_1000": None
        if at_1k is None
        else ratio(
            metric(at_1k, "are_queue_loop", "seconds"), metric(at_1k, "areasync", "seconds")
        ),
        "are_queue_loop_over_floor_us_per_event_1000": None
        if at_1k is None
        else ratio(
            metric(at_1k, "are_queue_loop", "us_per_event"), metric(at_1k, "floor", "us_per_event")
        ),
    }


def verdicts(r: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, bool | None]:
    fractions = list(r["areasync_over_floor_events_per_s"].values())
    growth = next(v for k, v in r.items() if k.startswith("areasync_us_per_event_"))
    speedup = r["areasync_speedup_vs_are_queue_loop_1000"]
    return {
        f"areasync_at_least_{TARGET_FRACTION_OF_FLOOR}_of_floor_at_every_n": None
        if None in fractions
        else all(f >= TARGET_FRACTION_OF_FLOOR for f in fractions),
        f"areasync_cost_growth_at_most_{TARGET_COST_GROWTH}x": None
        if growth is None or len(rows) < 2
        else growth <= TARGET_COST_GROWTH,
        f"areasync_at_least_{TARGET_SPEEDUP_VS_ARE:g}x_are_queue_loop_at_1000": None
        if speedup is None
        else speedup >= TARGET_SPEEDUP_VS_ARE,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)))
    parser.add_argument("--repeats", type=int, default=3, help="samples per runner and size")
    parser.add_argument("--are-loop-max", type=int, default=1_000, help="largest N for ARE's loop")
    CLOCK.add_option(parser)
    args = parser.parse_args(argv)
    CLOCK.use(args.clock)
    sizes = sorted(int(size) for size in args.sizes.split(","))
    logging.disable(logging.WARNING)  # ARE logs every event at INFO; the JSON is the output

    notes: list[str] = []
    started = time.perf_counter()
    rows = measure(sizes, max(1, args.repeats), args.are_loop_max, notes)
    r = ratios(rows)
    report = {
        "benchmark": "areasync loop: synthetic ENV events, fast + oracle",
        "scenario": "N ENV events calling BenchApp.bump(amount=1), 1 s apart, every 5th tied",
        "method": (
            f"best of {args.repeats} fresh-scenario samples per N (one fewer at N >= 100000), "
            "runners interleaved, gc collected before and disabled during timed regions; "
            "floor times execute+add_to_log only; areasync times Simulation.load + run "
            "(load, which schedules the N events, also shown apart); "
            "ARE's loop times Environment() + env.run; "
            f"timed with the {args.clock} clock"
        ),
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "are": metadata.version("meta-agents-research-environments"),
        },
        "results": rows,
        "ratios": r,
        "targets_met": verdicts(r, rows),
        "notes": notes,
        "total_wall_s": round(time.perf_counter() - started, 1),
    }
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
