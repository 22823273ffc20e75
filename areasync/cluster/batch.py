"""`areasync bench run --ray ADDRESS`: an evaluation's runs spread over the cluster's hosts.

No socket and no session: each scenario run is one Ray call, `Host.bench_run`, on the host
actor of some node, which runs it in its own process off its event loop and answers with the
run's outcome and files as plain data (`areasync/gaia2/remote.py`). Everything else stays in
the driver, unchanged: ARE's runner, the sweep's records, resume and retry, `output.jsonl`,
`benchmark_stats.json` and the report, so the outputs are a one-machine run's.

* **Which hosts:** the cluster's, those `areasync serve --ray` started (named
  `areasync-host-...` in the `areasync` namespace); on a cluster without them, one started here
  per live node for this evaluation (it ends with the driver).
* **Which host a run goes to:** the least loaded (`placement.least_loaded`: live sessions, then
  memory, as reported when the evaluation starts) counting the runs it has under way, so a
  node that finishes its runs sooner is given more: a work queue over the hosts, at most
  `--max_concurrent_scenarios` runs at once over the whole cluster.
* **A host lost mid-run** (its call fails with `RayActorError`: its process or node died): its
  runs under way are run again from the start on another host, each at most `HOST_RETRIES`
  times; what was re-run is said on stderr (`Batch.reruns`). A run that cannot be placed any
  more fails as a model endpoint's failure would: recorded as an infrastructure failure, so
  `--resume` runs it again.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import ray
from ray.exceptions import RayActorError

from areasync.cluster.nodes import HOST_PREFIX, NAMESPACE, alive_nodes, start_host
from areasync.cluster.placement import Load, least_loaded
from areasync.gaia2 import cooperative, sweep
from areasync.gaia2.remote import Answer, result_of, run_name, write_files

__all__ = ["HOST_RETRIES", "Batch", "NoHostError", "cluster_hosts", "spread_runs"]

logger = logging.getLogger("areasync.cluster")

HOST_RETRIES = 2  # times a run is run again after the host running it was lost
_PING_S = 10.0


class NoHostError(RuntimeError):
    """No live host is left to run a run on."""


@dataclasses.dataclass
class _Host:
    name: str
    actor: Any
    load: Load


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


class Batch:
    """The driver's side of `--ray` (module docstring): `dispatch` is ARE's `process_scenario`
    as `runner.virtual_clock(dispatch=...)` takes it."""

    def __init__(self, hosts: dict[str, Any]) -> None:
        self.hosts: dict[str, _Host] = {}
        for name, actor in hosts.items():
            try:
                live, rss = ray.get(actor.load.remote(), timeout=_PING_S)
            except (ray.exceptions.RayError, RuntimeError):
                live, rss = 0, 0  # a host started for this evaluation serves no sessions
            self.hosts[name] = _Host(name, actor, Load(live=live, rss=rss))
        self.lost: list[str] = []
        self.reruns: list[str] = []  # "<scenario> run <n>: host <name> was lost", in order

    def dispatch(self, item: Any, **kwargs: Any) -> Any:
        """Run one run on the least loaded host; its `ScenarioValidationResult`."""
        if not isinstance(item, str):
            raise TypeError(
                "--ray ships each scenario as ARE's JSON (its process executor's form): run "
                "without --executor_type thread"
            )
        try:
            answer = cooperative.wait(self.run(item, kwargs))
        except NoHostError as error:
            sweep.note_endpoint_error(error)  # an infrastructure failure: --resume reruns it
            raise
        attempt = sweep.current_attempt()
        if attempt is not None:
            attempt.endpoint_errors += answer.endpoint_errors[: sweep.MAX_ERRORS_KEPT]
            attempt.endpoint_error_count += answer.endpoint_error_count
        write_files(answer, kwargs["config"].output_dir)
        return result_of(answer)

    async def run(self, item: str, kwargs: dict[str, Any]) -> Answer:
        """`Host.bench_run` on the least loaded host, again elsewhere if that host is lost."""
        for attempt in range(HOST_RETRIES + 1):
            host = self._place()
            host.load.pending += 1
            ref = host.actor.bench_run.remote(item, *_arguments(kwargs))
            try:
                answer: Answer = await asyncio.wrap_future(ref.future())
                return answer
            except RayActorError as error:
                self._lose(host, item, attempt, error)
            except asyncio.CancelledError:
                ray.cancel(ref)  # the run's timeout, or Ctrl-C: stop it on the host too
                raise
            finally:
                host.load.pending -= 1
        raise NoHostError(f"lost {HOST_RETRIES + 1} hosts running this run; not retried again")

    def _place(self) -> _Host:
        if not self.hosts:
            raise NoHostError(
                "no live host left on the cluster to run on: start nodes, then rerun the "
                "same command with --resume to run the rest"
            )
        name = least_loaded({name: host.load for name, host in self.hosts.items()})
        return self.hosts[name]

    def _lose(self, host: _Host, item: str, attempt: int, error: BaseException) -> None:
        if self.hosts.pop(host.name, None) is not None:
            self.lost.append(host.name)
            logger.warning("host %s was lost: %s", host.name, error)
        again = "run again" if attempt < HOST_RETRIES else "not run again (retries spent)"
        self.reruns.append(f"{run_name(item)}: host {host.name} was lost, {again}")


def _arguments(kwargs: dict[str, Any]) -> tuple[Any, Any, Any]:
    return kwargs["config"], kwargs.get("agent_config_builder"), kwargs.get("agent_builder")


@contextmanager
def spread_runs(address: str) -> Iterator[Batch]:
    """Join the cluster at `address` (unless this process already is a driver) and yield the
    `Batch` over its hosts; hosts started here are stopped on exit."""
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
        yield Batch(hosts)
    finally:
        for actor in started:
            ray.kill(actor)
        if joined:
            ray.shutdown()
