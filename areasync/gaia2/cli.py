"""`areasync bench run|judge|gaia2-run`: `are-benchmark`'s three commands on the virtual clock.

Each command is ARE's own: its options are the very `click` parameters of
`are.simulation.benchmark.cli.main` (all but its `run|judge|gaia2-run` argument), with the same
names, defaults and meanings, and its body is ARE's, called with that argument (`command="run"`,
`"judge"` or `"gaia2-run"`) by `areasync.gaia2.runner.run()`. So ARE's own checks hold as they
are: `judge` refuses an explicit `--num_runs` (it reads the click context's parameter source,
which is ours and has ARE's parameter) and forces 1; `gaia2-run` runs Gaia2's phases with
Gaia2's settings (`handle_gaia2_run`). What differs is the clock and the concurrency (see
`runner`): every environment runs on a virtual wall with no thread, up to
`--max_concurrent_scenarios` runs share one event loop per process (`--executor_type` adds no
threads or processes), and the agent's idle polling costs no wall time.

Each command runs its runs in other processes (`Where`): by default in `--workers N` worker
processes of this machine, one per core (`gaia2/local.py`), or, for `run`, with `--ray`, in
the same worker processes on every node of a Ray cluster, `--workers N` per node, one per
CPU of each node by default (`cluster/batch.py`); the driver keeps ARE's runner, the records
and every output either way (`gaia2/spread.py`). `--workers 0`, and ARE's `--executor_type thread`
(whose scenarios ARE loads and pre-runs in this process), keep every run in this process.

`bench_command(name)` builds any of the three from `COMMANDS`: one callback, the differences
are data (`BenchCommand`). Six options are areasync's own, on every command, because each is
a long sweep of the same per-run shape (ARE's `process_scenario`):

* `--workers N` and `--run-budget`: where the runs run (above), and how long one may take in
  a worker before it is ended (`gaia2/local.py`; with `--ray`, on every node).

* `--require-confinement`: refuse to start unless the kernel can confine every worker process
  (`gaia2/confinement.py`); without it they are confined as far as the kernel allows, and the
  start-up line says how far.

* `--resume` / records (`areasync.gaia2.sweep`): `run` and `gaia2-run` run agents for hours;
  `judge` calls the judge LLM for every trace of a dataset, which is hours too. Each finished
  run is recorded beside the `output.jsonl` ARE writes it to: `OUTPUT_DIR` for `run` and
  `judge`, `OUTPUT_DIR/<phase>/<config>/` for `gaia2-run`, whose phases run the same
  scenarios again.
  The options are kept (with the command) in `OUTPUT_DIR/.areasync/options.json`, so a
  sweep is never resumed by another command or with options that change results.
* `--retry N`: the model endpoint failing is the same failure whether it is the agent's model
  or the judge's.
* `--report/--no-report`: gaia2-cli's per-run files and `index.html` for each folder ARE wrote
  an `output.jsonl` to (for `judge`: verdicts and rationales only, since ARE does not record
  which trace it judged).

`gaia2-run` without `--output_dir` writes where ARE's does (`./gaia2_results`, and
`benchmark_stats.json` in the working directory, as ARE does); its records go there too. An
interrupted `gaia2-run` never uploads (`--hf_upload`): ARE's own Ctrl-C kills the process before
its upload, while here the sweep stops gracefully and ARE's code goes on, up to the upload,
where it stops (without the stats and summary, which the `--resume` that finishes it writes):
the one name of ARE's patched here, `...benchmark.gaia2_submission.
upload_consolidated_results_to_hf`, raises `UploadSkipped` once the sweep was interrupted.

Ctrl-C stops a sweep cleanly: no new runs, the running ones cancelled, what finished written
(exit status 130); a second Ctrl-C quits at once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest.mock import patch

import click

from areasync.gaia2 import boot, timings


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
RAY = click.Option(
    ["--ray"],
    metavar="ADDRESS|auto",
    default=None,
    help=(
        "areasync: spread the runs over worker processes on every node of the Ray cluster at "
        "ADDRESS (`auto`: the local one), --workers N per node (default: one per CPU of each "
        "node), kept by a host actor per node; the outputs are written here as by a "
        "one-machine run. A run whose worker or node is lost runs again on another (said on "
        "stderr)"
    ),
)
WORKERS = click.Option(
    ["--workers"],
    type=click.IntRange(min=0),
    default=None,
    metavar="N",
    help=(
        "areasync: run the runs in N worker processes of this machine (default: one per core; "
        "0: every run in this process, as does --executor_type thread; with --ray, N on "
        "every node). The outputs are "
        "written here as by one process; a run whose worker dies runs again on another, and "
        "the worker is restarted (said on stderr)"
    ),
)
RUN_BUDGET = click.Option(
    ["--run-budget"],
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    metavar="SECONDS",
    help=(
        "areasync: with --workers N or --ray, a run still going after SECONDS (default: "
        "--scenario_timeout) is ended, its worker killed and restarted if the run does not "
        "give way at its next wait, and it is a failed run (RunBudgetExceeded) that --resume "
        "does not run again"
    ),
)
REQUIRE_CONFINEMENT = click.Option(
    ["--require-confinement"],
    is_flag=True,
    default=False,
    help=(
        "areasync: refuse to start unless the kernel can confine each worker process "
        "(Landlock ABI 4 or later, seccomp): files, network and privileges. Without it the "
        "workers are confined as far as the kernel allows, said on stderr"
    ),
)
MAX_SCENARIO_BYTES = click.Option(
    ["--max-scenario-bytes"],
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help=(
        "areasync: the largest scenario file of the dataset (-d / --dataset_path: every "
        ".json under it) in bytes, checked before anything runs; one above it stops the "
        "command with its name (default: 64 MiB)"
    ),
)
SHARD = click.Option(
    ["--shard"],
    metavar="I/K",
    default=None,
    help=(
        "areasync: run shard I of K of the sweep (1 <= I <= K; needs --config): the "
        "scenarios at positions I-1, I-1+K, ... in scenario-id order, every run of each. Run "
        "the K shards as independent jobs, each with its own --output_dir, then merge them "
        "with `areasync bench aggregate DIR... --output_dir OUT`"
    ),
)
TIMINGS = click.Option(
    ["--timings"],
    type=click.Path(dir_okay=False, writable=True),
    default=None,
    metavar="PATH",
    help=(
        "areasync: write the command's phase marks to PATH as JSON when it ends (start-up, "
        "first run started, last run ended, outputs, report, exit: areasync/gaia2/timings.py)"
    ),
)
OWN_OPTIONS = ("resume", "retry", "report")
INTERRUPTED = 130  # the shell's status for a process stopped by Ctrl-C
HUB_UNREACHABLE = 1
NO_PLACE_LEFT = 1
TOO_LARGE = 2  # as a usage error: nothing ran

# Said in every command's --help: what areasync changes, and adds.
DIFFERENCES = (
    "What differs from are-benchmark: every environment runs on a virtual clock (no "
    "thread; idling costs no wall time); the runs go to --workers processes (one per core by "
    "default), up to --max_concurrent_scenarios of them at once, each worker running its "
    "runs on one event loop (--executor_type adds no threads or processes). areasync's "
    "own options: --workers N, --run-budget, --require-confinement, --resume, --retry N, "
    "--report/--no-report, --max-scenario-bytes N, --timings PATH; for run, --ray and --shard I/K. "
    "Ctrl-C stops cleanly, writing what finished (twice: at once)."
)


@dataclass(frozen=True)
class BenchCommand:
    """What sets one `are-benchmark` command apart; everything else is shared."""

    name: str  # ARE's `command` argument
    summary: str  # the first paragraph of --help
    # Where ARE writes when --output_dir is not given (None: a temporary directory, unrecorded).
    default_output_dir: str | None = None
    # Runs are written to `OUTPUT_DIR/<phase>/<config>/` (each with its own output.jsonl).
    per_config_dirs: bool = False
    # Takes `--ray ADDRESS` (runs spread over a Ray cluster's hosts).
    on_ray: bool = False
    # Takes `--shard I/K` (one of K independent jobs, merged by `bench aggregate`).
    shardable: bool = False

    @property
    def prog(self) -> str:
        return f"areasync bench {self.name}"


RUN = BenchCommand(
    "run",
    "Run a Gaia2 dataset as `are-benchmark run` does (same options).",
    on_ray=True,
    shardable=True,
)
JUDGE = BenchCommand(
    "judge",
    "Judge the traces of a Gaia2 dataset offline as `are-benchmark judge` does (same options): "
    "ARE's judge on the completed events each trace holds, as in `-d OUT --config hf` for the "
    "hf/ traces an earlier run wrote to OUT (or DIR/CONFIG/SPLIT/*.json). --num_runs is 1, "
    "and refused if given, as in ARE.",
)
GAIA2_RUN = BenchCommand(
    "gaia2-run",
    "The complete Gaia2 evaluation as `are-benchmark gaia2-run` does (same options): every "
    "Gaia2 config of -d or --hf-dataset (execution, search, adaptability, time, ambiguity; then "
    "mini with Agent2Agent and mini with noise), each scenario 3 times, ARE's default agent, "
    "Gaia2's scenario durations (420 s for Time, 1,800 s for the rest); results in "
    "OUTPUT_DIR/<phase>/<config>/ (default ./gaia2_results), benchmark_stats.json, and "
    "submission_summary.md or --hf_upload. --config, --num_runs, --noise, --a2a_app_prop and "
    "--trace_dump_format are Gaia2's, whatever is given, as in ARE. An interrupted evaluation "
    "is never uploaded.",
    # `handle_gaia2_run`'s own default.
    default_output_dir="./gaia2_results",
    per_config_dirs=True,
)
COMMANDS = {command.name: command for command in (RUN, JUDGE, GAIA2_RUN)}


def bench_command(name: str) -> click.Command:
    """A click command with `are-benchmark NAME`'s options, running ARE's body on virtual time."""
    spec = COMMANDS[name]
    are_main = are_command()
    timings.first("are_cli_imported")
    params = [p for p in are_main.params if p.name != "command"]

    @click.pass_context
    def callback(ctx: click.Context, **kwargs: Any) -> int:
        marks_to = kwargs.pop("timings")
        try:
            return sweep_command(ctx, **kwargs)
        finally:
            if marks_to:
                timings.latest("exiting")
                timings.write(marks_to)

    def sweep_command(ctx: click.Context, **kwargs: Any) -> int:
        from areasync.gaia2 import pool, runner, shards, sweep

        resume, retry, report = (kwargs.pop(option) for option in OWN_OPTIONS)
        too_large = _too_large_file(kwargs, kwargs.pop("max_scenario_bytes"))
        if too_large is not None:
            click.echo(f"{spec.prog}: {too_large}", err=True)
            return TOO_LARGE
        shard_text = kwargs.pop("shard", None)
        where = _where(kwargs)
        output_dir = kwargs.get("output_dir") or spec.default_output_dir
        try:
            shard = _shard(shard_text, kwargs, output_dir)
            plan = sweep.Sweep(Path(output_dir) if output_dir else None, resume=resume, retry=retry)
            if output_dir:
                kept = {"command": spec.name, **kwargs}
                if shard is not None:
                    kept["shard"] = str(shard)
                sweep.check_options(output_dir, kept, resume)
        except (ValueError, sweep.OptionsMismatch) as error:
            raise click.UsageError(str(error)) from None
        are_callback = are_main.callback
        assert are_callback is not None
        interruption = pool.Interruption()
        spread = None
        try:
            # ARE's callback takes the click context itself (it is `pass_context`): ours, with
            # ARE's parameters, so ARE's parameter-source checks (judge's num_runs) hold.
            with (
                _no_upload_after(interruption),
                shards.sharded(shard),
                _runs_elsewhere(where, kwargs) as spread,
            ):
                runner.run(
                    lambda: are_callback(command=spec.name, **kwargs),
                    # Runs elsewhere call their models there: the driver needs no LiteLLM.
                    models=not kwargs.get("oracle") and spread is None,
                    plan=plan,
                    interruption=interruption,
                    dispatch=None if spread is None else spread.dispatch,
                    dispatch_bounds_runs=spread is not None and spread.bounds_runs,
                )
                timings.latest("are_returned")
            timings.latest("places_closed")
        except AssertionError:
            # ARE asserts that a run finished; after Ctrl-C none may have.
            if not interruption.requested:
                raise
        except UploadSkipped:
            click.echo(
                f"{spec.prog}: interrupted, so nothing was uploaded (--hf_upload); rerun the "
                "same command with --resume to finish the evaluation and upload it.",
                err=True,
            )
        if plan.hub_failures:
            # ARE logs these, skips the config and exits 0; a script must not mistake an
            # unreachable Hub for an evaluation.
            for failure in plan.hub_failures:
                click.echo(
                    f"{spec.prog}: could not load {failure}. Check the network (and "
                    "HF_TOKEN for a gated dataset), or download the dataset and pass "
                    "--dataset PATH.",
                    err=True,
                )
            return HUB_UNREACHABLE
        if report and output_dir:
            for folder in _output_folders(Path(output_dir), spec):
                _write_report(folder)
            timings.latest("report_written")
        if plan.resumed or plan.retried:
            click.echo(
                f"areasync: {plan.resumed} runs resumed from {output_dir}, "
                f"{plan.retried} retried after their model endpoint failed",
                err=True,
            )
        if interruption.requested:
            written = f" and written to {output_dir}" if output_dir else ""
            click.echo(
                f"Interrupted: {plan.finished + plan.resumed} runs finished{written}; "
                "rerun the same command with --resume to run the rest.",
                err=True,
            )
            return INTERRUPTED
        if spread is not None and not spread.places:
            click.echo(
                f"{spec.prog}: no {where.kind} was left to run on, so the runs not run are "
                "recorded as infrastructure failures (the reasons are above); fix that and "
                "rerun the same command with --resume, or run them in this process with "
                "--workers 0.",
                err=True,
            )
            return NO_PLACE_LEFT
        return 0

    return click.Command(
        spec.name,
        params=[
            *params,
            RESUME,
            RETRY,
            REPORT,
            WORKERS,
            RUN_BUDGET,
            REQUIRE_CONFINEMENT,
            MAX_SCENARIO_BYTES,
            TIMINGS,
            *([RAY] if spec.on_ray else []),
            *([SHARD] if spec.shardable else []),
        ],
        callback=callback,
        help=f"{spec.summary}\n\n{DIFFERENCES}",
    )


def _shard(text: str | None, kwargs: dict[str, Any], output_dir: str | None) -> Any:
    """The `--shard I/K` given (None if not), or a ValueError saying what it needs."""
    from areasync.gaia2.shards import Shard

    if text is None:
        return None
    shard = Shard.parse(text)
    if not kwargs.get("config"):
        raise ValueError(f"--shard {text} needs --config C: one config per sharded sweep")
    if not output_dir:
        raise ValueError(f"--shard {text} needs --output_dir: `bench aggregate` reads it")
    return shard


def _too_large_file(kwargs: dict[str, Any], limit: int | None) -> str | None:
    """Why the dataset (-d, --dataset_path) has a file above the operator's limit, if it has."""
    from areasync.bridge.operator_files import (
        DEFAULT_MAX_SCENARIO_BYTES,
        TooLargeError,
        check_dataset,
    )

    for root in (kwargs.get("dataset"), kwargs.get("dataset_path")):
        if root and Path(root).exists():
            try:
                check_dataset(root, limit or DEFAULT_MAX_SCENARIO_BYTES)
            except TooLargeError as error:
                return str(error)
    return None


@dataclass(frozen=True)
class Where:
    """Where `run`'s runs go: a Ray cluster's hosts, worker processes here, or this process."""

    ray: str | None = None  # the cluster's address (--ray)
    workers: int = 0  # worker processes (--workers N); 0: this process
    per_node: int | None = None  # with --ray: each node's workers (None: one per CPU there)
    budget_s: float | None = None  # each run's time in a worker (--run-budget); None: unbounded
    require_confinement: bool = False  # --require-confinement

    @property
    def kind(self) -> str:
        """What a place to run on is called here."""
        return "worker"


def _where(kwargs: dict[str, Any]) -> Where:
    """`--ray`, `--workers` and `--run-budget` (taken out of ARE's options), checked against
    each other and against `--executor_type`."""
    address: str | None = kwargs.pop("ray", None)
    workers: int | None = kwargs.pop("workers", None)
    budget: float | None = kwargs.pop("run_budget", None)
    required: bool = kwargs.pop("require_confinement", False)
    threads = kwargs.get("executor_type") == "thread"
    if address:
        if threads:
            raise click.UsageError(
                "--ray runs each scenario in a worker process of some node, from ARE's JSON "
                "of it as --executor_type process does: drop --executor_type thread"
            )
        if workers == 0:
            raise click.UsageError(
                "--ray runs the runs in worker processes on every node: give --workers N "
                "(per node) or leave it out (one per CPU of each node)"
            )
        # `--workers N` is each node's (None: one per CPU of that node, resolved there).
        return _in_workers(kwargs, workers or 0, budget, required, ray=address, per_node=workers)
    if workers is None:
        from areasync.gaia2.local import default_workers

        workers = 0 if threads else default_workers()
    elif workers and threads:
        raise click.UsageError(
            "--workers N runs each scenario in a worker process, from ARE's JSON of it as "
            "--executor_type process does: drop --executor_type thread, or give --workers 0"
        )
    if not workers:
        if required:
            raise click.UsageError(
                "--require-confinement confines worker processes; with --workers 0 (or "
                "--executor_type thread) the runs share this process, unconfined: give "
                "--workers N"
            )
        if budget is not None:
            raise click.UsageError(
                "--run-budget bounds runs in worker processes: with --workers 0 (or "
                "--executor_type thread) the runs share this process, where ARE's "
                "--scenario_timeout applies, at a run's next wait: drop --run-budget, or "
                "give --workers N"
            )
        return Where()
    return _in_workers(kwargs, workers, budget, required)


def _in_workers(
    kwargs: dict[str, Any],
    workers: int,
    budget: float | None,
    required: bool,
    **where: Any,
) -> Where:
    """Runs in worker processes (here, or on every node: `where`): the kernel checked for
    `--require-confinement`, the budget ARE's `--scenario_timeout` unless given."""
    if required:
        from areasync.gaia2.confinement import refusal

        refused = refusal()
        if refused is not None:
            raise click.UsageError(refused)
    if budget is None:
        budget = kwargs.get("scenario_timeout") or None  # ARE's 0: no timeout
    return Where(
        workers=workers,
        budget_s=None if budget is None else float(budget),
        require_confinement=required,
        **where,
    )


@contextmanager
def _runs_elsewhere(where: Where, options: dict[str, Any]) -> Iterator[Any]:
    """With `--ray` or `--workers N`: the `Spread` over the cluster's hosts or this machine's
    worker processes (`gaia2/spread.py`, the workers confined by ARE's `options`), and at the
    end what was re-run or ended said on stderr; otherwise None (the runs stay in this
    process)."""
    if not where.ray and not where.workers:
        yield None
        return
    with ExitStack() as stack:
        from areasync.gaia2.confinement import bench_confinement, describe

        spec = bench_confinement(options, required=where.require_confinement)
        models = not options.get("oracle")
        budget = "no" if where.budget_s is None else f"{where.budget_s:g} s"
        if where.ray:
            try:
                from areasync.cluster.batch import NoHostError, spread_runs
            except ImportError as error:
                raise click.UsageError(f"--ray: {error}") from None
            try:
                spread = stack.enter_context(
                    spread_runs(where.ray, where.per_node, where.budget_s, spec, models=models)
                )
            except NoHostError as error:
                raise click.UsageError(f"--ray: {error}") from None
            hosts = len({name.split("/")[0] for name in spread.places})  # `host/worker`
            over = (
                f"{len(spread.places)} worker process(es) on {hosts} node(s) of the cluster "
                f"(run budget: {budget}; {describe(spec)})"
            )
        else:
            from areasync.gaia2.local import local_runs

            spread = stack.enter_context(
                local_runs(where.workers, where.budget_s, spec, models=models)
            )
            over = f"{where.workers} worker process(es) (run budget: {budget}; {describe(spec)})"
        click.echo(f"areasync: runs spread over {over}", err=True)
        try:
            yield spread
        finally:
            for line in spread.summary(where.kind):
                click.echo(f"areasync: {line}", err=True)


def _output_folders(output_dir: Path, spec: BenchCommand) -> list[Path]:
    """The folders ARE wrote an `output.jsonl` to (gaia2-run: one per phase and config)."""
    if not spec.per_config_dirs:
        return [output_dir]
    return sorted(path.parent for path in output_dir.glob("*/*/output.jsonl"))


class UploadSkipped(Exception):
    """An interrupted `gaia2-run` reached its upload: raised there, so that ARE neither uploads
    nor logs that it did."""


@contextmanager
def _no_upload_after(interruption: Any) -> Iterator[None]:
    """Keep `gaia2-run` from uploading a sweep that was interrupted (see the module doc)."""
    import are.simulation.benchmark.gaia2_submission as submission

    upload: Callable[..., Any] = submission.upload_consolidated_results_to_hf  # read at call time

    def upload_unless_interrupted(*args: Any, **kwargs: Any) -> Any:
        if interruption.requested:
            raise UploadSkipped
        return upload(*args, **kwargs)

    with patch.object(submission, "upload_consolidated_results_to_hf", upload_unless_interrupted):
        yield


def _write_report(output_dir: Path) -> None:
    from areasync.gaia2.report import write_report
    from areasync.gaia2.runs import OutputDirError

    try:
        index = write_report(output_dir, artifacts=True)
    except OutputDirError as error:
        click.echo(f"areasync: no report written: {error}", err=True)
        return
    click.echo(f"Report: {index.resolve().as_uri()}")


def main(argv: Sequence[str], command: str = "run", *, owns_process: bool = False) -> int:
    """Entry point for `areasync bench COMMAND ARGS...`; returns the exit status.

    `owns_process`: the command is its process's (run from the command line, not called by
    other code): the workers' fork server is booted at once and the process exits without a
    last collection (`boot.py`)."""
    timings.reset()
    timings.first("entered")
    if owns_process:
        boot.exit_uncollected()
        boot.boot_workers(argv)  # beside ARE's import, which bench_command does next
    spec = COMMANDS[command]
    try:
        status = bench_command(command).main(
            args=list(argv), prog_name=spec.prog, standalone_mode=False
        )
    except click.exceptions.Exit as exit_:
        return int(exit_.exit_code)
    except click.ClickException as error:
        error.show()
        return error.exit_code
    except click.exceptions.Abort:
        return 1
    return status if isinstance(status, int) else 0
