"""The heartbeat: a session worker whose event loop stops answering is killed.

Every `interval` seconds each worker is sent a `beat`, which its event loop answers at once.
One not answered within `budget` (the front gives `--tool-budget` plus a margin: a tool call
the call watchdog cannot stop, C code holding the interpreter, is the usual cause) is
cancelled, and since a held loop cannot give way either, the pool kills the worker after its
grace (`workers/pool.py`); the pool restarts it, and the front restores its sessions from
their journals on the workers up (`server.py`). A worker that is busy but answers is left
alone: only a loop that answers nothing for the whole budget is taken for stuck.

A beat's answer is how many of the worker's sessions ended because their journal failed: the
front's `/health` sums the last answers (`failed`), so a request for it, which needs no
token, asks no worker anything.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from areasync.workers.pool import BudgetSpent, CallFailed, Worker, WorkerLost, WorkerPool

__all__ = ["Supervisor"]

logger = logging.getLogger("areasync.front")


class Supervisor:
    """One heartbeat loop per worker of `pool` (module docstring)."""

    def __init__(self, pool: WorkerPool, *, budget: float, interval: float) -> None:
        self.pool = pool
        self.budget = budget
        self.interval = interval
        self.kills: list[str] = []  # the workers killed for a held loop, in order
        # Each worker's sessions ended by a failed journal, as its last beat said (by name).
        self.failed: dict[str, int] = {}
        self._tasks: list[asyncio.Task[None]] = []

    def start(self) -> None:
        self._tasks = [
            asyncio.get_running_loop().create_task(self._watch(worker))
            for worker in self.pool.workers
        ]

    def lost(self, worker: Worker) -> None:
        """`worker`'s process ended: its sessions, failed ones too, are no longer its."""
        self.failed.pop(worker.name, None)

    def stop(self) -> None:
        for task in self._tasks:
            task.cancel()

    async def _watch(self, worker: Worker) -> None:
        while True:
            with contextlib.suppress(WorkerLost, CallFailed):
                try:
                    failed = await self.pool.call(worker, "beat", budget=self.budget)
                    self.failed[worker.name] = int(failed)
                except BudgetSpent as spent:
                    if spent.killed:
                        what = f"{worker.name}: its loop answered nothing for {self.budget:g} s"
                        self.kills.append(what)
                        logger.error("%s: killed and restarted", what)
            await asyncio.sleep(self.interval)
