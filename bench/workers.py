"""`areasync bench run --workers N`: wall and CPU time at 0, 1 and 2 workers; a worker's start
and memory.

    PYTHONPATH=. python bench/workers.py [--num-runs 6] [--repeats 3] [--latency 0]

Prints one JSON document:

* `sweep`: `areasync bench run` of the quick Execution scenarios of `areasync/gaia2/dataset.py`
  (six: one- and three-turn, passed and failed; `--num-runs` each, all under way at once)
  against the stub LLM (`--latency` seconds per reply; 0: the runs are CPU-bound, as a sweep's
  per-run work is), with `--workers 0` (every run in the driver's process), 1 and 2. Each
  configuration runs in a fresh process (this script with `--child`), ARE's CLI and LiteLLM
  imported and, with workers, the fork server booted before its clock starts (the boot is
  measured once, in `start`); the configurations are interleaved over `--repeats`. Per
  configuration: the median wall time of the sweep, its CPU time (the driver's; the workers',
  which the fork server reaps, so they are its children's time; and, apart, the stub model's,
  which this process serves meanwhile), and the ratios of the wall times.
* `start`: in a fresh process, the fork server's boot (its preload imported), then a pool of
  two bench workers: each worker's start (from asking for it to its `Ready`: a fork and the
  handlers' set-up), the restart of one killed with SIGKILL, and each worker's memory when
  ready: RSS, and PSS and USS (what a worker adds: it shares the fork server's pages).
  Beside it, a fresh interpreter importing the same modules: what each worker would cost to
  start without the fork server.
* `machine`: cores, and the load average before and after (the machine may be shared).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import child_json

WORKERS = (0, 1, 2)
CLOCK_TICK = os.sysconf("SC_CLK_TCK")


def _proc_cpu(pid: int) -> tuple[float, float]:
    """(own, reaped children's) CPU seconds of process `pid` (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    utime, stime, cutime, cstime = (int(field) for field in fields[11:15])
    return (utime + stime) / CLOCK_TICK, (cutime + cstime) / CLOCK_TICK


def _self_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _memory(pid: int) -> dict[str, float]:
    """RSS, PSS and USS of `pid` in MB (smaps_rollup)."""
    kb: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        name, value, *_ = line.split()
        kb[name.rstrip(":")] = int(value)
    uss = kb.get("Private_Clean", 0) + kb.get("Private_Dirty", 0)
    return {
        "rss_mb": round(kb.get("Rss", 0) / 1024, 1),
        "pss_mb": round(kb.get("Pss", 0) / 1024, 1),
        "uss_mb": round(uss / 1024, 1),
    }


def _boot_fork_server() -> tuple[float, int]:
    """Start the fork server with the bench preload and wait until it forks: (seconds, pid)."""
    import multiprocessing
    from multiprocessing import forkserver

    from areasync.gaia2.local import PRELOAD

    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(list(PRELOAD))
    began = time.perf_counter()
    probe = context.Process(target=os.getpid)
    probe.start()  # returns once the fork server, its preload imported, has forked
    probe.join()
    pid = forkserver._forkserver._forkserver_pid  # type: ignore[attr-defined]
    return time.perf_counter() - began, int(pid)


def child(workers: int, bench_args: list[str]) -> dict[str, Any]:
    """One configuration's sweep, in this (fresh) process."""
    # Imported before the clock: ARE's CLI, and LiteLLM, which the driver imports when its
    # runs stay in it (the fork server imports it before the clock too).
    import litellm
    from are.simulation.benchmark.cli import main as are_main

    from areasync.gaia2.cli import main

    del are_main, litellm
    fork_server = _boot_fork_server()[1] if workers else None
    before_server = _proc_cpu(fork_server) if fork_server else (0.0, 0.0)
    before_self = _self_cpu()
    began = time.perf_counter()
    status = main([*bench_args, "--workers", str(workers)])
    wall = time.perf_counter() - began
    driver_cpu = _self_cpu() - before_self
    after_server = _proc_cpu(fork_server) if fork_server else (0.0, 0.0)
    return {
        "status": status,
        "wall_s": wall,
        "driver_cpu_s": driver_cpu,
        "workers_cpu_s": after_server[1] - before_server[1],
        "fork_server_cpu_s": after_server[0] - before_server[0],
    }


def _run_child(workers: int, bench_args: list[str]) -> dict[str, Any]:
    command = [sys.executable, __file__, "--child", str(workers), "--", *bench_args]
    env = {**os.environ, "OPENAI_API_KEY": os.environ.get("OPENAI_API_KEY") or "stub"}
    result: dict[str, Any] = child_json(command, f"--workers {workers}", env=env, timeout=3600)
    if result["status"] != 0:
        raise RuntimeError(f"--workers {workers}: bench run exited {result['status']}")
    return result


def sweep(num_runs: int, repeats: int, latency: float) -> dict[str, Any]:
    from areasync.gaia2 import compare
    from areasync.gaia2.dataset import CONFIG, agent_scripts, judge_rules, select, write_dataset
    from areasync.gaia2.stub_llm import Script, StubLLM

    chosen = select(long_wait=False, config=CONFIG)
    runs = len(chosen) * num_runs
    samples: dict[int, list[dict[str, Any]]] = {workers: [] for workers in WORKERS}
    script = Script(agent=agent_scripts(chosen), judge=judge_rules(chosen))
    with tempfile.TemporaryDirectory() as tmp, StubLLM(script, latency=latency) as stub:
        dataset = write_dataset(Path(tmp) / "dataset", only=[s.scenario_id for s in chosen])
        for repeat in range(repeats):
            for workers in WORKERS:
                out = Path(tmp) / f"out-{workers}-{repeat}"
                extra = ["--max_concurrent_scenarios", str(runs), "--no-report"]
                args = compare.bench_args(
                    dataset, out, stub.endpoint, num_runs=num_runs, extra=extra
                )
                stub_before = _self_cpu()  # this process only serves the stub meanwhile
                result = _run_child(workers, args)
                result["stub_cpu_s"] = _self_cpu() - stub_before
                result["runs"] = len(compare.verdicts(out))
                samples[workers].append(result)
                print(f"--workers {workers}: {result}", file=sys.stderr, flush=True)
    report: dict[str, Any] = {
        "scenarios": [s.scenario_id for s in chosen],
        "runs": runs,
        "latency_s": latency,
        "repeats": repeats,
    }
    for workers, got in samples.items():
        assert all(result["runs"] == runs for result in got), got
        cpu = [r["driver_cpu_s"] + r["workers_cpu_s"] + r["fork_server_cpu_s"] for r in got]
        report[f"workers_{workers}"] = {
            "wall_s": round(statistics.median(r["wall_s"] for r in got), 2),
            "wall_s_all": [round(r["wall_s"], 2) for r in got],
            "cpu_s": round(statistics.median(cpu), 2),
            "driver_cpu_s": round(statistics.median(r["driver_cpu_s"] for r in got), 2),
            "workers_cpu_s": round(statistics.median(r["workers_cpu_s"] for r in got), 2),
            "stub_cpu_s": round(statistics.median(r["stub_cpu_s"] for r in got), 2),
        }
    walls = {workers: report[f"workers_{workers}"]["wall_s"] for workers in WORKERS}
    report["ratio_1_to_2_workers"] = round(walls[1] / walls[2], 2)
    report["ratio_0_to_2_workers"] = round(walls[0] / walls[2], 2)
    return report


def start() -> dict[str, Any]:
    """The `start` part, in this (fresh) process."""
    import asyncio

    from areasync.gaia2 import remote
    from areasync.gaia2.local import PRELOAD
    from areasync.workers.pool import WorkerPool

    boot_s, server = _boot_fork_server()

    async def pool_figures() -> dict[str, Any]:
        pool = WorkerPool(2, remote.serving, preload=PRELOAD)
        pool.start()
        await pool.ready()
        memory = {worker.name: _memory(worker.pid or 0) for worker in pool.workers}
        first = pool.workers[0]
        killed = first.pid or 0
        os.kill(killed, signal.SIGKILL)
        while first.pid in (None, killed):  # noqa: ASYNC110  # a plain attribute: polled
            await asyncio.sleep(0.005)
        figures = {
            "worker_start_s": [round(w.starts[0], 3) for w in pool.workers],
            "worker_restart_after_sigkill_s": round(first.starts[1], 3),
            "worker_memory_when_ready": memory,
            "fork_server_memory": _memory(server),
        }
        await pool.close()
        return figures

    figures = asyncio.run(pool_figures())
    return {"fork_server_boot_s": round(boot_s, 2), **figures}


def fresh_import_s() -> float:
    """A fresh interpreter importing the preload: what a worker costs without the fork server."""
    from areasync.gaia2.local import PRELOAD

    code = "import " + ", ".join(PRELOAD)
    began = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, env=os.environ)
    return round(time.perf_counter() - began, 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-runs", type=int, default=6, help="runs of each scenario")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per stub reply")
    parser.add_argument("--parts", default="start,sweep")
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--start-child", action="store_true", help=argparse.SUPPRESS)
    args, rest = parser.parse_known_args()
    if args.child is not None:
        print(json.dumps(child(args.child, [a for a in rest if a != "--"])))
        return
    if args.start_child:
        print(json.dumps(start()))
        return
    report: dict[str, Any] = {
        "machine": {"cores": os.cpu_count(), "load_before": os.getloadavg()},
    }
    parts = set(args.parts.split(","))
    if "start" in parts:
        command = [sys.executable, __file__, "--start-child"]
        report["start"] = child_json(command, "the start part")
        report["start"]["fresh_interpreter_import_s"] = fresh_import_s()
    if "sweep" in parts:
        report["sweep"] = sweep(args.num_runs, args.repeats, args.latency)
    report["machine"]["load_after"] = os.getloadavg()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
