"""Ray's side of the cluster: which nodes are alive, and a host actor pinned to each.

A host actor is an async actor (its methods are coroutines, so Ray runs them on the actor's
event loop, where `Host` runs areasync's server). It is pinned to its node
(`NodeAffinitySchedulingStrategy`, not soft: a host elsewhere would serve the wrong node's
address), asks for no CPU (its sessions' work is what the node's CPUs are for, and a node
with `num_cpus=1` must still take it), and is never restarted by Ray (`max_restarts=0`):
Ray would restart it elsewhere with its sessions gone, while the router restores them from
their journals (`router.py`). Its worker runs with `RAY_USE_UVLOOP=0`, so its loop is
asyncio's own, the loop areasync is built and measured on, even where uvloop is installed.

A host runs at its node's own priority, not at the niceness Ray gives its workers
(`RAY_worker_niceness`, 15 by default, meant for batch tasks that must not slow the node's Ray
daemons): the host is the node's server, and every process it starts (a front's session
workers, a bench pool's fork server and workers) inherits its niceness. At 15, any ordinary
process busy on the node gets about thirty times its CPU share, so on a shared node a host's
start, its sessions' steps and its bench runs crawl (docs/topics/scaling.md). Ray's own job
supervisor is started the same way, for the same reason.
"""

from __future__ import annotations

import uuid
from typing import Any

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from areasync.cluster.host import Host

__all__ = ["HOST_PREFIX", "NAMESPACE", "HostActor", "alive_nodes", "start_host"]

# Host actors are named `HOST_PREFIX...` so that another driver of the cluster (`areasync bench
# run --ray`, `batch.py`) finds them; `areasync` drivers join the cluster in this namespace.
HOST_PREFIX = "areasync-host-"
NAMESPACE = "areasync"

# Calls at once on one host actor (create, restore, load and lookups from the router).
_HOST_CONCURRENCY = 64
# The host's worker process: asyncio's own loop, and the node's own priority (module docstring).
_HOST_ENV = {"RAY_USE_UVLOOP": "0", "RAY_worker_niceness": "0"}

HostActor: Any = ray.remote(Host)


def alive_nodes() -> list[str]:
    """The ids of the cluster's live nodes, sorted (a blocking call: run it off the loop)."""
    return sorted(node["NodeID"] for node in ray.nodes() if node.get("Alive"))


def start_host(node_id: str, name: str | None = None) -> Any:
    """A new host actor on node `node_id` (its server is started by `start`), named `name`
    (default: `HOST_PREFIX`, the node id and a random suffix: never taken)."""
    name = name or f"{HOST_PREFIX}{node_id[:12]}-{uuid.uuid4().hex[:8]}"
    return HostActor.options(
        name=name,
        num_cpus=0,
        max_restarts=0,
        max_task_retries=0,
        max_concurrency=_HOST_CONCURRENCY,
        scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=node_id, soft=False),
        runtime_env={"env_vars": _HOST_ENV},
    ).remote()
