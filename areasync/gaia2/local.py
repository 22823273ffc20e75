"""`areasync bench run --workers N`: an evaluation's runs spread over worker processes here.

Each worker is a process of this machine (`areasync/workers/`), forked from a fork server that
imported ARE's benchmark pipeline once (`PRELOAD`), serving `remote.serving()`'s handler
(through `confinement.serving()`): each run a greenlet on the worker's event loop under the
virtual clock, many at once, as in one process. A worker is a place (`spread.py`), as a Ray
host is: the driver keeps ARE's runner, the sweep's records and every output, and the runs go
to the least busy worker.

* **How many:** by default `default_workers()`, the cores this process may run on. The
  driver's own work (loading the scenarios, ARE's JSON of each, writing the outputs) is small
  beside a run's, and shares those cores.
* **A worker that dies** is restarted by its pool, and the runs it had under way run again on
  another worker (`spread.py`, said on stderr with the restarts).
* **Confinement:** each worker confines itself as it starts (`confinement.py`: it reads
  Python and ARE, writes its own temp dir under a folder made here for the pool, reaches only
  its model endpoints); a lost worker's temp dir, and the pool's folder at the end, are
  removed here.
* **The run budget** (`--run-budget`, by default ARE's `--scenario_timeout`) is kept by the
  pool from when the run is sent: past it the run is cancelled at its next wait, and if it
  has not given way within `workers.pool.GRACE_S` its worker is killed, as ARE's process
  executor kills a timed-out run's process, and restarted. It stands in for ARE's timer in
  the driver, which could only cancel a run at a wait.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

import msgspec

from areasync.gaia2 import confinement, remote
from areasync.gaia2.remote import Answer
from areasync.gaia2.spread import Arguments, Load, Overrun, PlaceLost, Spread
from areasync.workers.confine import Confinement, worker_tmp
from areasync.workers.pool import BudgetSpent, CallFailed, Worker, WorkerLost, WorkerPool
from areasync.workers.thread import LoopThread

__all__ = ["PRELOAD", "WorkerPlace", "default_workers", "local_runs"]

# What the fork server imports once, so that no worker imports it: areasync's side of a run,
# and what ARE imports to load, pre-run, judge and run a scenario with its default agent and
# LiteLLM (most of a worker's import time), down to what a worker's first run imported on its
# own when these were fewer (the event loop's anyio backend, ARE's agent factory, the OpenAI
# client's chat resources). tests/gaia2/test_local.py checks that each exists.
PRELOAD = (
    "areasync.gaia2.remote",
    "areasync.gaia2.confinement",
    "anyio._backends._asyncio",
    "are.simulation.multi_scenario_runner",
    "are.simulation.scenario_runner",
    "are.simulation.scenarios.scenario_imported_from_json.utils",
    "are.simulation.agents.default_agent.are_simulation_main",
    "are.simulation.agents.default_agent.agent_factory",
    "are.simulation.agents.llm.litellm.litellm_engine",
    "are.simulation.agents.are_simulation_agent_config",
    "are.simulation.benchmark.scenario_loader",
    "are.simulation.validation.judge",
    "are.simulation.data_handler.exporter",
    "litellm",
    "openai.resources.chat",
    "openai.lib.streaming.chat",
)


def default_workers() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


class WorkerPlace:
    """One worker slot of the pool, as a place to run runs (`spread.Place`)."""

    def __init__(
        self,
        pool: WorkerPool,
        worker: Worker,
        thread: LoopThread[None],
        budget_s: float | None,
        tmp_under: str,
    ) -> None:
        self.name = worker.name
        self.load = Load()
        self._pool = pool
        self._worker = worker
        self._thread = thread
        self._budget_s = budget_s
        self._tmp_under = tmp_under

    @property
    def comes_back(self) -> bool:
        return self._worker.gone is None

    async def run(self, item: str, arguments: Arguments) -> Answer:
        call = self._pool.call(
            self._worker, "run", item, *arguments.values(), budget=self._budget_s
        )
        try:
            answer: Answer = await self._thread.run(call)
        except WorkerLost as lost:
            if lost.pid is not None:  # what its runs staged, and ARE's sandboxes
                shutil.rmtree(worker_tmp(self._tmp_under, lost.pid), ignore_errors=True)
            raise PlaceLost(str(lost)) from None
        except BudgetSpent as spent:
            raise Overrun(spent.budget_s, str(spent)) from None
        except CallFailed as failed:  # `run` answers a run's own failure: this is the handler's
            return Answer(raised=(failed.kind, failed.message))
        return answer


@contextmanager
def local_runs(
    workers: int, budget_s: float | None, confined: Confinement | None
) -> Iterator[Spread]:
    """A `Spread` over `workers` worker processes, each run bounded by `budget_s` (None: no
    bound), each worker confined by `confined` with a temp dir of its own under a folder made
    here (None: unconfined, as before; only bench/confine.py does it, to measure the cost).
    The workers start in the background: a run waits for its worker to be ready."""
    tmp_under = tempfile.mkdtemp(prefix="areasync-workers-")
    spec = None if confined is None else msgspec.structs.replace(confined, tmp_under=tmp_under)
    serve = remote.serving if spec is None else confinement.serving
    thread: LoopThread[None] = LoopThread("areasync workers")
    pool = WorkerPool(workers, serve, preload=PRELOAD, confinement=spec)

    async def start() -> None:
        pool.start()

    try:
        thread.call(start())
        places = [WorkerPlace(pool, worker, thread, budget_s, tmp_under) for worker in pool.workers]
        yield Spread(places, bounds_runs=True, notes=pool.events)
    finally:
        try:
            thread.call(pool.close())
        finally:
            thread.stop()
            shutil.rmtree(tmp_under, ignore_errors=True)
