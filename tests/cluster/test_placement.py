"""Where the router places a session (`cluster/placement.py`, sans-I/O): on the node whose
session workers carry the fewest sessions each, so that a node with more CPUs takes more."""

from __future__ import annotations

import pytest

pytest.importorskip("ray")

from areasync.cluster.placement import Load, least_loaded, spread


def test_a_node_with_more_workers_takes_the_session_when_each_worker_carries_fewer() -> None:
    loads = {"a-small": Load(live=2, workers=1), "b-large": Load(live=3, workers=4)}
    assert least_loaded(loads) == "b-large"


def test_sessions_spread_in_proportion_to_each_nodes_workers() -> None:
    loads = {"a": Load(workers=1), "b": Load(workers=3)}
    plan = spread([f"s{n}" for n in range(8)], loads)
    assert {node: len(ids) for node, ids in plan.items()} == {"a": 2, "b": 6}


def test_equal_loads_per_worker_go_to_the_node_using_less_memory() -> None:
    loads = {"a": Load(live=2, workers=2, rss=200), "b": Load(live=1, workers=1, rss=100)}
    assert least_loaded(loads) == "b"
