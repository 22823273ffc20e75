"""A bench host's start at Ray's worker niceness (15) and at its node's own (0).

    python bench/hostpriority.py              # one start at each niceness; prints JSON
    python bench/hostpriority.py --repeats 3

Method. A one-node Ray cluster on this machine (`bench/cluster.py`'s, one CPU), and in
turn a host actor started as `cluster/nodes.py` starts one, with `RAY_worker_niceness` 15
(Ray's default) and 0 (what `start_host` gives it): the seconds until the actor answers (a Ray
worker process importing areasync), until `bench_start` returns, and until its one bench
worker is ready (the fork server importing ARE's benchmark pipeline, then a fork). Run it
beside CPU-bound work in the same login session (the kernel shares the cores between sessions
first, and by niceness only within one: `make test-under-load` holds both cores in the
suite's own session), e.g. `stress-ng --cpu 2 & python bench/hostpriority.py; kill %1`.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import uuid

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from areasync.cluster.nodes import HostActor
from bench.cluster import local_cluster


def start(node: str, niceness: int) -> dict[str, float]:
    """One host started at `niceness`: its start's phases, in seconds."""
    began = time.monotonic()
    host = HostActor.options(
        name=f"areasync-host-bench-priority-{uuid.uuid4().hex[:8]}",
        num_cpus=0,
        max_restarts=0,
        scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=node, soft=False),
        runtime_env={"env_vars": {"RAY_USE_UVLOOP": "0", "RAY_worker_niceness": str(niceness)}},
    ).remote()
    try:
        pid = ray.get(host.process_id.remote())
        answered = time.monotonic()
        ray.get(host.bench_start.remote(1, None, None, True))
        started = time.monotonic()
        while None in ray.get(host.bench_pids.remote()).values():
            time.sleep(0.2)
        ready = time.monotonic()
        return {
            "niceness": os.getpriority(os.PRIO_PROCESS, pid),
            "actor_s": round(answered - began, 1),
            "bench_start_s": round(started - answered, 1),
            "worker_ready_s": round(ready - started, 1),
            "total_s": round(ready - began, 1),
            "load": round(os.getloadavg()[0], 1),
        }
    finally:
        ray.kill(host)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    with local_cluster(1):
        node = ray.get_runtime_context().get_node_id()
        runs = [start(node, niceness) for _ in range(args.repeats) for niceness in (15, 0)]
    print(json.dumps({"starts": runs}, indent=2))


if __name__ == "__main__":
    main()
