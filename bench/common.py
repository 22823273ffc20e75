"""Small helpers every benchmark script shares: progress lines, percentiles, resident memory."""

from __future__ import annotations

import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def log(message: str) -> None:
    """A progress line on stderr (stdout is the benchmark's JSON)."""
    print(message, file=sys.stderr, flush=True)


def best_of(run: Callable[..., object], repeat: int) -> float:
    """The fastest of `repeat` calls of `run`, in wall seconds."""
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - started)
    return best


def percentile(values: list[float], p: float) -> float:
    """The nearest-rank `p`th percentile of `values` (NaN when empty)."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * (len(ordered) - 1))))]


def rss_bytes() -> int:
    """Resident set size of this process (Linux /proc)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def round_trips(values: list[float]) -> dict[str, float]:
    """Round trips in seconds as n, p50, p99 and mean in microseconds."""
    us = [v * 1e6 for v in values]
    return {
        "n": len(us),
        "p50_us": round(percentile(us, 50), 1),
        "p99_us": round(percentile(us, 99), 1),
        "mean_us": round(statistics.fmean(us), 1) if us else float("nan"),
    }


async def client_process(script: str, spec: dict[str, Any]) -> Any:
    """Run `python script client SPEC` (a client spec, JSON) in another process; its JSON."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, script, "client", json.dumps(spec), stdout=asyncio.subprocess.PIPE
    )
    out, _ = await proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"client {spec['kind']} failed ({proc.returncode})")
    return json.loads(out)


def child_json(
    command: list[str],
    what: str,
    *,
    env: dict[str, str] | None = None,
    timeout: float | None = None,
) -> Any:
    """Run a benchmark's child process `command` (`what` it measures, for the error) and read
    the JSON of the last line it prints; its stderr's tail in the error when it fails."""
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"{what} failed ({done.returncode}):\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main_client(argv: list[str], run_spec: Callable[[dict[str, Any]], Any]) -> bool:
    """`script client SPEC`: run the client spec (JSON) with `run_spec` (a coroutine function)
    in this process and print its JSON result. False if `argv` asks for something else."""
    if not argv or argv[0] != "client":
        return False
    print(json.dumps(asyncio.run(run_spec(json.loads(argv[1])))))
    return True


def load_average() -> list[float]:
    """The machine's load averages now (1, 5, 15 min): other work on the machine."""
    return [round(x, 2) for x in os.getloadavg()]


def print_report(
    benchmark: str, load: list[float], results: dict[str, Any], started: float, **versions: str
) -> int:
    """Print a benchmark's JSON report: its name, the machine (Python, platform, cores, the
    packages named in `versions`, the load average at the start: other work on the machine),
    its results and its wall time since `started` (`time.perf_counter`). Returns 0."""
    report = {
        "benchmark": benchmark,
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            **versions,
            "load_average_at_start": load,
        },
        **results,
        "total_wall_s": round(time.perf_counter() - started, 1),
    }
    print(json.dumps(report, indent=2))
    return 0
