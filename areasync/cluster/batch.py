"""`areasync bench run --ray ADDRESS`: an evaluation's runs spread over the cluster's hosts.

No socket and no session: each scenario run is one Ray call, `Host.bench_run`, on the host
actor of some node, which runs it in its own process off its event loop and answers with the
run's outcome and files as plain data (`areasync/gaia2/remote.py`). A host is a place of
`gaia2/spread.py`, as a local worker process is (`--workers`): the driver's side, placement
and re-runs are `Spread`'s, the same for both; this module is what is Ray's.

* **Which hosts:** the cluster's, those `areasync serve --ray` started (named
  `areasync-host-...` in the `areasync` namespace); on a cluster without them, one started here
  per live node for this evaluation (it ends with the driver).
* **A host's load** counts its live sessions and its memory as it reports them when the
  evaluation starts (`Host.load`), besides the runs it is given.
* **A host lost mid-run** (its call fails with `RayActorError`: its process or node died) never
  comes back: its runs under way run again on other hosts (`spread.RERUNS`). A run's timeout
  or Ctrl-C cancels its Ray call, which cancels the run on the host at its next wait.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import ray
from ray.exceptions import RayActorError

from areasync.cluster.nodes import HOST_PREFIX, NAMESPACE, alive_nodes, start_host
from areasync.gaia2.remote import Answer
from areasync.gaia2.spread import Arguments, Load, PlaceLost, Spread

__all__ = ["HostPlace", "NoHostError", "cluster_hosts", "spread_runs"]

logger = logging.getLogger("areasync.cluster")

_PING_S = 10.0


class NoHostError(RuntimeError):
    """The cluster cannot be joined."""


def cluster_hosts() -> dict[str, Any]:
    """The cluster's running host actors, by name (a blocking call)."""
    names = sorted(n for n in ray.util.list_named_actors() if n.startswith(HOST_PREFIX))
    hosts = {}
    for name in names:
        try:
            hosts[name] = ray.get_actor(name)
        except ValueError:  # gone since it was listed
            continue
    return hosts


class HostPlace:
    """One host actor, as a place to run runs (`spread.Place`)."""

    comes_back = False  # Ray never restarts a host actor (`nodes.start_host`)

    def __init__(self, name: str, actor: Any) -> None:
        self.name = name
        self.actor = actor
        try:
            load = ray.get(actor.load.remote(), timeout=_PING_S)
            live, rss = load.live, load.rss
        except (ray.exceptions.RayError, RuntimeError):
            live, rss = 0, 0  # a host started for this evaluation serves no sessions
        self.load = Load(sessions=live, rss=rss)

    async def run(self, item: str, arguments: Arguments) -> Answer:
        ref = self.actor.bench_run.remote(item, *arguments.values())
        try:
            answer: Answer = await asyncio.wrap_future(ref.future())
            return answer
        except RayActorError as error:
            logger.warning("host %s was lost: %s", self.name, error)
            raise PlaceLost(f"host {self.name} was lost") from None
        except asyncio.CancelledError:
            ray.cancel(ref)  # the run's timeout, or Ctrl-C: stop it on the host too
            raise


@contextmanager
def spread_runs(address: str) -> Iterator[Spread]:
    """Join the cluster at `address` (unless this process already is a driver) and yield the
    `Spread` over its hosts; hosts started here are stopped on exit."""
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
        hosts = cluster_hosts()
        if not hosts:
            for node_id in alive_nodes():
                name = f"{HOST_PREFIX}bench-{node_id[:12]}-{uuid.uuid4().hex[:8]}"
                hosts[name] = start_host(node_id, name=name)
                started.append(hosts[name])
        yield Spread(HostPlace(name, actor) for name, actor in hosts.items())
    finally:
        for actor in started:
            ray.kill(actor)
        if joined:
            ray.shutdown()
