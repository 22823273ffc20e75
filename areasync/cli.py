"""The `areasync` command: run a scenario, print the protocol schema, serve sessions.

areasync run scenario_tutorial --mode fast --oracle
areasync schema
areasync serve [--scenario ID_OR_PATH ...]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any, TextIO

import anyio

from areasync.loop.clock import ClockMode


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    handler = {"run": _cmd_run, "schema": _cmd_schema, "serve": _cmd_serve}[args.command]
    return int(handler(args))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="areasync", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command")

    run = sub.add_parser("run", help="run a scenario to its end and print its event log")
    run.add_argument("scenario", help="a registered scenario id, a JSON file, or JSON text")
    run.add_argument("--mode", choices=[m.value for m in ClockMode], default="fast")
    run.add_argument("--speed", type=float, default=1.0, help="realtime speed (sim s per wall s)")
    run.add_argument("--oracle", action="store_true", help="run the scenario's oracle events")
    run.add_argument("--json", action="store_true", help="print the event log as JSON lines")
    run.add_argument("--no-progress", action="store_true", help="never draw a progress bar")

    sub.add_parser("schema", help="print the areasync/1 protocol's JSON Schema")

    serve = sub.add_parser("serve", help="serve sessions over WebSocket (and the dashboard)")
    serve.add_argument("--scenario", action="append", default=None)
    serve.add_argument("--mode", choices=[m.value for m in ClockMode], default="realtime")
    serve.add_argument("--speed", type=float, default=1.0)
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8765)
    serve.add_argument("--trace-dir", default="traces")
    serve.add_argument("--token", default=None)
    serve.add_argument("--oracle", action="store_true")
    return parser


def _cmd_schema(args: argparse.Namespace) -> int:
    from areasync.protocol.schema import render_schema

    sys.stdout.write(render_schema())
    return 0


def _cmd_serve(args: argparse.Namespace) -> int:
    print("areasync serve: not yet - the WebSocket service is being built", file=sys.stderr)
    return 2


def _cmd_run(args: argparse.Namespace) -> int:
    from areasync.bridge.scenarios import ScenarioError
    from areasync.simulation import Simulation

    try:
        sim = Simulation.load(args.scenario, mode=args.mode, oracle=args.oracle, speed=args.speed)
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
    success = bool(validation and validation.get("success"))
    print(
        f"\nstate: {sim.state}   ticks: {sim.env.tick_count}   events: {len(sim.events())}   "
        f"validation: {'PASSED' if success else 'FAILED'}",
        file=out,
    )
    if validation and validation.get("exception"):
        print(f"validation exception: {validation['exception']}", file=out)
    if validation and validation.get("rationale"):
        print(f"rationale: {validation['rationale']}", file=out)
    return 0 if success else 1


async def _run_with_progress(sim: Any, show: bool) -> Any:
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


if __name__ == "__main__":
    sys.exit(main())
