"""`--workers` and `--run-budget` are checked against each other and ARE's options
before anything runs; the fork server's preload names modules that exist; a run whose every
worker dies is re-run `RERUNS` times, then is an infrastructure failure, said so."""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from areasync.gaia2.cli import main as bench_main
from areasync.gaia2.dataset import SPECS, scenario_json
from areasync.gaia2.local import PRELOAD, WorkerPlace
from areasync.gaia2.spread import RERUNS, Arguments, NoPlaceError, Spread
from areasync.workers.pool import WorkerPool
from areasync.workers.thread import LoopThread
from tests.workers import handlers

BOUND_S = 120.0


def refusal(capsys: Any, *args: str) -> str:
    status = bench_main(["-d", "nowhere", *args])
    assert status == 2
    return str(capsys.readouterr().err)


def test_workers_with_the_thread_executor_are_refused(capsys: Any) -> None:
    err = refusal(capsys, "--workers", "2", "--executor_type", "thread")
    assert "--workers N runs each scenario in a worker process" in err
    assert "drop --executor_type thread, or give --workers 0" in err


def test_a_run_budget_without_workers_is_refused(capsys: Any) -> None:
    err = refusal(capsys, "--workers", "0", "--run-budget", "60")
    assert "--run-budget bounds runs in worker processes" in err and "--workers N" in err


def test_a_run_budget_with_the_thread_executor_is_refused(capsys: Any) -> None:
    err = refusal(capsys, "--executor_type", "thread", "--run-budget", "60")
    assert "--run-budget bounds runs in worker processes" in err


def test_ray_with_no_workers_is_refused_saying_to_give_some_per_node(capsys: Any) -> None:
    err = refusal(capsys, "--ray", "auto", "--workers", "0")
    assert "give --workers N (per node) or leave it out" in err


def test_a_run_budget_must_be_positive(capsys: Any) -> None:
    assert "--run-budget" in refusal(capsys, "--workers", "1", "--run-budget", "0")


@pytest.mark.parametrize("name", PRELOAD)
def test_every_module_the_fork_server_preloads_exists(name: str) -> None:
    """multiprocessing skips a preload module that fails to import, silently."""
    assert importlib.util.find_spec(name) is not None


@pytest.fixture
def dying(tmp_path: Path) -> Iterator[Spread]:
    """A `Spread` over two workers whose every run kills its process."""
    thread: LoopThread[None] = LoopThread("test workers")
    pool = WorkerPool(2, handlers.dying, preload=("tests.workers.handlers",))

    async def start() -> None:
        pool.start()
        await pool.ready()

    try:
        thread.call(start(), BOUND_S)
        places = (WorkerPlace(pool, worker, thread, None, str(tmp_path)) for worker in pool.workers)
        yield Spread(places)
    finally:
        thread.call(pool.close(), BOUND_S)
        thread.stop()


async def test_a_run_whose_every_worker_dies_is_run_again_then_given_up(
    dying: Spread, tmp_path: Path
) -> None:
    item = scenario_json(SPECS["tiny_email"])
    with pytest.raises(NoPlaceError, match=f"lost {RERUNS + 1} places running this run"):
        await asyncio.wait_for(dying.run(item, Arguments(None, None, None)), BOUND_S)
    assert len(dying.reruns) == RERUNS + 1
    assert all(line.startswith("tiny_email: worker-") for line in dying.reruns)
    assert "exited with status 3, run again" in dying.reruns[0]
    assert dying.reruns[-1].endswith("not run again (re-runs spent)")
    assert len(dying.places) == 2  # a worker slot comes back: its pool restarted it
