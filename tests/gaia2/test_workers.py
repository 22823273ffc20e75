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

import contextlib
import io
import json
import os
import signal
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from areasync.gaia2.dataset import SPECS
from areasync.gaia2.stub_llm import StubLLM
from areasync.gaia2.sweep import RunRecords
from areasync.workers.pool import POOLS, Worker
from tests.gaia2.pair import PAIR, Evaluation, assert_same_outputs, bench, evaluated_in_one_process
from tests.stubs import stub_fixture, stub_llm

STUCK = SPECS["tiny_skip"]
BOUND_S = 300.0  # a whole bench run, worker starts included, on a busy machine: stops a hang
# Far above a tiny run's time, even with both cores busy: only the held run reaches it. The
# budget test takes this long.
BUDGET_S = 10.0


stub = stub_fixture()


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


def test_a_run_on_workers_confined_by_the_kernel_writes_what_a_one_process_run_writes(
    evaluation: Evaluation, stub: StubLLM, capsys: Any
) -> None:
    """ARE's tools, its judge and the model endpoint all work in a confined worker: the same
    verdicts, the same files."""
    assert (
        bench(evaluation.dataset, evaluation.out, stub, "--workers", "1", "--require-confinement")
        == 0
    )
    err = capsys.readouterr().err
    assert "workers confined by the kernel" in err
    assert f"network: TCP to port {urlsplit(stub.endpoint).port} only" in err
    assert_same_outputs(evaluation.out, evaluation.local)
    evaluation.set_aside("confined")


def test_max_concurrent_scenarios_bounds_the_runs_under_way_over_all_workers(
    evaluation: Evaluation,
) -> None:
    """One run at a time over two workers: the model never answers two requests at once."""
    with stub_llm(latency=0.05) as slow:
        options = ("--workers", "2", "--max_concurrent_scenarios", "1", "--num_runs", "2")
        assert bench(evaluation.dataset, evaluation.root / "one-at-a-time", slow, *options) == 0
        written = (evaluation.root / "one-at-a-time" / "output.jsonl").read_text()
        assert len(written.splitlines()) == 2 * len(PAIR)
        assert slow.peak_concurrency == 1


@dataclass(frozen=True)
class Killing:
    worker: str  # the name of the worker killed
    pid: int  # its process's
    tmp: str  # its temp dir (`confine.Report.tmp`), where its runs staged their files
    status: int
    err: str  # the run's stderr


@pytest.fixture(scope="module")
def killing(evaluation: Evaluation, stub: StubLLM) -> Killing:
    """A run of the pair, one run at a time on 2 workers, whose worker is SIGKILLed while the
    stuck run's first model request is held."""
    hold = stub.hold(STUCK.marker)  # the first request only: the run again is answered
    err = io.StringIO()
    status: list[int] = []

    def run() -> None:
        with contextlib.redirect_stderr(err):
            options = ("--workers", "2", "--max_concurrent_scenarios", "1")
            status.append(bench(evaluation.dataset, evaluation.out, stub, *options))

    running = threading.Thread(target=run)
    running.start()
    try:
        assert hold.arrived.wait(BOUND_S), "the stuck run never asked its model"
        doomed = busy_worker()
        assert doomed.pid is not None and doomed.confined is not None
        pid, tmp = doomed.pid, doomed.confined.tmp
        assert tmp is not None and Path(tmp).is_dir()
        os.kill(pid, signal.SIGKILL)
        running.join(BOUND_S)
        assert not running.is_alive(), f"the run took over {BOUND_S:g} s"
    finally:
        hold.release()
    return Killing(doomed.name, pid, tmp, status[0], err.getvalue())


def test_a_run_whose_worker_is_killed_runs_again_on_another_worker(
    killing: Killing, evaluation: Evaluation
) -> None:
    assert killing.status == 0
    lost = f"{killing.worker} (pid {killing.pid}) was killed by SIGKILL"
    assert f"1 run(s) re-run after their worker was lost: {STUCK.scenario_id}: " in killing.err
    assert f"{lost}, run again" in killing.err
    assert f"{lost}; restarting it" in killing.err
    assert_same_outputs(evaluation.out, evaluation.local)
    evaluation.set_aside("killed")


def test_a_killed_worker_leaves_no_staging_folder(killing: Killing) -> None:
    """The run it had under way staged its files in the worker's own temp dir: removed."""
    assert not Path(killing.tmp).exists()


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


@pytest.mark.slow  # waits out the run budget (`BUDGET_S`)
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
        f"{STUCK.scenario_id} was still going after its budget of {BUDGET_S:g} s: it was "
        "cancelled at its next wait (--run-budget gives runs longer)"
    )
    assert (
        f"1 run(s) ended past their run budget (--run-budget): {STUCK.scenario_id} "
        in (overrun["err"])
    )


@pytest.mark.slow  # waits out the run budget (`BUDGET_S`)
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
