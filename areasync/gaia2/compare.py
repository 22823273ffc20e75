"""Run `are-benchmark run` and `areasync bench run` on one dataset and compare what they wrote.

Used by the parity tests and by `bench/gaia2.py`. Verdicts are compared per (scenario id, run
number), in no particular order (ARE's loader yields scenarios in completion order); ids,
paths, timestamps and durations are left out of the comparison.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from areasync.gaia2.dataset import CONFIG, SPLIT
from areasync.gaia2.stub_llm import AGENT_MODEL, JUDGE_MODEL

# benchmark_stats.json keys that measure time, not results.
TIMING_KEYS = frozenset({"timestamp", "job_duration", "avg_run_duration", "avg_run_duration_std"})


def bench_args(
    dataset: str | Path,
    output_dir: str | Path,
    endpoint: str,
    *,
    oracle: bool = False,
    num_runs: int = 1,
    extra: Sequence[str] = (),
) -> list[str]:
    """The `run` options both commands get, against the stub LLM at `endpoint`."""
    args = [
        "-d",
        str(dataset),
        "--config",
        CONFIG,
        "--split",
        SPLIT,
        "--provider",
        "local",
        "--model",
        f"openai/{AGENT_MODEL}",
        "--endpoint",
        endpoint,
        "--judge_model",
        f"openai/{JUDGE_MODEL}",
        "--judge_endpoint",
        endpoint,
        "--num_runs",
        str(num_runs),
        "--output_dir",
        str(output_dir),
        "--log-level",
        "WARNING",
    ]
    if oracle:
        args.append("--oracle")
    else:
        args += ["--agent", "default"]
    return [*args, *extra]


def _env() -> dict[str, str]:
    # litellm insists on a key, which the stub ignores.
    return {**os.environ, "OPENAI_API_KEY": os.environ.get("OPENAI_API_KEY", "stub")}


def run_are(args: Sequence[str], timeout: float = 300.0) -> float:
    """Run ARE's `are-benchmark run ARGS` in a subprocess; return its wall time in seconds."""
    code = "import sys; from are.simulation.benchmark import main; sys.exit(main())"
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", code, "run", *args],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"are-benchmark run failed ({done.returncode}):\n{done.stderr[-4000:]}")
    return elapsed


def run_areasync(
    args: Sequence[str], *, subprocess_: bool = False, timeout: float = 300.0
) -> float:
    """Run `areasync bench run ARGS` (in this process, or a subprocess); return its wall time."""
    start = time.perf_counter()
    if subprocess_:
        done = subprocess.run(
            [sys.executable, "-m", "areasync.cli", "bench", "run", *args],
            env=_env(),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if done.returncode != 0:
            raise RuntimeError(f"areasync bench run failed:\n{done.stderr[-4000:]}")
    else:
        from areasync.gaia2.cli import main

        os.environ.setdefault("OPENAI_API_KEY", "stub")
        status = main(list(args))
        if status != 0:
            raise RuntimeError(f"areasync bench run exited {status}")
    return time.perf_counter() - start


def verdicts(output_dir: str | Path) -> dict[tuple[str, int | None], dict[str, Any]]:
    """`output.jsonl` per (scenario id, run number): score and metadata, trace path aside."""
    table: dict[tuple[str, int | None], dict[str, Any]] = {}
    with open(Path(output_dir) / "output.jsonl", encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            row = json.loads(line)
            metadata = dict(row["metadata"])
            key = (str(row["task_id"]), metadata.get("run_number"))
            table[key] = {"score": row["score"], **metadata}
    return table


def _without_timing(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_timing(v) for k, v in value.items() if k not in TIMING_KEYS}
    if isinstance(value, list):
        return [_without_timing(v) for v in value]
    return value


def stats(output_dir: str | Path) -> dict[str, Any]:
    """`benchmark_stats.json` without its timestamp and durations."""
    with open(Path(output_dir) / "benchmark_stats.json", encoding="utf-8") as f:
        result: dict[str, Any] = _without_timing(json.load(f))
    return result


_NO_ACTION = {"app": None, "function": None}


def timeline(output_dir: str | Path) -> dict[tuple[str, int | None], list[tuple[str, str, float]]]:
    """Each run's completed events from its trace: (event type, `App.function`, seconds in).

    Read from the trace ARE's exporter wrote (`output.jsonl`'s `trace_id`), in log order;
    condition checks are left out (ARE's turn triggers, not what the scenario did).
    """
    table: dict[tuple[str, int | None], list[tuple[str, str, float]]] = {}
    with open(Path(output_dir) / "output.jsonl", encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            row = json.loads(line)
            with open(row["trace_id"], encoding="utf-8") as trace_file:
                trace = json.load(trace_file)
            start = float(trace["metadata"]["definition"]["start_time"])
            key = (str(row["task_id"]), row["metadata"].get("run_number"))
            table[key] = [
                (
                    str(event["event_type"]),
                    "{app}.{function}".format(**(event.get("action") or _NO_ACTION)),
                    float(event["event_time"]) - start,
                )
                for event in trace["completed_events"]
                if event["event_type"] != "CONDITION"
            ]
    return table
