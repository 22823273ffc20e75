"""Small helpers every benchmark script shares: progress lines, percentiles, resident memory."""

from __future__ import annotations

import asyncio
import json
import statistics
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
