"""`areasync bench run --ray`: the runs of an evaluation in worker processes on every node of
a real two-node Ray cluster (`conftest.py`), kept by a bench host per node, write what the same
evaluation writes on one machine; a node's host killed (SIGKILL of its process) while a run is
under way there: that run runs again on the other node, and the outputs are still the same; a
run stuck past `--run-budget` is ended and reported with that reason while the others complete; a
host runs at its node's own priority, not at Ray's worker niceness.

The evaluation is tests/gaia2/pair.py's: the offline single-turn pair, compared file by file
with the same evaluation in one process. The stub holds a run's model request while the test
needs that run under way (`StubLLM.hold`): no test depends on the machine's speed.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import threading
from typing import Any

import pytest

from areasync.gaia2.dataset import SPECS
from areasync.gaia2.stub_llm import StubLLM
from tests.cluster.conftest import CLUSTER_TEST_TIMEOUT_S, HOST_START_S, RUN_BOUND_S
from tests.gaia2.pair import PAIR, Evaluation, assert_same_outputs, bench, evaluated_in_one_process
from tests.stubs import stub_fixture

ray = pytest.importorskip("ray")

from areasync.cluster.batch import BENCH_PREFIX  # noqa: E402
from areasync.cluster.nodes import alive_nodes, start_host  # noqa: E402

pytestmark = [
    pytest.mark.timeout(CLUSTER_TEST_TIMEOUT_S),
    pytest.mark.slow,  # a Ray cluster of real processes, and a host killed
]

STUCK = SPECS["tiny_skip"]
# Far above a tiny run's time, even with both cores busy: only the held run reaches it. The
# budget test takes this long.
BUDGET_S = 30.0  # a bound the stuck run passes and the others stay well within, on a busy machine

stub = stub_fixture()


@pytest.fixture(scope="module")
def evaluation(tmp_path_factory: pytest.TempPathFactory, stub: StubLLM) -> Evaluation:
    return evaluated_in_one_process(tmp_path_factory.mktemp("batch"), stub)


def bench_hosts() -> dict[str, Any]:
    """The bench hosts running now, by name."""
    names = [n for n in ray.util.list_named_actors() if n.startswith(BENCH_PREFIX)]
    return {name: ray.get_actor(name) for name in names}


def test_a_host_runs_at_its_nodes_priority_not_at_rays_worker_niceness(
    ray_cluster: Any,
) -> None:
    # Ray starts its workers at niceness 15: a host at 15, and every process it forks, would
    # get a thirtieth of an ordinary process's CPU share on a busy node. The nodes' own
    # priority is this process's, which started them (conftest.py).
    head = ray.get_runtime_context().get_node_id()
    assert head in alive_nodes()
    host = start_host(head, name=f"{BENCH_PREFIX}priority")
    try:
        pid = ray.get(host.process_id.remote(), timeout=HOST_START_S)
        assert os.getpriority(os.PRIO_PROCESS, pid) == os.getpriority(os.PRIO_PROCESS, 0)
    finally:
        ray.kill(host)


def test_a_run_on_every_nodes_workers_writes_what_a_one_machine_run_writes(
    evaluation: Evaluation, ray_cluster: Any, stub: StubLLM, capsys: Any
) -> None:
    assert bench(evaluation.dataset, evaluation.out, stub, "--ray", "auto") == 0
    # Both nodes are this machine: each runs a worker per CPU this process may use.
    workers = 2 * len(os.sched_getaffinity(0))
    assert f"spread over {workers} worker process(es) on 2 node(s)" in capsys.readouterr().err
    assert_same_outputs(evaluation.out, evaluation.local)
    assert bench_hosts() == {}  # ended with the evaluation
    evaluation.set_aside("ray")


def test_a_run_whose_nodes_host_is_killed_runs_again_on_the_other_node(
    evaluation: Evaluation, ray_cluster: Any, stub: StubLLM
) -> None:
    hold = stub.hold(STUCK.marker)  # the first request only: the run again is answered
    err = io.StringIO()
    status: list[int] = []

    def run() -> None:
        with contextlib.redirect_stderr(err):
            options = ("--ray", "auto", "--workers", "1")
            status.append(bench(evaluation.dataset, evaluation.out, stub, *options))

    running = threading.Thread(target=run)
    running.start()
    try:
        # Both hosts' starts, a worker's, and the run up to its model request.
        assert hold.arrived.wait(RUN_BOUND_S), "the stuck run never asked its model"
        # The stuck run's host: the other may still be running the other run.
        stuck = [
            actor
            for actor in bench_hosts().values()
            if STUCK.scenario_id in ray.get(actor.bench_runs.remote(), timeout=HOST_START_S)
        ]
        assert len(stuck) == 1
        os.kill(ray.get(stuck[0].process_id.remote(), timeout=HOST_START_S), signal.SIGKILL)
        running.join(RUN_BOUND_S)
        assert not running.is_alive(), f"the run took over {RUN_BOUND_S:g} s"
    finally:
        hold.release()
    assert status == [0]
    said = err.getvalue()
    assert "re-run after their worker was lost: " in said and "was lost, run again" in said
    assert_same_outputs(evaluation.out, evaluation.local)
    records = [
        json.loads(p.read_text()) for p in (evaluation.out / ".areasync" / "runs").glob("*.json")
    ]
    assert {r["scenario_id"] for r in records} == set(PAIR)
    evaluation.set_aside("killed")


def test_a_run_past_its_budget_on_the_cluster_is_ended_and_reported_and_the_others_complete(
    evaluation: Evaluation, ray_cluster: Any, stub: StubLLM
) -> None:
    out = evaluation.root / "overrun"
    hold = stub.hold(STUCK.marker, requests=None)
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            options = ("--ray", "auto", "--workers", "1", "--run-budget", str(BUDGET_S))
            status = bench(evaluation.dataset, out, stub, *options)
    finally:
        hold.release()
    assert status == 0
    lines = (out / "output.jsonl").read_text().splitlines()
    table = {row["task_id"]: row for row in map(json.loads, lines)}
    assert table["tiny_email"]["metadata"]["status"] == "success"
    stuck = table[STUCK.scenario_id]["metadata"]
    assert (stuck["status"], stuck["exception_type"]) == ("failed", "RunBudgetExceeded")
    assert f"after its budget of {BUDGET_S:g} s" in stuck["exception_message"]
    assert (
        f"1 run(s) ended past their run budget (--run-budget): {STUCK.scenario_id} "
        in err.getvalue()
    )
