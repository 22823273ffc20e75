"""`areasync bench run`'s fixed costs beside what importing ARE's own CLI costs, in one run.

    PYTHONPATH=. python bench/fixed_costs.py [--repeats 3] [--num-runs 8] [--configs ...]
                                             [--source DIR]

Prints one JSON document. Each repeat measures, one after the other on the same machine:

* `fresh_imports_s`: a fresh `python -c "import are.simulation.benchmark.cli"` (what
  `are-benchmark`'s entry point imports), from spawn to exit (`are_cli`), and the same
  importing ARE's LiteLLM engine too (`are_cli_and_litellm`: what ARE's own run with a model
  imports before its first model call); and `are_benchmark_help_s`: `are-benchmark run
  --help`, ARE's command doing nothing.
* each configuration of `--configs` (`MODEL:WORKERS`, MODEL `stub` or `oracle`): `areasync
  bench run` as a subprocess, of the four basic scenarios of `areasync/gaia2/dataset.py`
  (one- and two-turn, passed and failed) `--num-runs` times each, 8 under way at once, against
  the stub LLM (`stub`; answering at once) or with `--oracle`, `--workers WORKERS`. Its phases
  come from the marks the command itself writes (`--timings`, areasync/gaia2/timings.py)
  against this process's clock: `start_s` (spawn to the first run started where it runs),
  `sweep_s` (first run started to last run ended), `end_s` (last run ended to the process's
  exit), `fixed_s` (start + end), `over_are_import_s` and `over_are_and_litellm_import_s`
  (fixed minus the same repeat's fresh imports), and the steps within each;
  `outputs_closed_s`: spawn to the end of its stdout and stderr, which every process it
  started holds too (what a pipeline waits for).

Per configuration: the median of each figure over the repeats, and every repeat's. `--source
DIR` measures another checkout of areasync (put first on PYTHONPATH), e.g. an export of an
older commit with the `--timings` option, to compare with.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import log

ROOT = Path(__file__).resolve().parent.parent
GIVE_UP_S = 1800.0
CONCURRENT = 8
# The command's marks (areasync/gaia2/timings.py), in order: each step is the time from one
# to the next.
STEPS = (
    ("spawn", "entered", "interpreter_and_areasync_cli_s"),
    ("entered", "are_cli_imported", "are_cli_import_s"),
    ("are_cli_imported", "first_run_dispatched", "to_first_dispatch_s"),
    ("first_run_dispatched", "first_run_started", "waiting_for_a_worker_s"),
    ("last_run_ended", "are_returned", "are_outputs_s"),
    ("are_returned", "places_closed", "closing_places_s"),
    ("places_closed", "report_written", "report_s"),
    ("report_written", "exit", "to_exit_s"),
)


def _env(source: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(source), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["OPENAI_API_KEY"] = env.get("OPENAI_API_KEY") or "stub"  # LiteLLM needs one
    return env


def timed(command: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, float, int]:
    """Spawn `command`: (spawn time, exit time, outputs-closed time, status), epoch seconds."""
    spawned = time.time()
    process = subprocess.Popen(
        command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    closed: list[float] = []
    tail: list[bytes] = []

    def drain() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            tail[:] = [*tail[-40:], line]
        closed.append(time.time())

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    status = process.wait(GIVE_UP_S)
    exited = time.time()
    reader.join(GIVE_UP_S)
    if status != 0:
        sys.stderr.write(b"".join(tail).decode(errors="replace"))
    return spawned, exited, closed[0], status


ARE_CLI = "are.simulation.benchmark.cli"
# What ARE's own run with its default agent imports besides, before its first model call.
ARE_MODEL_CLIENT = "are.simulation.agents.llm.litellm.litellm_engine"


def fresh_import(modules: Sequence[str], env: dict[str, str], cwd: Path) -> float:
    """A fresh interpreter importing `modules`, from spawn to exit."""
    command = [sys.executable, "-c", f"import {', '.join(modules)}"]
    spawned, exited, _, status = timed(command, env, cwd)
    assert status == 0, f"importing {modules} failed"
    return exited - spawned


def are_help(env: dict[str, str], cwd: Path) -> float | None:
    script = Path(sys.executable).parent / "are-benchmark"
    if not script.exists():
        return None
    spawned, exited, _, status = timed([str(script), "run", "--help"], env, cwd)
    assert status == 0, "are-benchmark run --help failed"
    return exited - spawned


def bench_run(
    args: list[str], env: dict[str, str], cwd: Path, marks_to: Path, imports: dict[str, float]
) -> dict[str, float]:
    """One `areasync bench run`: its phases (module docstring)."""
    command = [sys.executable, "-m", "areasync.cli", "bench", "run", *args]
    command += ["--timings", str(marks_to)]
    spawned, exited, closed, status = timed(command, env, cwd)
    if status != 0:
        raise RuntimeError(f"bench run exited {status}: {command}")
    marks: dict[str, float] = json.loads(marks_to.read_text())
    marks |= {"spawn": spawned, "exit": exited}
    start = marks["first_run_started"] - spawned
    end = exited - marks["last_run_ended"]
    figures = {
        "start_s": start,
        "sweep_s": marks["last_run_ended"] - marks["first_run_started"],
        "end_s": end,
        "fixed_s": start + end,
        "over_are_import_s": start + end - imports["are_cli"],
        "over_are_and_litellm_import_s": start + end - imports["are_cli_and_litellm"],
        "wall_s": exited - spawned,
        "outputs_closed_s": closed - spawned,
    }
    for begin, until, name in STEPS:
        if marks.get(begin) is not None and marks.get(until) is not None:
            figures[name] = marks[until] - marks[begin]
    return figures


def _median(samples: list[dict[str, float]]) -> dict[str, Any]:
    names = [name for name in samples[0] if all(name in s for s in samples)]
    return {
        "median": {name: round(statistics.median(s[name] for s in samples), 3) for name in names},
        "all": [{name: round(value, 3) for name, value in s.items()} for s in samples],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--num-runs", type=int, default=8, help="runs of each scenario")
    parser.add_argument("--configs", default="stub:0,stub:2,oracle:2", help="MODEL:WORKERS,...")
    parser.add_argument("--source", type=Path, default=ROOT, help="the areasync checkout")
    args = parser.parse_args()
    source = args.source.resolve()
    env = _env(source)

    from areasync.gaia2 import compare
    from areasync.gaia2.dataset import BASICS, agent_scripts, judge_rules, select, write_dataset
    from areasync.gaia2.stub_llm import Script, StubLLM

    configs = [
        (model, int(workers)) for model, workers in (c.split(":") for c in args.configs.split(","))
    ]
    chosen = select(only=BASICS)
    script = Script(agent=agent_scripts(chosen), judge=judge_rules(chosen))
    imports: list[dict[str, float]] = []
    helps: list[float] = []
    runs: dict[str, list[dict[str, float]]] = {f"{m}:{w}": [] for m, w in configs}
    load_before = os.getloadavg()
    log(f"fixed_costs: {args.repeats} repeats of {args.configs}, from {source}")
    with tempfile.TemporaryDirectory() as tmp, StubLLM(script) as stub:
        dataset = write_dataset(Path(tmp) / "dataset", only=BASICS)
        for repeat in range(args.repeats):
            imports.append(
                {
                    "are_cli": fresh_import([ARE_CLI], env, source),
                    "are_cli_and_litellm": fresh_import([ARE_CLI, ARE_MODEL_CLIENT], env, source),
                }
            )
            help_s = are_help(env, source)
            if help_s is not None:
                helps.append(help_s)
            for model, workers in configs:
                out = Path(tmp) / f"out-{model}-{workers}-{repeat}"
                extra = ["--max_concurrent_scenarios", str(CONCURRENT), "--workers", str(workers)]
                bench_args = compare.bench_args(
                    dataset,
                    out,
                    stub.endpoint,
                    oracle=model == "oracle",
                    num_runs=args.num_runs,
                    extra=extra,
                )
                marks_to = Path(tmp) / "timings.json"
                figures = bench_run(bench_args, env, source, marks_to, imports[-1])
                runs[f"{model}:{workers}"].append(figures)
                log(f"  {model} --workers {workers}: {json.dumps(figures)}")
                shutil.rmtree(out)
    report: dict[str, Any] = {
        "benchmark": "fixed_costs",
        "source": str(source),
        "machine": {
            "cores": os.cpu_count(),
            "load_before": load_before,
            "load_after": os.getloadavg(),
        },
        "runs_per_sweep": len(chosen) * args.num_runs,
        "concurrent": CONCURRENT,
        "repeats": args.repeats,
        "fresh_imports_s": _median(imports),
        "are_benchmark_help_s": _median([{"s": s} for s in helps]) if helps else None,
        "bench_run": {name: _median(samples) for name, samples in runs.items()},
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
