"""A real two-node Ray cluster on this machine for the cluster tests, started and shut down
here: `ray.cluster_utils.Cluster` (a head and one worker node, one CPU each, no dashboard, a
small object store, health checks tightened so that a node killed is declared dead within
seconds, yet loose enough that a node starved of CPU by other work is not). Only the processes
it starts are ever stopped.

Ray is an optional extra (`areasync[ray]`): without it these tests are skipped with the reason,
except in CI (`CI=true`), where a missing Ray fails them: `make install` installs the extra.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

try:
    import ray
    from ray.cluster_utils import Cluster
except ImportError:  # pragma: no cover - depends on the installation
    if os.environ.get("CI", "").lower() == "true":
        raise
    pytest.skip(
        "Ray is not installed: pip install -e '.[ray]' (CI installs it and never skips)",
        allow_module_level=True,
    )

# Bounds on what a busy machine slows most: starting a host actor (a Ray worker process that
# imports areasync and ARE) and a whole `bench run` on the cluster. Generous, since they only
# stop a hang: with both cores held by other work a host start has been seen to take a minute.
# A module's first test also pays for its fixtures' setup, hence the longer per-test timeout.
HOST_START_S = 300.0
RUN_BOUND_S = 600.0
CLUSTER_TEST_TIMEOUT_S = 900

OBJECT_STORE_BYTES = 80 * 2**20
HEALTH_CHECKS: dict[str, Any] = {
    "health_check_initial_delay_ms": 0,
    "health_check_period_ms": 1000,
    "health_check_timeout_ms": 2000,
    "health_check_failure_threshold": 3,
}


@pytest.fixture(scope="package")
def ray_cluster() -> Iterator[tuple[Cluster, Any]]:
    """(the cluster, its worker node): the driver is connected to it. One cluster for the
    package (its start is most of a module's time); `test_batch` runs before `test_cluster`,
    whose last test kills the worker node."""
    if ray.is_initialized():  # pragma: no cover - another module left a driver connected
        pytest.fail("a Ray driver is already connected in this process; these tests start one")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    cluster = Cluster(
        initialize_head=True,
        head_node_args={
            "num_cpus": 1,
            "include_dashboard": False,
            "object_store_memory": OBJECT_STORE_BYTES,
            "_system_config": HEALTH_CHECKS,
        },
    )
    try:
        worker = cluster.add_node(num_cpus=1, object_store_memory=OBJECT_STORE_BYTES)
        cluster.wait_for_nodes(timeout=60)
        ray.init(address=cluster.address, log_to_driver=False)
        yield cluster, worker
    finally:
        ray.shutdown()
        cluster.shutdown()
