"""`areasync bench run --workers N`: an evaluation's runs spread over worker processes here.

Each worker is a process of this machine (`areasync/workers/`), forked from a fork server that
imported ARE's benchmark pipeline once (`boot.PRELOAD`; the command boots it as it starts,
`boot.py`), serving `remote.serving()`'s handler
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
from collections.abc import Iterator
from contextlib import contextmanager

import msgspec

from areasync.gaia2 import confinement, remote, timings
from areasync.gaia2.boot import PRELOAD, preload
from areasync.gaia2.remote import Answer
from areasync.gaia2.spread import Arguments, Load, Overrun, PlaceLost, Spread
from areasync.privatedirs import WORKERS_PREFIX, PrivateDir
from areasync.workers.confine import Confinement, worker_tmp
from areasync.workers.pool import BudgetSpent, CallFailed, Worker, WorkerLost, WorkerPool
from areasync.workers.thread import LoopThread
from areasync.workers.worker import Serve

__all__ = ["PRELOAD", "WorkerPlace", "default_workers", "local_runs"]


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

    @property
    def pid(self) -> int | None:
        """Its worker's process id (None while it starts again)."""
        return self._worker.pid

    async def run(self, item: str, arguments: Arguments) -> Answer:
        async def call() -> Answer:  # on the pool's thread
            await self._pool.wait_ready(self._worker)
            timings.first("first_run_started")
            answer: Answer = await self._pool.call(
                self._worker, "run", item, *arguments.values(), budget=self._budget_s
            )
            return answer

        try:
            answer = await self._thread.run(call())
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
    workers: int, budget_s: float | None, confined: Confinement | None, *, models: bool = True
) -> Iterator[Spread]:
    """A `Spread` over `workers` worker processes, each run bounded by `budget_s` (None: no
    bound), each worker confined by `confined` with a temp dir of its own under a folder made
    here (None: unconfined, as before; only bench/confine.py does it, to measure the cost).
    `models`: the runs call models (False for `--oracle`: the workers import no LiteLLM).
    The workers start in the background: a run waits for its worker to be ready."""
    private = PrivateDir.make(WORKERS_PREFIX)  # reclaimed by the next one if this is killed
    tmp_under = str(private.path)
    spec = None if confined is None else msgspec.structs.replace(confined, tmp_under=tmp_under)
    serve: Serve
    if models:
        serve = remote.serving if spec is None else confinement.serving
    else:
        serve = remote.oracle_serving if spec is None else confinement.oracle_serving
    thread: LoopThread[None] = LoopThread("areasync workers")
    pool = WorkerPool(workers, serve, preload=preload(models=models), confinement=spec)

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
            private.remove()
