"""`areasync bench run --ray`: the runs of an evaluation on the hosts of a real two-node Ray
cluster (`conftest.py`), through Ray calls, write what the same evaluation writes on one
machine; a host killed (SIGKILL of its process) while it runs a run: that run runs again on
another host, and the outputs are still the same.

The evaluation is tests/gaia2/pair.py's: the offline single-turn pair, compared file by file
with the same evaluation in one process.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import Iterator
from typing import Any

import pytest

from areasync.gaia2.stub_llm import StubLLM
from tests.cluster.conftest import CLUSTER_TEST_TIMEOUT_S, HOST_START_S, RUN_BOUND_S
from tests.gaia2.pair import PAIR, Evaluation, assert_same_outputs, bench, evaluated_in_one_process
from tests.stubs import stub_fixture
from tests.waiting import eventually

ray = pytest.importorskip("ray")

from areasync.cluster.nodes import HOST_PREFIX, start_host  # noqa: E402

pytestmark = [
    pytest.mark.timeout(CLUSTER_TEST_TIMEOUT_S),
    pytest.mark.slow,  # a Ray cluster of real processes, and a host killed
]

DOOMED = f"{HOST_PREFIX}0-doomed"  # sorts first: the least loaded among equals


# Each request takes 0.2 s, so that a run is still under way when its host is killed.
stub = stub_fixture(latency=0.2)


@pytest.fixture(scope="module")
def hosts(ray_cluster: Any) -> Iterator[dict[str, Any]]:
    """A host actor on each node (no server: runs need none), as `serve --ray` names them."""
    cluster, worker = ray_cluster
    nodes = [cluster.head_node.node_id, worker.node_id]
    actors = {node: start_host(node) for node in nodes}
    ray.get([actor.ping.remote() for actor in actors.values()], timeout=HOST_START_S)
    yield actors
    for actor in actors.values():
        ray.kill(actor)


@pytest.fixture(scope="module")
def evaluation(tmp_path_factory: pytest.TempPathFactory, stub: StubLLM) -> Evaluation:
    return evaluated_in_one_process(tmp_path_factory.mktemp("batch"), stub)


def test_a_run_on_the_clusters_hosts_writes_what_a_one_machine_run_writes(
    evaluation: Evaluation, hosts: dict[str, Any], stub: StubLLM, capsys: Any
) -> None:
    assert bench(evaluation.dataset, evaluation.out, stub, "--ray", "auto") == 0
    assert "spread over 2 host(s)" in capsys.readouterr().err
    assert_same_outputs(evaluation.out, evaluation.local)
    evaluation.set_aside("ray")


async def test_a_run_whose_host_is_killed_runs_again_on_another_host(
    evaluation: Evaluation, hosts: dict[str, Any], stub: StubLLM, ray_cluster: Any, capsys: Any
) -> None:
    cluster, _ = ray_cluster
    doomed = start_host(cluster.head_node.node_id, name=DOOMED)
    pid = await asyncio.wrap_future(doomed.process_id.remote().future())
    out = evaluation.out
    running = asyncio.create_task(
        asyncio.to_thread(bench, evaluation.dataset, out, stub, "--ray", "auto")
    )
    await eventually(
        lambda: asyncio.wrap_future(doomed.bench_running.remote().future()),
        within=HOST_START_S,
        poll=0.05,
        what="a run on the doomed host",
    )
    os.kill(pid, signal.SIGKILL)
    assert await asyncio.wait_for(running, RUN_BOUND_S) == 0
    err = capsys.readouterr().err
    assert "spread over 3 host(s)" in err
    assert "re-run after their host was lost: " in err and DOOMED in err
    assert_same_outputs(out, evaluation.local)
    records = [json.loads(p.read_text()) for p in (out / ".areasync" / "runs").glob("*.json")]
    assert {r["scenario_id"] for r in records} == set(PAIR)
