"""`WorkerPool`: real worker processes, forked from the fork server, running the handlers of
`tests/workers/handlers.py`: calls answer, fail, are ended past their budget (at their next
wait, or by killing a worker that holds its loop), and a worker that dies is restarted.

No test depends on the machine's speed: budgets end calls that never finish, graces are
long where a worker must answer in time and short only where it never can, and every wait
is bounded by `BOUND_S` (it only stops a hang).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from areasync.workers.pool import (
    BudgetSpent,
    CallFailed,
    PoolError,
    WorkerLost,
    WorkerPool,
)
from tests.waiting import eventually
from tests.workers import handlers

BOUND_S = 120.0  # a worker start (the fork server's first one imports its preload) and a call
PRELOAD = ("tests.workers.handlers",)
SHORT_BUDGET_S = 0.2  # for calls that never finish: any budget ends them
SHORT_GRACE_S = 0.2  # for calls that hold their worker's loop: no grace is long enough


async def started(pool: WorkerPool) -> WorkerPool:
    pool.start()
    await asyncio.wait_for(pool.ready(), BOUND_S)
    return pool


@pytest.fixture
async def pool() -> AsyncIterator[WorkerPool]:
    """A pool whose cancelled calls get the whole bound to give way: on a busy machine the
    default grace can pass before a worker gets the CPU to unwind, and it would be killed."""
    running = await started(WorkerPool(1, handlers.serving, preload=PRELOAD, grace_s=BOUND_S))
    yield running
    await running.close()


@pytest.fixture
async def hasty() -> AsyncIterator[WorkerPool]:
    """A pool that kills a worker whose call does not give way within SHORT_GRACE_S."""
    running = await started(WorkerPool(1, handlers.serving, preload=PRELOAD, grace_s=SHORT_GRACE_S))
    yield running
    await running.close()


def gone(pid: int) -> bool:
    """Whether process `pid` has ended (a zombie no one reaped yet counts as ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state in {"Z", "X"}


async def until(condition: Callable[[], object], what: str) -> None:
    """Wait (bounded) until `condition()` holds: another process's or thread's state."""
    await eventually(condition, within=BOUND_S, what=what)


async def test_a_call_runs_in_a_worker_process_and_returns_its_value(pool: WorkerPool) -> None:
    worker = pool.workers[0]
    assert await pool.call(worker, "pid") == worker.pid != os.getpid()
    assert await pool.call(worker, "echo", 1, "two", {"three": [3]}) == (1, "two", {"three": [3]})


async def test_a_handlers_exception_comes_back_as_its_type_and_text(pool: WorkerPool) -> None:
    worker = pool.workers[0]
    with pytest.raises(CallFailed) as failed:
        await pool.call(worker, "fail", "no such thing")
    assert (failed.value.kind, failed.value.message) == ("ValueError", "no such thing")
    assert await pool.call(worker, "echo", "after") == ("after",)


async def test_an_unknown_method_is_refused_naming_the_handlers(pool: WorkerPool) -> None:
    with pytest.raises(CallFailed, match=r"no handler 'nope' .*echo"):
        await pool.call(pool.workers[0], "nope")


async def test_a_value_that_cannot_be_sent_back_is_a_clear_failure(pool: WorkerPool) -> None:
    with pytest.raises(CallFailed, match="could not be sent back"):
        await pool.call(pool.workers[0], "unpicklable")
    assert await pool.call(pool.workers[0], "echo", "still serving") == ("still serving",)


async def test_a_worker_killed_mid_call_fails_its_calls_and_is_restarted(
    pool: WorkerPool, tmp_path: Path
) -> None:
    worker = pool.workers[0]
    first = worker.pid
    assert first is not None
    waiting = asyncio.create_task(pool.call(worker, "wait_forever", str(tmp_path / "m")))
    await until(lambda: worker.running == 1, "the call under way")
    os.kill(first, signal.SIGKILL)
    with pytest.raises(WorkerLost, match=f"pid {first}.* was killed by SIGKILL") as lost:
        await asyncio.wait_for(waiting, BOUND_S)
    assert lost.value.pid == first
    assert await asyncio.wait_for(pool.call(worker, "pid"), BOUND_S) == worker.pid != first
    assert worker.restarts == 1 and len(worker.starts) == 2
    assert any("was killed by SIGKILL; restarting it" in event for event in pool.events)


async def test_a_call_past_its_budget_is_cancelled_at_its_next_wait(
    pool: WorkerPool, tmp_path: Path
) -> None:
    worker = pool.workers[0]
    before = worker.pid
    marker = tmp_path / "unwound"
    with pytest.raises(BudgetSpent) as spent:
        await pool.call(worker, "wait_forever", str(marker), budget=SHORT_BUDGET_S)
    assert not spent.value.killed and "cancelled at its next wait" in str(spent.value)
    assert marker.read_text() == "cancelled"
    assert worker.pid == before and worker.restarts == 0


async def test_a_call_holding_its_loop_past_its_budget_has_its_worker_killed_and_restarted(
    hasty: WorkerPool, tmp_path: Path
) -> None:
    worker = hasty.workers[0]
    before = worker.pid
    other = asyncio.create_task(hasty.call(worker, "wait_forever", str(tmp_path / "m")))
    await until(lambda: worker.running == 1, "the other call under way")
    with pytest.raises(BudgetSpent) as spent:
        await hasty.call(worker, "hold_the_loop", budget=SHORT_BUDGET_S)
    assert spent.value.killed and f"{worker.name} was killed and restarted" in str(spent.value)
    with pytest.raises(WorkerLost, match="did not give way"):
        await asyncio.wait_for(other, BOUND_S)
    assert await asyncio.wait_for(hasty.call(worker, "pid"), BOUND_S) == worker.pid != before


async def test_a_call_its_caller_cancels_is_cancelled_in_the_worker(
    pool: WorkerPool, tmp_path: Path
) -> None:
    worker = pool.workers[0]
    marker = tmp_path / "unwound"
    waiting = asyncio.create_task(pool.call(worker, "wait_forever", str(marker)))
    await until(lambda: worker.running == 1, "the call under way")
    waiting.cancel()
    await until(marker.exists, "the call unwound in the worker")
    await until(lambda: worker.running == 0, "the call gone from the worker")
    assert worker.restarts == 0


async def test_a_worker_whose_handlers_cannot_be_set_up_is_given_up() -> None:
    pool = WorkerPool(1, handlers.never_starting, preload=PRELOAD)
    pool.start()
    try:
        with pytest.raises(PoolError, match=r"could not start .*exited with status 1"):
            await asyncio.wait_for(pool.ready(), BOUND_S)
        with pytest.raises(WorkerLost, match="given up"):
            await pool.call(pool.workers[0], "echo")
    finally:
        await pool.close()
    assert any("given up" in event for event in pool.events)


async def test_closing_the_pool_ends_its_worker_processes() -> None:
    pool = await started(WorkerPool(2, handlers.serving, preload=PRELOAD))
    pids = [worker.pid for worker in pool.workers]
    await pool.close()
    assert all(pid is not None and gone(pid) for pid in pids)
    with pytest.raises(WorkerLost, match="closing"):
        await pool.call(pool.workers[0], "echo")


REPOSITORY = Path(__file__).resolve().parents[2]
DRIVER = """
import asyncio, sys
from areasync.workers.pool import WorkerPool
from tests.workers import handlers

async def main():
    pool = WorkerPool(2, handlers.serving, preload=("tests.workers.handlers",))
    pool.start()
    await pool.ready()
    print(" ".join(str(worker.pid) for worker in pool.workers), flush=True)
    await asyncio.Event().wait()

if __name__ == "__main__":
    asyncio.run(main())
"""


@pytest.fixture
def script(tmp_path: Path) -> Path:
    """A driver that starts a pool of two, prints their pids, and waits forever."""
    path = tmp_path / "driver.py"
    path.write_text(DRIVER)
    return path


async def test_workers_end_when_their_driver_is_killed(script: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPOSITORY)}
    driver = await asyncio.create_subprocess_exec(
        sys.executable, str(script), stdout=subprocess.PIPE, env=env
    )
    try:
        assert driver.stdout is not None
        line = await asyncio.wait_for(driver.stdout.readline(), BOUND_S)
        pids = [int(pid) for pid in line.split()]
        assert len(pids) == 2
    finally:
        driver.kill()
        await driver.wait()
    await until(lambda: all(gone(pid) for pid in pids), "the workers ended")


async def test_a_pool_whose_handlers_cannot_be_sent_to_a_worker_is_given_up() -> None:
    pool = WorkerPool(1, lambda: handlers.serving(), preload=PRELOAD)  # a lambda: no name
    pool.start()
    try:
        with pytest.raises(PoolError, match="could not start"):
            await asyncio.wait_for(pool.ready(), BOUND_S)
    finally:
        await pool.close()
