"""`areasync bench run`: `are-benchmark run` on the virtual clock.

The command is ARE's own: its options are the very `click` parameters of
`are.simulation.benchmark.cli.main` (all but the `run|judge|gaia2-run` argument), with the same
names, defaults and meanings, and its body is ARE's, called with `command="run"` by
`areasync.gaia2.runner.run()`. What differs is the clock and the concurrency (see `runner`):
every environment runs on a virtual wall with no thread, up to `--max_concurrent_scenarios`
runs share one event loop in this process (`--executor_type` is accepted and adds no threads
or processes), and the agent's idle polling costs no wall time.

Three options are areasync's own (`areasync.gaia2.sweep`): `--resume` (skip the runs already
finished in `--output_dir`), `--retry N` (run again a run whose model endpoint failed) and
`--report/--no-report` (gaia2-cli's per-run files and `index.html`, `areasync.gaia2.report`).
Ctrl-C stops a sweep cleanly: no new runs, the running ones cancelled, what finished written
(exit status 130); a second Ctrl-C quits at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

PROG = "areasync bench run"


def are_command() -> click.Command:
    from are.simulation.benchmark.cli import main

    return main


RESUME = click.Option(
    ["--resume"],
    is_flag=True,
    default=False,
    help=(
        "areasync: skip the runs already finished in --output_dir (recorded there as each run "
        "finishes), and run the rest; refused if the sweep there had other options"
    ),
)
RETRY = click.Option(
    ["--retry"],
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help=(
        "areasync: run a run again, up to N times, when its model endpoint failed (a model or "
        "judge request raised and the run did not succeed); an agent's own failure never is"
    ),
)
REPORT = click.Option(
    ["--report/--no-report"],
    default=True,
    show_default=True,
    help=(
        "areasync: write gaia2-cli's per-run files (result.json, events.jsonl, trace.jsonl) "
        "and index.html into --output_dir after the run"
    ),
)
OWN_OPTIONS = ("resume", "retry", "report")
INTERRUPTED = 130  # the shell's status for a process stopped by Ctrl-C
HUB_UNREACHABLE = 1


def bench_run_command() -> click.Command:
    """A click command with `are-benchmark run`'s options, running ARE's body on virtual time."""
    are_main = are_command()
    params = [p for p in are_main.params if p.name != "command"]

    @click.pass_context
    def callback(ctx: click.Context, **kwargs: Any) -> int:
        from areasync.gaia2 import pool, runner, sweep

        resume, retry, report = (kwargs.pop(name) for name in OWN_OPTIONS)
        output_dir = kwargs.get("output_dir")
        try:
            plan = sweep.Sweep(Path(output_dir) if output_dir else None, resume=resume, retry=retry)
            if output_dir:
                sweep.check_options(output_dir, kwargs, resume)
        except (ValueError, sweep.OptionsMismatch) as error:
            raise click.UsageError(str(error)) from None
        are_callback = are_main.callback
        assert are_callback is not None
        interruption = pool.Interruption()
        try:
            # ARE's callback takes the click context itself (it is `pass_context`).
            runner.run(
                lambda: are_callback(command="run", **kwargs),
                models=not kwargs.get("oracle"),
                plan=plan,
                interruption=interruption,
            )
        except AssertionError:
            # ARE asserts that a run finished; after Ctrl-C none may have.
            if not interruption.requested:
                raise
        if plan.hub_failures:
            # ARE logs these, skips the config and exits 0; a script must not mistake an
            # unreachable Hub for an evaluation.
            for failure in plan.hub_failures:
                click.echo(
                    f"areasync bench run: could not load {failure}. Check the network (and "
                    "HF_TOKEN for a gated dataset), or download the dataset and pass "
                    "--dataset PATH.",
                    err=True,
                )
            return HUB_UNREACHABLE
        if report and output_dir:
            _write_report(Path(output_dir))
        if plan.resumed or plan.retried:
            click.echo(
                f"areasync: {plan.resumed} runs resumed from {output_dir}, "
                f"{plan.retried} retried after their model endpoint failed",
                err=True,
            )
        if interruption.requested:
            where = f" and written to {output_dir}" if output_dir else ""
            click.echo(
                f"Interrupted: {plan.finished + plan.resumed} runs finished{where}; "
                "rerun the same command with --resume to run the rest.",
                err=True,
            )
            return INTERRUPTED
        return 0

    return click.Command(
        "run",
        params=[*params, RESUME, RETRY, REPORT],
        callback=callback,
        help=(
            "Run a Gaia2 dataset as `are-benchmark run` does (same options), every run on a "
            "virtual clock and up to --max_concurrent_scenarios runs at once on one event "
            "loop: no thread per scenario, no wall time spent idling. Ctrl-C stops cleanly, "
            "writing what finished (twice: at once)."
        ),
    )


def _write_report(output_dir: Path) -> None:
    from areasync.gaia2.report import write_report
    from areasync.gaia2.runs import OutputDirError

    try:
        index = write_report(output_dir, artifacts=True)
    except OutputDirError as error:
        click.echo(f"areasync: no report written: {error}", err=True)
        return
    click.echo(f"Report: {index.resolve().as_uri()}")


def main(argv: Sequence[str]) -> int:
    """Entry point for `areasync bench run ARGS...`; returns the exit status."""
    command = bench_run_command()
    try:
        status = command.main(args=list(argv), prog_name=PROG, standalone_mode=False)
    except click.exceptions.Exit as exit_:
        return int(exit_.exit_code)
    except click.ClickException as error:
        error.show()
        return error.exit_code
    except click.exceptions.Abort:
        return 1
    return status if isinstance(status, int) else 0
