"""`areasync bench run --workers N`: runs in supervised worker processes of this machine write
what the same evaluation writes in one process; a worker killed mid-run (SIGKILL of its pid,
found through its pool) has its run run again on another worker, with the same outputs; a run
stuck past `--run-budget` is a failed run that says so, and the other runs complete.

The evaluation is the offline single-turn pair (`tiny_email` passes, `tiny_skip` fails) against
the stub LLM, run into the same `--output_dir` path each time and moved aside after, compared
file by file with `compare.comparable` (ids, timings and line order masked). The stub holds a
run's model request while the test needs that run under way (`StubLLM.hold`): no test depends
on the machine's speed, and every wait is bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from areasync.gaia2 import compare
from areasync.gaia2.cli import main as bench_main
from areasync.gaia2.compare import comparable
from areasync.gaia2.dataset import SPECS, agent_scripts, write_dataset
from areasync.gaia2.stub_llm import Script, StubLLM
from areasync.gaia2.sweep import RunRecords
from areasync.workers.pool import POOLS, Worker

PAIR = ("tiny_email", "tiny_skip")
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
def evaluation(tmp_path_factory: pytest.TempPathFactory, stub: StubLLM) -> dict[str, Any]:
    """The dataset, the output dir every run writes to, and the one-process run's output."""
    root = tmp_path_factory.mktemp("workers")
    dataset = write_dataset(root / "dataset", only=PAIR)
    out = root / "out"
    assert bench(dataset, out, stub, "--workers", "0") == 0
    local = out.rename(root / "local")
    return {"dataset": dataset, "out": out, "local": local, "root": root}


def bench(dataset: Path, out: Path, stub: StubLLM, *extra: str) -> int:
    os.environ.setdefault("OPENAI_API_KEY", "stub")
    args = compare.bench_args(
        dataset, out, stub.endpoint, extra=["--max_concurrent_scenarios", "4", *extra]
    )
    return bench_main(args)


def assert_same_outputs(out: Path, local: Path) -> None:
    ours, theirs = comparable(out), comparable(local)
    assert sorted(ours) == sorted(theirs)
    for name in theirs:
        assert ours[name] == theirs[name], name


def set_aside(evaluation: dict[str, Any], name: str) -> None:
    shutil.move(evaluation["out"], evaluation["root"] / name)


def rows(out: Path) -> dict[str, dict[str, Any]]:
    lines = (out / "output.jsonl").read_text().splitlines()
    return {row["task_id"]: row for row in map(json.loads, lines)}


def busy_worker() -> Worker:
    """The one worker, of the one pool open, with a run under way."""
    (pool,) = list(POOLS)
    (worker,) = [worker for worker in pool.workers if worker.running]
    return worker


def test_a_run_on_two_workers_writes_what_a_one_process_run_writes(
    evaluation: dict[str, Any], stub: StubLLM, capsys: Any
) -> None:
    assert bench(evaluation["dataset"], evaluation["out"], stub, "--workers", "2") == 0
    assert "runs spread over 2 worker process(es)" in capsys.readouterr().err
    assert_same_outputs(evaluation["out"], evaluation["local"])
    set_aside(evaluation, "two")


async def test_a_run_whose_worker_is_killed_runs_again_on_another_worker(
    evaluation: dict[str, Any], stub: StubLLM, capsys: Any
) -> None:
    hold = stub.hold(STUCK.marker)  # the stuck run's first model request only
    try:
        running = asyncio.create_task(
            asyncio.to_thread(
                bench,
                evaluation["dataset"],
                evaluation["out"],
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
    assert_same_outputs(evaluation["out"], evaluation["local"])
    set_aside(evaluation, "killed")


@pytest.fixture(scope="module")
def overrun(evaluation: dict[str, Any], stub: StubLLM) -> dict[str, Any]:
    """A run of the pair whose stuck run's model never answers, within `BUDGET_S`."""
    out = evaluation["root"] / "overrun"
    hold = stub.hold(STUCK.marker, requests=None)
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            status = bench(
                evaluation["dataset"], out, stub, "--workers", "2", "--run-budget", str(BUDGET_S)
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
    overrun: dict[str, Any], evaluation: dict[str, Any], stub: StubLLM
) -> None:
    records = {record.scenario_id: record for record in RunRecords(overrun["out"]).all()}
    assert records[STUCK.scenario_id].exception_type == "RunBudgetExceeded"
    assert not records[STUCK.scenario_id].infrastructure_failure
    before = len(stub.requests)
    assert bench(evaluation["dataset"], overrun["out"], stub, "--workers", "2", "--resume") == 0
    assert len(stub.requests) == before
    assert rows(overrun["out"])[STUCK.scenario_id]["metadata"]["status"] == "failed"
