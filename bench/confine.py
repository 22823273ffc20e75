"""What the kernel's confinement of bench workers costs: a worker's start, and a bench run.

    PYTHONPATH=. python bench/confine.py [--starts 10] [--num-runs 6] [--repeats 3]

Prints one JSON document:

* `start`: in a fresh process, the fork server booted (its preload imported) before anything
  is timed, then `--starts` pools of two bench workers, confined (`confinement.serving`, the
  spec of a run against a loopback model) and unconfined (`remote.serving`, no spec),
  alternated: each worker's start (from asking for it to its `Ready`: the fork, `confine()`,
  the handlers' set-up), and each worker's address space (VmSize) and RSS when ready: what
  `confinement.MEMORY_BYTES` bounds.
* `call`: `confine()` itself, timed inside `--starts` fresh interpreters (each may confine
  itself once): the median and the spread, in ms.
* `sweep`: `areasync bench run --workers 2` of `bench/workers.py`'s quick scenarios against
  the stub model, confined (as the CLI runs it) and unconfined (`local_runs` given no spec),
  each in a fresh process, alternated over `--repeats`: the median wall time of each, and the
  ratio.
* `machine`: cores, the kernel's support (`probe()`), and the load average before and after.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import child_json
from bench.workers import _boot_fork_server, _self_cpu

MODES = ("confined", "unconfined")


def _vm(pid: int) -> dict[str, float]:
    """VmSize and VmRSS of `pid` in MB."""
    fields = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
    )
    return {
        "vm_size_mb": round(int(fields["VmSize"].split()[0]) / 1024, 1),
        "rss_mb": round(int(fields["VmRSS"].split()[0]) / 1024, 1),
    }


def start(starts: int) -> dict[str, Any]:
    """The `start` part, in this (fresh) process."""
    import msgspec

    from areasync.gaia2 import confinement, remote
    from areasync.gaia2.local import PRELOAD
    from areasync.workers.pool import WorkerPool

    boot_s = _boot_fork_server()[0]
    options = {"endpoint": "http://127.0.0.1:8000/v1", "judge_endpoint": "http://127.0.0.1:8000"}
    spec = confinement.bench_confinement(options, required=True)
    times: dict[str, list[float]] = {mode: [] for mode in MODES}
    memory: dict[str, list[dict[str, float]]] = {mode: [] for mode in MODES}

    async def one(mode: str, tmp: str) -> None:
        confined = mode == "confined"
        pool = WorkerPool(
            2,
            confinement.serving if confined else remote.serving,
            preload=PRELOAD,
            confinement=msgspec.structs.replace(spec, tmp_under=tmp) if confined else None,
        )
        pool.start()
        await pool.ready()
        for worker in pool.workers:
            assert confined == (worker.confined is not None and worker.confined.confined)
            times[mode].append(worker.starts[0])
            memory[mode].append(_vm(worker.pid or 0))
        await pool.close()

    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(starts):
            for mode in MODES:
                asyncio.run(one(mode, tmp))
    out: dict[str, Any] = {"fork_server_boot_s": round(boot_s, 2), "pools": starts}
    for mode in MODES:
        out[mode] = {
            "worker_start_ms_median": round(statistics.median(times[mode]) * 1000, 1),
            "worker_start_ms_all": [round(t * 1000, 1) for t in times[mode]],
            "vm_size_mb_max": max(m["vm_size_mb"] for m in memory[mode]),
            "rss_mb_median": statistics.median(m["rss_mb"] for m in memory[mode]),
        }
    return out


CALL = """
import json, sys, time
import msgspec
from areasync.gaia2 import confinement
from areasync.workers.confine import confine
spec = confinement.bench_confinement({"endpoint": "http://127.0.0.1:8000"}, required=True)
spec = msgspec.structs.replace(spec, tmp_under=sys.argv[1])
began = time.perf_counter()
report = confine(spec)
took = time.perf_counter() - began
assert report.confined, report
print(json.dumps(took))
"""


def call(times: int) -> dict[str, Any]:
    """The `call` part: `confine()` in `times` fresh interpreters."""
    took = []
    for _ in range(times):
        with tempfile.TemporaryDirectory() as tmp:
            command = [sys.executable, "-c", CALL, tmp]
            took.append(child_json(command, "confine() in a fresh interpreter") * 1000)
    return {
        "confine_ms_median": round(statistics.median(took), 2),
        "confine_ms_min": round(min(took), 2),
        "confine_ms_max": round(max(took), 2),
    }


@contextmanager
def _unconfined() -> Any:
    """`local_runs` with no spec: the workers as before confinement."""
    from unittest.mock import patch

    from areasync.gaia2 import local

    original = local.local_runs

    def unconfined(workers: int, budget_s: float | None, confined: Any) -> Any:
        return original(workers, budget_s, None)

    with patch.object(local, "local_runs", unconfined):
        yield


def child(mode: str, bench_args: list[str]) -> dict[str, Any]:
    """One sweep, in this (fresh) process."""
    import litellm
    from are.simulation.benchmark.cli import main as are_main

    from areasync.gaia2.cli import main

    del are_main, litellm
    _boot_fork_server()
    began = time.perf_counter()
    if mode == "confined":
        status = main([*bench_args, "--workers", "2", "--require-confinement"])
    else:
        with _unconfined():
            status = main([*bench_args, "--workers", "2"])
    return {"status": status, "wall_s": time.perf_counter() - began}


def sweep(num_runs: int, repeats: int) -> dict[str, Any]:
    from areasync.gaia2 import compare
    from areasync.gaia2.dataset import CONFIG, agent_scripts, judge_rules, select, write_dataset
    from areasync.gaia2.stub_llm import Script, StubLLM

    chosen = select(long_wait=False, config=CONFIG)
    runs = len(chosen) * num_runs
    walls: dict[str, list[float]] = {mode: [] for mode in MODES}
    script = Script(agent=agent_scripts(chosen), judge=judge_rules(chosen))
    env = {**os.environ, "OPENAI_API_KEY": os.environ.get("OPENAI_API_KEY") or "stub"}
    with tempfile.TemporaryDirectory() as tmp, StubLLM(script) as stub:
        dataset = write_dataset(Path(tmp) / "dataset", only=[s.scenario_id for s in chosen])
        for repeat in range(repeats):
            for mode in MODES:
                out = Path(tmp) / f"out-{mode}-{repeat}"
                extra = ["--max_concurrent_scenarios", str(runs), "--no-report"]
                args = compare.bench_args(
                    dataset, out, stub.endpoint, num_runs=num_runs, extra=extra
                )
                command = [sys.executable, __file__, "--child", mode, "--", *args]
                result = child_json(command, mode, env=env)
                assert result["status"] == 0, result
                assert len(compare.verdicts(out)) == runs
                walls[mode].append(result["wall_s"])
                print(f"{mode}: {result}", file=sys.stderr, flush=True)
    medians = {mode: statistics.median(walls[mode]) for mode in MODES}
    return {
        "runs": runs,
        "repeats": repeats,
        **{
            mode: {
                "wall_s": round(medians[mode], 2),
                "wall_s_all": [round(w, 2) for w in walls[mode]],
            }
            for mode in MODES
        },
        "ratio_confined_to_unconfined": round(medians["confined"] / medians["unconfined"], 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=10, help="pools of two, of each kind")
    parser.add_argument("--num-runs", type=int, default=6, help="runs of each scenario")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--parts", default="start,call,sweep")
    parser.add_argument("--child", choices=MODES, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--start-child", action="store_true", help=argparse.SUPPRESS)
    args, rest = parser.parse_known_args()
    if args.child is not None:
        print(json.dumps(child(args.child, [a for a in rest if a != "--"])))
        return
    if args.start_child:
        print(json.dumps(start(args.starts)))
        return
    from areasync.workers.confine import probe

    report: dict[str, Any] = {
        "machine": {
            "cores": os.cpu_count(),
            "kernel": os.uname().release,
            "support": probe().describe(),
            "load_before": os.getloadavg(),
        },
    }
    cpu_before = _self_cpu()
    parts = set(args.parts.split(","))
    if "start" in parts:
        command = [sys.executable, __file__, "--start-child", "--starts", str(args.starts)]
        report["start"] = child_json(command, "the start part")
    if "call" in parts:
        report["call"] = call(args.starts)
    if "sweep" in parts:
        report["sweep"] = sweep(args.num_runs, args.repeats)
    report["machine"]["load_after"] = os.getloadavg()
    report["machine"]["stub_cpu_s"] = round(_self_cpu() - cpu_before, 2)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
