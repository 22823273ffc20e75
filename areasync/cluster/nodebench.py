"""A node's share of `areasync bench run --ray`: the same worker pool as on one machine.

A bench host (`batch.py` starts one per node for the evaluation) keeps `gaia2/local.py`'s
`local_runs` open: a worker process per CPU of the node (or `--workers N` per node), forked
from a fork server that imported ARE's benchmark pipeline, each confined by the driver's spec,
each run bounded by the run budget (a run that never gives way has its worker killed and
restarted). Each worker is one place of the driver's `Spread`; a run's outcome crosses Ray as
plain data (`spread.outcome_of`), so a lost worker and a run past its budget are told to the
driver as on one machine.

A host whose node server runs session workers (`servers.FrontNode`) takes no bench pool: one
process has one fork server, started with one pool's modules, and a bench pool would restart
it under the session workers (`workers/forkserver.py`).
"""

from __future__ import annotations

import asyncio
from contextlib import ExitStack
from typing import Any

from areasync.gaia2.local import WorkerPlace, local_runs
from areasync.gaia2.remote import Answer, run_name
from areasync.gaia2.spread import Arguments, Ended, Lost, Spread, outcome_of
from areasync.workers.confine import Confinement

__all__ = ["NodeBench"]


class NodeBench:
    """A node's bench workers (module docstring)."""

    def __init__(
        self, workers: int, budget_s: float | None, confined: Confinement | None, models: bool
    ) -> None:
        self._stack = ExitStack()
        self.spread: Spread = self._stack.enter_context(
            local_runs(workers, budget_s, confined, models=models)
        )
        self._running: list[str] = []  # the runs under way (ARE's JSON of each)

    def slots(self) -> list[str]:
        """Its workers' names: the driver's places on this node."""
        return list(self.spread.places)

    def pids(self) -> dict[str, int | None]:
        """Each worker's process id (None while it starts again)."""
        return {
            name: place.pid
            for name, place in self.spread.places.items()
            if isinstance(place, WorkerPlace)
        }

    def running(self) -> list[str]:
        """The runs under way, by name (`<scenario id>[ run <n>]`)."""
        return [run_name(item) for item in self._running]

    async def run(self, slot: str, item: str, *arguments: Any) -> Answer | Lost | Ended:
        """`item` on worker `slot`: its answer, or how the worker was lost or ended it."""
        place = self.spread.places.get(slot)
        if place is None:
            return Lost(f"no bench worker {slot!r} on this node")
        self._running.append(item)
        try:
            config, agent_config_builder, agent_builder = arguments
            given = Arguments(config, agent_config_builder, agent_builder)
            return await outcome_of(place.run(item, given))
        finally:
            self._running.remove(item)

    async def close(self) -> None:
        """End the workers (off the event loop: the pool waits for them)."""
        await asyncio.to_thread(self._stack.close)
