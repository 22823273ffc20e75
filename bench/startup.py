"""How long the `areasync` command takes to start: `--help`, and `serve` to its banner.

    python bench/startup.py [--runs N] [--source DIR]

Prints JSON: the best (and median) wall seconds of N runs of `python -m areasync.cli --help`,
and of `python -m areasync.cli serve --port 0` (the default scenario) until its banner is
printed, as it runs by default (`serve_banner`: a front and one session worker per CPU, the fork
server's preload and every worker's service up before the banner; `workers` says how many the
banner named) and as one process (`serve_banner_workers_0`, `--workers 0`), with the CPU seconds
(user + sys) its processes had spent by then (the front, its fork server and workers, read from
/proc: what a busy machine's wall times hide) and the front's alone (`front_cpu_at_banner`);
then the wall seconds from SIGINT to its exit. `--source DIR` measures another checkout of
areasync (its directory goes first on PYTHONPATH), e.g. a worktree of an older commit, to
compare with (one without `--workers` gets no `serve_banner_workers_0`, and its `serve_banner`
is one process).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

if __package__ in (None, ""):  # run as a script: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import log

ROOT = Path(__file__).resolve().parent.parent
GIVE_UP_S = 120.0


# `python -m` puts the working directory first on sys.path: each run starts in `source`.
def _env(source: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(source), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def time_help(source: Path) -> float:
    command = [sys.executable, "-m", "areasync.cli", "--help"]
    started = time.perf_counter()
    subprocess.run(
        command, cwd=source, env=_env(source), capture_output=True, check=True, timeout=GIVE_UP_S
    )
    return time.perf_counter() - started


def _descendants(pid: int) -> list[int]:
    """`pid` and every process under it (/proc's children lists)."""
    found = [pid]
    for task in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(OSError), open(f"/proc/{pid}/task/{task}/children") as kids:
            for child in kids.read().split():
                found += _descendants(int(child))
    return found


def _cpu_s(pid: int) -> float:
    """User + sys seconds `pid` has spent, from /proc (0 if it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class ServeTimes(NamedTuple):
    banner_s: float  # wall, spawn to the banner's last line
    cpu_s: float  # user + sys of the whole process tree by then
    front_cpu_s: float  # ...of the process `serve` started alone (the front, with workers)
    exit_s: float  # wall, SIGINT to its exit
    workers: int  # the session workers the banner names (0: one process)


def time_serve_banner(source: Path, *extra: str) -> ServeTimes:
    """Spawn `serve` (with `extra` options), time it to the banner's last line and read its
    tree's CPU and the workers it names; then SIGINT it and time its exit."""
    with tempfile.TemporaryDirectory() as traces:
        command = [sys.executable, "-m", "areasync.cli", "serve", "--port", "0", *extra]
        command += ["--token", "bench", "--trace-dir", traces]
        started = time.perf_counter()
        process = subprocess.Popen(
            command,
            cwd=source,
            env=_env(source),
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        try:
            assert process.stdout is not None
            workers = 0
            for line in process.stdout:
                named = re.search(r"sessions in (\d+) worker processes", line)
                if named:
                    workers = int(named[1])
                if "Ctrl-C" in line:  # the banner's last line
                    banner = time.perf_counter() - started
                    cpu = sum(_cpu_s(pid) for pid in _descendants(process.pid))
                    front = _cpu_s(process.pid)
                    stopping = time.perf_counter()
                    process.send_signal(signal.SIGINT)
                    process.wait(timeout=30)
                    exit_s = time.perf_counter() - stopping
                    return ServeTimes(banner, cpu, front, exit_s, workers)
                if time.perf_counter() - started > GIVE_UP_S:
                    break
            raise RuntimeError("areasync serve printed no banner")
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGINT)
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


def summary(samples: list[float]) -> dict[str, float]:
    return {
        "best_s": round(min(samples), 4),
        "median_s": round(statistics.median(samples), 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs of each (best of N)")
    parser.add_argument("--source", type=Path, default=ROOT, help="the areasync checkout")
    args = parser.parse_args()
    source = args.source.resolve()
    log(f"startup: {args.runs} runs of --help and of serve's banner, from {source}")
    help_times = [time_help(source) for _ in range(args.runs)]
    served = [time_serve_banner(source) for _ in range(args.runs)]
    result: dict[str, object] = {
        "benchmark": "startup",
        "source": str(source),
        "runs": args.runs,
        "help": summary(help_times),
        "serve_banner": {**summary([t.banner_s for t in served]), "workers": served[0].workers},
        "serve_cpu_at_banner": summary([t.cpu_s for t in served]),
        "front_cpu_at_banner": summary([t.front_cpu_s for t in served]),
        "serve_exit": summary([t.exit_s for t in served]),
    }
    try:
        one = [time_serve_banner(source, "--workers", "0") for _ in range(args.runs)]
        result["serve_banner_workers_0"] = summary([t.banner_s for t in one])
        result["serve_cpu_at_banner_workers_0"] = summary([t.cpu_s for t in one])
    except RuntimeError as exc:  # a checkout without --workers
        result["serve_banner_workers_0"] = str(exc)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
