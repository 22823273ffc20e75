"""`areasync run`: a scenario run to its end in this process, its event log and its verdict.

The log is printed as a table (`print_event_table`) or as JSON lines (`--json`); a progress bar
is drawn on stderr while it runs when stderr is a terminal. The exit status is 0 only if ARE's
validation passed. ARE is imported once the options are known good.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any, TextIO

import anyio

from areasync.protocol.frames import Mode
from areasync.protocol.records import Validation

__all__ = ["MANUAL_RUN", "print_event_table", "run"]

# `run` has no controller, so in manual mode nothing would ever move the clock: refuse it at
# once rather than wait for ever (driving it by ticks would only be realtime unpaced, which
# --mode realtime --speed N already is).
MANUAL_RUN = (
    "--mode manual moves the clock only on a controller's tick or jump, and `areasync run` "
    "has no controller: it would wait for ever. Use --mode fast (as fast as possible) or "
    "--mode realtime --speed N; to step a scenario by hand, run `areasync serve --mode manual` "
    "and drive it with a controller"
)


def run(args: argparse.Namespace) -> int:
    """Run the scenario `args` names to its end; print its log and verdict; 0 if it passed."""
    if args.mode == Mode.MANUAL.value:
        print(f"areasync run: {MANUAL_RUN}", file=sys.stderr)
        return 2
    from areasync.bridge.scenarios.loading import ScenarioError
    from areasync.simulation import Simulation

    try:
        sim = Simulation.load(
            args.scenario,
            mode=args.mode,
            oracle=args.oracle,
            speed=args.speed,
            import_mode=args.import_mode,
            max_scenario_bytes=args.max_scenario_bytes,
        )
    except ScenarioError as exc:
        print(f"areasync: {exc}", file=sys.stderr)
        return 2
    show_progress = sys.stderr.isatty() and not args.no_progress and not args.json
    validation = anyio.run(_run_with_progress, sim, show_progress)
    out = sys.stdout
    if args.json:
        import msgspec

        for record in sim.events():
            out.write(msgspec.json.encode(record).decode() + "\n")
    else:
        print_event_table(sim.events(), start=float(sim.env.start_time or 0.0), out=out)
    success = validation is not None and validation.success is True
    # ARE's "no validation" (success None): a benchmark import without a judge, as Gaia2's.
    unjudged = validation is not None and validation.success is None
    verdict = "PASSED" if success else "NOT JUDGED (no judge)" if unjudged else "FAILED"
    print(
        f"\nstate: {sim.state}   ticks: {sim.env.tick_count}   events: {len(sim.events())}   "
        f"validation: {verdict}",
        file=out,
    )
    if validation is not None and validation.exception:
        print(f"validation exception: {validation.exception}", file=out)
    if validation is not None and validation.rationale:
        print(f"rationale: {validation.rationale}", file=out)
    return 0 if success else 1  # non-zero unless validation passed


async def _run_with_progress(sim: Any, show: bool) -> Validation | None:
    if not show or sim.env.duration is None:
        return await sim.run()
    async with anyio.create_task_group() as tg:

        async def draw() -> None:
            while not sim.ended:
                _draw_bar(sim, sys.stderr)
                await anyio.sleep(0.1)

        tg.start_soon(draw)
        result = await sim.run()
        _draw_bar(sim, sys.stderr)
        sys.stderr.write("\n")
        tg.cancel_scope.cancel()
    return result


def _draw_bar(sim: Any, out: TextIO, width: int = 40) -> None:
    duration = float(sim.env.duration or 1.0)
    elapsed = max(0.0, sim.now - float(sim.env.start_time or 0.0))
    fraction = min(1.0, elapsed / duration)
    filled = int(fraction * width)
    out.write(
        f"\r[{'#' * filled}{'.' * (width - filled)}] {elapsed:8.1f}/{duration:.0f} s simulated"
    )
    out.flush()


def print_event_table(records: Sequence[Any], *, start: float, out: TextIO) -> None:
    """The event log as a fixed-width table: time since start, type, app.function, args, result."""
    header = f"{'t (s)':>9}  {'type':<10} {'app.function':<44} {'args / result'}"
    print(header, file=out)
    print("-" * len(header), file=out)
    for record in records:
        where = f"{record.app or '-'}.{record.function or '-'}"
        detail = _short(record.args)
        if record.exception:
            detail += f"  !! {record.exception}"
        elif record.return_value is not None:
            detail += f"  -> {_short(record.return_value)}"
        print(
            f"{record.time - start:>9.1f}  {record.event_type:<10} {where:<44} {detail}", file=out
        )


def _short(value: Any, limit: int = 80) -> str:
    text = json.dumps(value, default=str, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 3] + "..."
