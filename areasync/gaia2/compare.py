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
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from areasync.gaia2.dataset import CONFIG, SPLIT
from areasync.gaia2.stub_llm import AGENT_MODEL, JUDGE_MODEL

# benchmark_stats.json keys that measure time, not results.
TIMING_KEYS = frozenset({"timestamp", "job_duration", "avg_run_duration", "avg_run_duration_std"})
# ARE names an agent's events `AGENT-App.function-<uuid4>`: a fresh id each run.
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
# uuid4().hex ids: ARE's agent ids, and the ids its apps draw from a generator seeded through
# Python's salted `hash` of strings, which differs between any two processes (PYTHONHASHSEED).
HEX_IDS = re.compile(r"(?<![0-9a-f])[0-9a-f]{32}(?![0-9a-f])")
# Written in the order the runs finished, which concurrency decides in one process too.
IN_COMPLETION_ORDER = frozenset({"output.jsonl", "results.jsonl"})
TIMINGS = re.compile(
    r'"(date|duration|timestamp|avg_run_duration|avg_run_duration_std|job_duration)":'
    r" ?(\"[^\"]*\"|[0-9.e+-]+)"
)
# Options for parity runs: ARE's thread executor (its default, `process`, starts a process per
# worker, each importing ARE again), with room to run every scenario at once, so ARE's real-time
# waits overlap. areasync accepts both and runs everything in one process anyway.
CONCURRENT = ("--executor_type", "thread", "--max_concurrent_scenarios", "32")


def model_args(endpoint: str) -> list[str]:
    """The agent's and the judge's models: the stub LLM at `endpoint`, quiet logs."""
    return [
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
        "--log-level",
        "WARNING",
    ]


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
        *model_args(endpoint),
        "--num_runs",
        str(num_runs),
        "--output_dir",
        str(output_dir),
    ]
    if oracle:
        args.append("--oracle")
    else:
        args += ["--agent", "default"]
    return [*args, *extra]


def _env() -> dict[str, str]:
    # litellm insists on a key (an empty one fails too), which the stub ignores.
    return {**os.environ, "OPENAI_API_KEY": os.environ.get("OPENAI_API_KEY") or "stub"}


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

        os.environ["OPENAI_API_KEY"] = _env()["OPENAI_API_KEY"]
        status = main(list(args))
        if status != 0:
            raise RuntimeError(f"areasync bench run exited {status}")
    return time.perf_counter() - start


Key = tuple[str, int | None]  # (scenario id, run number)


def _rows(output_dir: str | Path) -> Iterator[tuple[Key, dict[str, Any]]]:
    """`output.jsonl`'s rows, each with its (scenario id, run number)."""
    with open(Path(output_dir) / "output.jsonl", encoding="utf-8") as f:
        for line in f:
            if line.strip():
                row = json.loads(line)
                yield (str(row["task_id"]), row["metadata"].get("run_number")), row


def _trace(path: str | Path) -> dict[str, Any]:
    with open(path, encoding="utf-8") as f:
        trace: dict[str, Any] = json.load(f)
    return trace


def verdicts(output_dir: str | Path) -> dict[Key, dict[str, Any]]:
    """`output.jsonl` per (scenario id, run number): score and metadata, trace path aside."""
    return {
        key: {
            "score": row["score"],
            **{
                k: UUID.sub("<uuid>", v) if isinstance(v, str) else v
                for k, v in row["metadata"].items()
            },
        }
        for key, row in _rows(output_dir)
    }


def _without_timing(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_timing(v) for k, v in value.items() if k not in TIMING_KEYS}
    if isinstance(value, list):
        return [_without_timing(v) for v in value]
    return value


def stats(output_dir: str | Path) -> dict[str, Any]:
    """`benchmark_stats.json` without its timestamp and durations."""
    result: dict[str, Any] = _without_timing(_trace(Path(output_dir) / "benchmark_stats.json"))
    return result


_NO_ACTION = {"app": None, "function": None}


def timeline(output_dir: str | Path) -> dict[Key, list[tuple[str, str, float]]]:
    """Each run's completed events from its trace: (event type, `App.function`, seconds in).

    Read from the trace ARE's exporter wrote (`output.jsonl`'s `trace_id`), in log order;
    condition checks are left out (ARE's turn triggers, not what the scenario did).
    """
    table: dict[Key, list[tuple[str, str, float]]] = {}
    for key, row in _rows(output_dir):
        trace = _trace(row["trace_id"])
        start = float(trace["metadata"]["definition"]["start_time"])
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


def run_durations(output_dir: str | Path) -> dict[Key, float]:
    """Each run's simulated seconds, start to end (`run_duration` of ARE's lite trace).

    ARE's exporter writes the same trace twice, `hf/NAME.json` (`trace_id`) and
    `lite/NAME.json`; the lite one records how far the run's clock went.
    """
    table: dict[Key, float] = {}
    for key, row in _rows(output_dir):
        hf = Path(row["trace_id"])
        table[key] = float(_trace(hf.parent.parent / "lite" / hf.name)["run_duration"])
    return table


def durations(output_dir: str | Path) -> dict[Key, float]:
    """Each run's scenario duration as ARE set it (the trace's `definition.duration`)."""
    return {
        key: float(_trace(row["trace_id"])["metadata"]["definition"]["duration"])
        for key, row in _rows(output_dir)
    }


def comparable(output_dir: str | Path) -> dict[str, str]:
    """Every file of an output dir, by relative path, with what differs between two runs of
    one evaluation, even in two processes of one machine, masked: ARE's random ids (uuid4:
    action, event and agent ids; and the ids its apps draw, seeded through Python's
    per-process salted `hash`), the wall clock (the trace's annotation `date`, `timestamp`s,
    every `duration`: `TIMING_KEYS` and the records' `duration`; the HTML report's lines that
    show seconds) and the order of the lines of `output.jsonl` and `results.jsonl` (the order
    the runs finished in). Paths are not masked: run into the same `--output_dir` path (ARE
    hashes it into its trace file names), the traces' file names are equal too."""
    out = Path(output_dir)
    files = {}
    for path in sorted(p for p in out.rglob("*") if p.is_file()):
        text = path.read_text(encoding="utf-8")
        text = UUID.sub("<uuid>", text)
        text = HEX_IDS.sub("<hex-id>", text)
        text = TIMINGS.sub(r'"\1": <t>', text)
        if path.suffix == ".html":
            text = "\n".join(
                line for line in text.splitlines() if not re.search(r"\d+\.\d+ ?s", line)
            )
        if path.name in IN_COMPLETION_ORDER:
            text = "\n".join(sorted(text.splitlines()))
        files[path.relative_to(out).as_posix()] = text
    return files
