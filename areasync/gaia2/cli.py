"""`areasync bench run`: `are-benchmark run` on the virtual clock.

The command is ARE's own: its options are the very `click` parameters of
`are.simulation.benchmark.cli.main` (all but the `run|judge|gaia2-run` argument), with the same
names, defaults and meanings, and its body is ARE's, called with `command="run"` by
`areasync.gaia2.runner.run()`. What differs is the clock and the concurrency (see `runner`):
every environment runs on a virtual wall with no thread, up to `--max_concurrent_scenarios`
runs share one event loop in this process (`--executor_type` is accepted and adds no threads
or processes), and the agent's idle polling costs no wall time.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click

PROG = "areasync bench run"


def are_command() -> click.Command:
    from are.simulation.benchmark.cli import main

    return main


def bench_run_command() -> click.Command:
    """A click command with `are-benchmark run`'s options, running ARE's body on virtual time."""
    are_main = are_command()
    params = [p for p in are_main.params if p.name != "command"]

    @click.pass_context
    def callback(ctx: click.Context, **kwargs: Any) -> Any:
        from areasync.gaia2 import runner

        callback = are_main.callback
        assert callback is not None
        # ARE's callback takes the click context itself (it is `pass_context`).
        return runner.run(
            lambda: callback(command="run", **kwargs), models=not kwargs.get("oracle")
        )

    return click.Command(
        "run",
        params=params,
        callback=callback,
        help=(
            "Run a Gaia2 dataset as `are-benchmark run` does (same options), every environment "
            "on a virtual clock: no thread per scenario, no wall time spent idling."
        ),
    )


def main(argv: Sequence[str]) -> int:
    """Entry point for `areasync bench run ARGS...`; returns the exit status."""
    command = bench_run_command()
    try:
        command.main(args=list(argv), prog_name=PROG, standalone_mode=False)
    except click.exceptions.Exit as exit_:
        return int(exit_.exit_code)
    except click.ClickException as error:
        error.show()
        return error.exit_code
    except click.exceptions.Abort:
        return 1
    return 0
