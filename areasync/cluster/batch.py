"""`areasync bench run --ray ADDRESS`: an evaluation's runs spread over every node's workers.

No socket and no session: this driver starts a bench host on every live node for the
evaluation (a host actor named `areasync-host-bench-...`, ended with the driver), each of
which keeps the same worker pool as `bench run --workers N` on one machine
(`nodebench.py`: a worker per CPU of the node, or `--workers N` per node, confined, each run
bounded by `--run-budget`). Each of those workers is one place of `gaia2/spread.py`'s `Spread`,
as a local worker is: the driver's side, placement, re-runs and the run budget's report are
`Spread`'s, the same for both; this module is what is Ray's. Each scenario run is one Ray call,
`Host.bench_run`, whose outcome (the run's files as plain data, or how its worker was lost or
the run ended) comes back as data.

* **A place's load** counts, besides the runs it is given, the live sessions per session
  worker of its node's `serve --ray` host, as those report them when the evaluation starts
  (`Host.load`).
* **A worker lost mid-run** (killed, crashed, or killed past its budget): its node's pool
  restarts it, and its run runs again on another worker (`spread.RERUNS`).
* **A host lost mid-run** (its call fails with `RayActorError`: its process or node died)
  never comes back: every worker of its node is given no more runs, and their runs under way
  run again elsewhere. A run's timeout or Ctrl-C cancels its Ray call, which cancels the run
  in its worker at its next wait (the run budget ends one that never waits).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import ray
from ray.exceptions import RayActorError

from areasync.cluster.nodes import HOST_PREFIX, NAMESPACE, alive_nodes, start_host
from areasync.gaia2.remote import Answer
from areasync.gaia2.spread import Arguments, Load, PlaceLost, Spread, answer_of
from areasync.workers.confine import Confinement

__all__ = ["BENCH_PREFIX", "NoHostError", "WorkerSlot", "cluster_hosts", "spread_runs"]

logger = logging.getLogger("areasync.cluster")

BENCH_PREFIX = f"{HOST_PREFIX}bench-"  # the bench hosts this driver starts
_PING_S = 10.0
# A bench host's start: a Ray worker process that imports areasync, then its pool's start (the
# fork server imports ARE in the background: a run waits for its worker).
_START_S = 300.0


class NoHostError(RuntimeError):
    """The cluster cannot be joined."""


def cluster_hosts() -> dict[str, Any]:
    """The cluster's running `serve --ray` host actors, by name (a blocking call)."""
    names = sorted(
        n
        for n in ray.util.list_named_actors()
        if n.startswith(HOST_PREFIX) and not n.startswith(BENCH_PREFIX)
    )
    hosts = {}
    for name in names:
        try:
            hosts[name] = ray.get_actor(name)
        except ValueError:  # gone since it was listed
            continue
    return hosts


@dataclass
class BenchHost:
    """A bench host of this evaluation: its workers are places until it is lost."""

    name: str
    actor: Any
    lost: bool = False


class WorkerSlot:
    """One bench worker of a node's bench host, as a place to run runs (`spread.Place`)."""

    def __init__(self, host: BenchHost, slot: str, sessions: int) -> None:
        self.name = f"{host.name}/{slot}"
        self.host = host
        self.slot = slot
        self.load = Load(sessions=sessions)

    @property
    def comes_back(self) -> bool:
        """A lost worker is restarted by its node's pool; a lost host never comes back."""
        return not self.host.lost

    async def run(self, item: str, arguments: Arguments) -> Answer:
        ref = self.host.actor.bench_run.remote(self.slot, item, *arguments.values())
        try:
            outcome = await asyncio.wrap_future(ref.future())
        except RayActorError as error:
            logger.warning("host %s was lost: %s", self.host.name, error)
            self.host.lost = True
            raise PlaceLost(f"host {self.host.name} was lost") from None
        except asyncio.CancelledError:
            ray.cancel(ref)  # the run's timeout, or Ctrl-C: stop it on the host too
            raise
        return answer_of(outcome)


def _sessions_per_worker() -> dict[str, int]:
    """Live sessions per session worker of each node's `serve --ray` host, by node id."""
    hosts = list(cluster_hosts().values())
    per_node: dict[str, int] = {}
    for actor in hosts:
        try:
            node, load = ray.get([actor.node_id.remote(), actor.load.remote()], timeout=_PING_S)
        except (ray.exceptions.RayError, RuntimeError):
            continue  # lost, or serving nothing yet
        per_node[node] = load.live // max(1, load.workers)
    return per_node


def _bench_hosts(
    workers: int | None, budget_s: float | None, confined: Confinement | None, models: bool
) -> tuple[list[Any], list[WorkerSlot]]:
    """A bench host on every live node, its workers started: (the actors, their places)."""
    sessions = _sessions_per_worker()
    hosts = []
    for node_id in alive_nodes():
        name = f"{BENCH_PREFIX}{node_id[:12]}-{uuid.uuid4().hex[:8]}"
        hosts.append((node_id, BenchHost(name, start_host(node_id, name=name))))
    starts = [h.actor.bench_start.remote(workers, budget_s, confined, models) for _, h in hosts]
    places: list[WorkerSlot] = []
    for (node_id, host), start in zip(hosts, starts, strict=True):
        try:
            slots = ray.get(start, timeout=_START_S)
        except (ray.exceptions.RayError, RuntimeError) as error:
            logger.warning("no bench workers on node %s: %s", node_id, error)
            continue
        places += [WorkerSlot(host, slot, sessions.get(node_id, 0)) for slot in slots]
    return [host.actor for _, host in hosts], places


@contextmanager
def spread_runs(
    address: str,
    workers: int | None = None,
    budget_s: float | None = None,
    confined: Confinement | None = None,
    *,
    models: bool = True,
) -> Iterator[Spread]:
    """Join the cluster at `address` (unless this process already is a driver) and yield the
    `Spread` over every node's bench workers (module docstring); the bench hosts are ended
    on exit."""
    joined = not ray.is_initialized()
    if joined:
        try:
            ray.init(address=address, namespace=NAMESPACE, log_to_driver=False)
        except (ConnectionError, ValueError, RuntimeError) as exc:
            raise NoHostError(
                f"cannot join the Ray cluster at {address!r} ({exc}); start one with "
                "`ray start --head` or give its address (HOST:PORT)"
            ) from None
    started: list[Any] = []
    try:
        started, places = _bench_hosts(workers, budget_s, confined, models)
        yield Spread(places, bounds_runs=budget_s is not None)
    finally:
        for actor in started:
            ray.kill(actor)
        if joined:
            ray.shutdown()
