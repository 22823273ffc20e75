"""The cluster on Ray: placement rate, the router's cost per call, memory, node-loss recovery.

    python bench/cluster.py               # prints one JSON document; ~1-2 min
    python bench/cluster.py --quick       # smaller counts, for a smoke run

Method. A real two-node Ray cluster on this machine (`ray.cluster_utils.Cluster`: a head and
one worker node, one CPU each, no dashboard, the cluster tests' tightened health checks), the
router in this process (`areasync.cluster.Router`), a host actor on each node, journals in a
shared directory. Side by side in the same run, a one-machine `Service` in this process with
the same state directory settings:

- `create`: sessions created per second, through the router (placement, a Ray call to the
  chosen host, its journal's creation) and on the one-machine service (`create_async`).
- `rtt`: the areasync client's `call_tool` round trip (`SystemApp__get_current_time`,
  msgpack): `first` is connect (handshake, hello, welcome) plus the first call, `later` the
  median of the calls after it; through the router (a 307 on the handshake, then straight to
  the node), dialing the node directly, and on the one-machine service.
- `memory`: each host actor's resident memory before and after the sessions were created, and
  the difference per session.
- `recovery`: the worker node killed (`remove_node(allow_graceful=False)`, SIGKILL of its
  processes): the time until the router has every one of its sessions restored on the head,
  and until an agent connected through the router, which was calling tools, gets its next
  answer (reconnected and resumed with since/epoch).

The client runs in this process, beside the router: its figures include that process's noise.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import log, percentile

TOOL = "SystemApp__get_current_time"
SCENARIO = "scenario_tutorial"
ADMIN = "bench-cluster-admin"
HEALTH_CHECKS: dict[str, Any] = {
    "health_check_initial_delay_ms": 0,
    "health_check_period_ms": 500,
    "health_check_timeout_ms": 500,
    "health_check_failure_threshold": 3,
}


async def _rtt(url: str, calls: int) -> dict[str, float]:
    from areasync.client import connect

    started = time.perf_counter()
    async with connect(url, role="agent", token=ADMIN) as agent:
        await agent.call_tool(TOOL)
        first = time.perf_counter() - started
        later = []
        for _ in range(calls):
            t0 = time.perf_counter()
            await agent.call_tool(TOOL)
            later.append(time.perf_counter() - t0)
    return {
        "first_ms": round(first * 1e3, 2),
        "later_p50_us": round(statistics.median(later) * 1e6, 1),
        "later_p99_us": round(percentile(later, 99) * 1e6, 1),
    }


async def _rounds(urls: dict[str, str], calls: int, rounds: int = 5) -> dict[str, dict[str, float]]:
    """`_rtt` for each URL, `rounds` times in alternating order after one unmeasured warm-up
    connection (the process's first pays imports and caches); the median of each figure."""
    await _rtt(next(iter(urls.values())), 1)
    samples: dict[str, list[dict[str, float]]] = {name: [] for name in urls}
    names = list(urls)
    for round_number in range(rounds):
        for name in names[round_number % 2 :] + names[: round_number % 2]:
            samples[name].append(await _rtt(urls[name], calls // rounds))
    return {
        name: {key: statistics.median(s[key] for s in runs) for key in runs[0]}
        for name, runs in samples.items()
    }


async def _one_machine(state: Path, sessions: int, calls: int) -> dict[str, Any]:
    from areasync.service import Service, ServiceConfig

    config = ServiceConfig(port=0, admin_token=ADMIN, state_dir=state, trace_dir=None)
    async with Service(config, scenarios=[]) as service:
        started = time.perf_counter()
        ids = [
            (await service.registry.create_async(SCENARIO, mode="manual")).id
            for _ in range(sessions)
        ]
        rate = sessions / (time.perf_counter() - started)
        rtt = await _rounds({"one_machine": f"{service.registry.ws_base}/sessions/{ids[0]}"}, calls)
    return {"create_per_s": round(rate, 1), "rtt": rtt["one_machine"]}


async def _cluster(cluster: Any, worker: Any, state: Path, n: int, calls: int) -> dict[str, Any]:
    from areasync.client import connect
    from areasync.cluster import Router
    from areasync.service import ServiceConfig

    config = ServiceConfig(port=0, admin_token=ADMIN, state_dir=state, trace_dir=None)
    router = Router(config, check_interval=0.25)
    await asyncio.wait_for(router.start(), 120)
    try:
        before = {
            node: await router.call(link.actor.load.remote()) for node, link in router.hosts.items()
        }
        started = time.perf_counter()
        created = [await router.create_session(scenario=SCENARIO, mode="manual") for _ in range(n)]
        rate = n / (time.perf_counter() - started)
        after = {
            node: await router.call(link.actor.load.remote()) for node, link in router.hosts.items()
        }
        memory = {
            ("head" if node == cluster.head_node.node_id else "worker"): {
                "sessions": after[node].live,
                "rss_before_mb": round(before[node].rss / 2**20, 1),
                "rss_after_mb": round(after[node].rss / 2**20, 1),
                "per_session_kb": round(
                    (after[node].rss - before[node].rss) / max(1, after[node].live) / 1024, 1
                ),
            }
            for node in after
        }
        on_worker = [c.session_id for c in created if c.node == worker.node_id]
        target = on_worker[0]
        link = router.hosts[worker.node_id]
        urls = {
            "via_router": router.ws_url(target),
            "direct_to_node": f"{link.info.ws_base}/sessions/{target}",
        }
        rtt = await _rounds(urls, calls)

        async with connect(
            router.ws_url(target), role="agent", token=ADMIN, backoff_max=0.2
        ) as agent:
            await agent.call_tool(TOOL)
            killed = time.perf_counter()
            cluster.remove_node(worker, allow_graceful=False)
            answered = asyncio.ensure_future(agent.call_tool(TOOL))
            head = cluster.head_node.node_id
            while not all(router.where.get(sid) == head for sid in on_worker):
                if time.perf_counter() - killed > 120:
                    raise RuntimeError("the lost node's sessions were not restored within 120 s")
                await asyncio.sleep(0.01)
            restored_s = time.perf_counter() - killed
            await asyncio.wait_for(answered, 120)
            resumed_s = time.perf_counter() - killed
        recovery = {
            "sessions_lost": len(on_worker),
            "all_restored_s": round(restored_s, 2),
            "agent_answered_again_s": round(resumed_s, 2),
        }
        return {
            "create_per_s": round(rate, 1),
            "rtt": rtt,
            "memory": memory,
            "recovery": recovery,
        }
    finally:
        await asyncio.wait_for(router.stop(), 60)


@contextlib.contextmanager
def local_cluster(
    nodes: int, system_config: dict[str, Any] | None = None
) -> Iterator[tuple[Any, list[Any]]]:
    """A Ray cluster of `nodes` nodes on this machine, one CPU each to Ray, this process its
    driver: (the cluster, the nodes added to its head); shut down on exit."""
    import ray
    from ray.cluster_utils import Cluster

    head: dict[str, Any] = {
        "num_cpus": 1,
        "include_dashboard": False,
        "object_store_memory": 80 * 2**20,
    }
    if system_config is not None:
        head["_system_config"] = system_config
    cluster = Cluster(initialize_head=True, head_node_args=head)
    try:
        added = [
            cluster.add_node(num_cpus=1, object_store_memory=80 * 2**20) for _ in range(nodes - 1)
        ]
        cluster.wait_for_nodes(timeout=120)
        ray.init(address=cluster.address, log_to_driver=False)
        yield cluster, added
    finally:
        with contextlib.suppress(Exception):
            ray.shutdown()
        cluster.shutdown()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=40)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.sessions, args.calls = 6, 50

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    result: dict[str, Any] = {
        "benchmark": "cluster",
        "sessions": args.sessions,
        "calls": args.calls,
    }
    with tempfile.TemporaryDirectory(prefix="areasync-bench-cluster-") as tmp:
        log("one machine ...")
        result["one_machine"] = asyncio.run(
            _one_machine(Path(tmp) / "one", args.sessions, args.calls)
        )
        log("starting a two-node Ray cluster ...")
        started = time.perf_counter()
        with local_cluster(2, HEALTH_CHECKS) as (cluster, nodes):
            worker = nodes[0]
            result["cluster_start_s"] = round(time.perf_counter() - started, 1)
            log("cluster ...")
            result["cluster"] = asyncio.run(
                _cluster(cluster, worker, Path(tmp) / "shared", args.sessions, args.calls)
            )
    one, many = result["one_machine"], result["cluster"]
    result["ratios"] = {
        "create_cluster_over_one_machine": round(many["create_per_s"] / one["create_per_s"], 2),
        "later_rtt_router_over_one_machine": round(
            many["rtt"]["via_router"]["later_p50_us"] / one["rtt"]["later_p50_us"], 2
        ),
        "first_call_router_minus_direct_ms": round(
            many["rtt"]["via_router"]["first_ms"] - many["rtt"]["direct_to_node"]["first_ms"], 2
        ),
    }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
