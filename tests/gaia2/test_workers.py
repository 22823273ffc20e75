"""`areasync bench run --workers N`: runs in supervised worker processes of this machine write
what the same evaluation writes in one process; a worker killed mid-run (SIGKILL of its pid,
found through its pool) has its run run again on another worker, with the same outputs; a run
stuck past `--run-budget` is a failed run that says so, and the other runs complete.

The evaluation is tests/gaia2/pair.py's: the offline single-turn pair, compared file by file
with the same evaluation in one process. The stub holds a run's model request while the test
needs that run under way (`StubLLM.hold`): no test depends on the machine's speed, and every
wait is bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from areasync.gaia2.dataset import SPECS, agent_scripts
from areasync.gaia2.stub_llm import Script, StubLLM
from areasync.gaia2.sweep import RunRecords
from areasync.workers.pool import POOLS, Worker
from tests.gaia2.pair import Evaluation, assert_same_outputs, bench, evaluated_in_one_process

STUCK = SPECS["tiny_skip"]
BOUND_S = 300.0  # a whole bench run, worker starts included, on a busy machine: stops a hang
# Far above a tiny run's time, even with both cores busy: only the held run reaches it. The
# budget test takes this long.
BUDGET_S = 10.0


@pytest.fixture(scope="module")
def stub() -> Iterator[StubLLM]:
    with StubLLM(Script(agent=agent_scripts())) as server:
        yield server


@pytest.fixture(scope="module")
def evaluation(tmp_path_factory: pytest.TempPathFactory, stub: StubLLM) -> Evaluation:
    return evaluated_in_one_process(tmp_path_factory.mktemp("workers"), stub)


def rows(out: Path) -> dict[str, dict[str, Any]]:
    lines = (out / "output.jsonl").read_text().splitlines()
    return {row["task_id"]: row for row in map(json.loads, lines)}


def busy_worker() -> Worker:
    """The one worker, of the one pool open, with a run under way."""
    (pool,) = list(POOLS)
    (worker,) = [worker for worker in pool.workers if worker.running]
    return worker


def test_a_run_on_two_workers_writes_what_a_one_process_run_writes(
    evaluation: Evaluation, stub: StubLLM, capsys: Any
) -> None:
    assert bench(evaluation.dataset, evaluation.out, stub, "--workers", "2") == 0
    assert "runs spread over 2 worker process(es)" in capsys.readouterr().err
    assert_same_outputs(evaluation.out, evaluation.local)
    evaluation.set_aside("two")


async def test_a_run_whose_worker_is_killed_runs_again_on_another_worker(
    evaluation: Evaluation, stub: StubLLM, capsys: Any
) -> None:
    hold = stub.hold(STUCK.marker)  # the stuck run's first model request only
    try:
        running = asyncio.create_task(
            asyncio.to_thread(
                bench,
                evaluation.dataset,
                evaluation.out,
                stub,
                "--workers",
                "2",
                "--max_concurrent_scenarios",
                "1",
            )
        )
        assert await asyncio.to_thread(hold.arrived.wait, BOUND_S), "the run never asked"
        doomed = busy_worker()
        pid = doomed.pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        assert await asyncio.wait_for(running, BOUND_S) == 0
    finally:
        hold.release()
    err = capsys.readouterr().err
    assert f"1 run(s) re-run after their worker was lost: {STUCK.scenario_id}: " in err
    assert f"{doomed.name} (pid {pid}) was killed by SIGKILL, run again" in err
    assert f"{doomed.name} (pid {pid}) was killed by SIGKILL; restarting it" in err
    assert_same_outputs(evaluation.out, evaluation.local)
    evaluation.set_aside("killed")


@pytest.fixture(scope="module")
def overrun(evaluation: Evaluation, stub: StubLLM) -> dict[str, Any]:
    """A run of the pair whose stuck run's model never answers, within `BUDGET_S`."""
    out = evaluation.root / "overrun"
    hold = stub.hold(STUCK.marker, requests=None)
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            status = bench(
                evaluation.dataset, out, stub, "--workers", "2", "--run-budget", str(BUDGET_S)
            )
    finally:
        hold.release()
    return {"out": out, "status": status, "err": err.getvalue()}


def test_a_run_past_its_budget_is_a_failed_run_saying_so_and_the_others_complete(
    overrun: dict[str, Any],
) -> None:
    assert overrun["status"] == 0
    table = rows(overrun["out"])
    assert table["tiny_email"]["metadata"]["status"] == "success"
    stuck = table[STUCK.scenario_id]["metadata"]
    assert stuck["status"] == "failed"
    assert stuck["exception_type"] == "RunBudgetExceeded"
    assert stuck["exception_message"] == (
        f"{STUCK.scenario_id} still going after its budget of {BUDGET_S:g} s: it was "
        "cancelled at its next wait"
    )
    assert (
        f"1 run(s) ended past their run budget (--run-budget): {STUCK.scenario_id} "
        in (overrun["err"])
    )


def test_a_run_ended_by_its_budget_is_recorded_so_resume_does_not_run_it_again(
    overrun: dict[str, Any], evaluation: Evaluation, stub: StubLLM
) -> None:
    records = {record.scenario_id: record for record in RunRecords(overrun["out"]).all()}
    assert records[STUCK.scenario_id].exception_type == "RunBudgetExceeded"
    assert not records[STUCK.scenario_id].infrastructure_failure
    before = len(stub.requests)
    assert bench(evaluation.dataset, overrun["out"], stub, "--workers", "2", "--resume") == 0
    assert len(stub.requests) == before
    assert rows(overrun["out"])[STUCK.scenario_id]["metadata"]["status"] == "failed"
