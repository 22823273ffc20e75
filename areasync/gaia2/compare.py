"""Run `are-benchmark run` and `areasync bench run` on one dataset and compare what they wrote.

Used by the parity tests and by `bench/gaia2.py`. Verdicts are compared per (scenario id, run
number), in no particular order (ARE's loader yields scenarios in completion order): status,
score, exception and the judge's rationale, with the random ids ARE gives agent events
(`...-<uuid4>`) masked; trace paths, timestamps and durations are left out of the comparison.

`start_are` runs ARE's CLI in a subprocess without waiting, so a test can run areasync's side
(or another ARE run) meanwhile; its output goes to files, not pipes, so a long run can never
block on a full pipe.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from areasync.gaia2.dataset import CONFIG, SPLIT
from areasync.gaia2.stub_llm import AGENT_MODEL, JUDGE_MODEL

# benchmark_stats.json keys that measure time, not results.
TIMING_KEYS = frozenset({"timestamp", "job_duration", "avg_run_duration", "avg_run_duration_std"})
# ARE names an agent's events `AGENT-App.function-<uuid4>`: a fresh id each run.
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
# Options for parity runs: ARE's thread executor (its default, `process`, starts a process per
# worker, each importing ARE again), with room to run every scenario at once, so ARE's real-time
# waits overlap. areasync accepts both and runs everything in one process anyway.
CONCURRENT = ("--executor_type", "thread", "--max_concurrent_scenarios", "32")


def bench_args(
    dataset: str | Path,
    output_dir: str | Path,
    endpoint: str,
    *,
    oracle: bool = False,
    num_runs: int = 1,
    config: str = CONFIG,
    extra: Sequence[str] = (),
) -> list[str]:
    """The `run` options both commands get, against the stub LLM at `endpoint`."""
    args = [
        "-d",
        str(dataset),
        "--config",
        config,
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


@dataclass
class AreRun:
    """An `are-benchmark run` under way in a subprocess (see `start_are`)."""

    process: subprocess.Popen[bytes]
    stderr: IO[bytes]
    started: float

    def wait(self, timeout: float = 300.0) -> float:
        """Wait for it to end; return its wall time in seconds, or raise with its stderr."""
        try:
            code = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise RuntimeError(f"are-benchmark run took over {timeout} s: killed") from None
        finally:
            self.stderr.seek(0)
            tail = self.stderr.read()[-4000:].decode(errors="replace")
            self.stderr.close()
        elapsed = time.perf_counter() - self.started
        if code != 0:
            raise RuntimeError(f"are-benchmark run failed ({code}):\n{tail}")
        return elapsed


def start_are(args: Sequence[str]) -> AreRun:
    """Start ARE's `are-benchmark run ARGS` in a subprocess; `.wait()` for it."""
    code = "import sys; from are.simulation.benchmark import main; sys.exit(main())"
    # Closed by `AreRun.wait`: the file outlives this call.
    stderr = tempfile.TemporaryFile()  # noqa: SIM115
    process = subprocess.Popen(
        [sys.executable, "-c", code, "run", *args],
        env=_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=stderr,
    )
    return AreRun(process, stderr, time.perf_counter())


def run_are(args: Sequence[str], timeout: float = 300.0) -> float:
    """Run ARE's `are-benchmark run ARGS` in a subprocess; return its wall time in seconds."""
    return start_are(args).wait(timeout)


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
            metadata: dict[str, Any] = {
                k: UUID.sub("<uuid>", v) if isinstance(v, str) else v
                for k, v in row["metadata"].items()
            }
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


def run_durations(output_dir: str | Path) -> dict[tuple[str, int | None], float]:
    """Each run's simulated seconds, start to end (`run_duration` of ARE's lite trace).

    ARE's exporter writes the same trace twice, `hf/NAME.json` (`trace_id`) and
    `lite/NAME.json`; the lite one records how far the run's clock went.
    """
    table: dict[tuple[str, int | None], float] = {}
    with open(Path(output_dir) / "output.jsonl", encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            row = json.loads(line)
            hf = Path(row["trace_id"])
            lite = hf.parent.parent / "lite" / hf.name
            with open(lite, encoding="utf-8") as trace_file:
                duration = float(json.load(trace_file)["run_duration"])
            table[(str(row["task_id"]), row["metadata"].get("run_number"))] = duration
    return table


def durations(output_dir: str | Path) -> dict[tuple[str, int | None], float]:
    """Each run's scenario duration as ARE set it (the trace's `definition.duration`)."""
    table: dict[tuple[str, int | None], float] = {}
    with open(Path(output_dir) / "output.jsonl", encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            row = json.loads(line)
            with open(row["trace_id"], encoding="utf-8") as trace_file:
                definition = json.load(trace_file)["metadata"]["definition"]
            table[(str(row["task_id"]), row["metadata"].get("run_number"))] = float(
                definition["duration"]
            )
    return table
