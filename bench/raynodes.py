"""What a node's session workers carry against one host process per node, on a Ray cluster.

    PYTHONPATH=. python bench/raynodes.py [--nodes 1] [--sessions 32] [--calls 200] [--repeats 2]

Prints one JSON document. A real Ray cluster on this machine (`ray.cluster_utils.Cluster`:
`--nodes` nodes, the cluster tests' settings), journals in a shared directory, and side by side
in the same run, alternated over `--repeats`, a fresh router (`areasync.cluster.Router`) for
each of:

- `one_process_per_node` (`serve --ray --workers 0`): every session of a node in its host
  actor's process, as every node ran before it had workers;
- `workers_per_node` (`serve --ray`, the default): a session worker per CPU of the node behind
  the node's host (`cluster/servers.py`).

Each creates `--sessions` sessions through the router (placed over the nodes), then drives
them with bench/scaling.py's load process: every agent its own connection, opened at its
session's node (the router's 307 is a one-off per connection and is left out), one call in
flight each (`SystemApp__get_current_time`), `--calls` calls per agent after a warm-up, frames
written by hand and replies never decoded, so the load costs the server's cores as little as a
client can. `calls_per_s` is the wall rate; `cpu_us_per_call` the CPU (user + system,
/proc/PID/stat) of the host processes, the session workers and their fork servers, and of the
load process, per call. Ray's own processes (raylet, GCS) are idle during the calls and are
not counted.

On one machine, the nodes share its cores: with one node (the default), the node's workers
have every core of the machine, and its single host process one. With two nodes, two host
processes already use two cores, and the workers add processes beyond the cores.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import scaling
from bench.cluster import local_cluster
from bench.common import log
from bench.front import TOKEN

SCENARIO = "scenario_tutorial"
CORES = len(os.sched_getaffinity(0))
CLOCK_TICK = os.sysconf("SC_CLK_TCK")
CONFIGS = {"one_process_per_node": 0, "workers_per_node": None}


# -- the measuring process ----------------------------------------------------------------------


def _cpu(pid: int) -> float:
    """CPU seconds (user + system, every thread) of process `pid` so far; 0 once it ended."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICK


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


async def _processes(router: Any) -> dict[str, int]:
    """The server's processes: each node's host, and its session workers and fork server."""
    found: dict[str, int] = {}
    for n, link in enumerate(router.hosts.values()):
        found[f"host_{n}"] = await router.call(link.actor.process_id.remote())
        pids = sorted(
            {p for p in (await router.call(link.actor.worker_pids.remote())).values() if p}
        )
        for k, pid in enumerate(pids):
            found[f"host_{n}_worker_{k}"] = pid
        if pids:
            found[f"host_{n}_fork_server"] = _parent(pids[0])
    return found


async def measure(workers: int | None, state: Path, sessions: int, calls: int) -> dict[str, Any]:
    """One configuration: a fresh router and hosts, the sessions, the calls, the CPU."""
    import ray

    from areasync.cluster import Router
    from areasync.protocol.frames import Mode
    from areasync.service import ServiceConfig

    config = ServiceConfig(
        port=0, admin_token=TOKEN, state_dir=state, trace_dir=None, mode=Mode.MANUAL
    )
    router = Router(config, workers=workers, check_interval=1.0)
    await asyncio.wait_for(router.start(), 300)
    try:
        created = [
            await router.create_session(scenario=SCENARIO, mode="manual") for _ in range(sessions)
        ]
        targets = []
        for session in created:
            base = urlsplit(router.hosts[str(session.node)].info.ws_base)
            targets.append((base.hostname, base.port, session.session_id))
        processes = await _processes(router)
        spec = {"targets": targets, "calls": calls}
        client = await asyncio.to_thread(
            functools.partial(
                subprocess.Popen,
                [sys.executable, scaling.__file__, "load", json.dumps(spec)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
        )
        assert client.stdin is not None and client.stdout is not None
        try:
            ready = await asyncio.to_thread(client.stdout.readline)
            if ready.strip() != "ready":
                raise RuntimeError("the load process failed before its calls")
            processes["load"] = client.pid
            before = {name: _cpu(pid) for name, pid in processes.items()}
            client.stdin.write("go\n")
            client.stdin.flush()
            result = json.loads(await asyncio.to_thread(client.stdout.readline))
            after = {name: _cpu(pid) for name, pid in processes.items()}
        finally:
            client.stdin.close()
            client.wait(60)
        total = calls * len(targets)
        cpu_us = {n: round((after[n] - before[n]) / total * 1e6, 1) for n in processes}
        server_us = round(sum(v for n, v in cpu_us.items() if n != "load"), 1)
        return {
            "nodes": len(router.hosts),
            "session_processes_per_node": [link.info.workers for link in router.hosts.values()],
            "calls": total,
            "calls_per_s": round(total / result["elapsed_s"]),
            "cpu_us_per_call": {"server": server_us, **cpu_us},
        }
    finally:
        await asyncio.wait_for(router.stop(), 120)
        for link in router.hosts.values():
            ray.kill(link.actor)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1)
    parser.add_argument("--sessions", type=int, default=32)
    parser.add_argument("--calls", type=int, default=200, help="calls per agent")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    load_before = [round(x, 2) for x in os.getloadavg()]
    started = time.perf_counter()
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in CONFIGS}
    with (
        local_cluster(args.nodes),
        tempfile.TemporaryDirectory(prefix="areasync-bench-raynodes-") as tmp,
    ):
        for repeat in range(args.repeats):
            for name, workers in CONFIGS.items():
                log(f"{name}, repeat {repeat + 1} ...")
                state = Path(tmp) / f"{name}-{repeat}"
                runs[name].append(asyncio.run(measure(workers, state, args.sessions, args.calls)))
    medians = {
        name: statistics.median(run["calls_per_s"] for run in found) for name, found in runs.items()
    }
    cpu = {
        name: statistics.median(run["cpu_us_per_call"]["server"] for run in found)
        for name, found in runs.items()
    }
    report = {
        "benchmark": "raynodes",
        "nodes": args.nodes,
        "sessions": args.sessions,
        "calls_per_agent": args.calls,
        "repeats": args.repeats,
        "machine_cores": CORES,
        "load_average_before": load_before,
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "wall_s": round(time.perf_counter() - started, 1),
        "median_calls_per_s": medians,
        "median_server_cpu_us_per_call": cpu,
        "workers_over_one_process": round(
            medians["workers_per_node"] / medians["one_process_per_node"], 2
        ),
        "runs": runs,
    }
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
