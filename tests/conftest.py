"""Shared test setup: make `tests/scenarios.py` importable as `tests.scenarios`, give the
long-running `soak` tests a longer time limit than the suite's global one, and give LiteLLM
the API key it insists on (every model here is the stub LLM on loopback, which ignores it), and
tell pytest-xdist which tests must share one worker."""

from __future__ import annotations

import collections
import os
import sys
from typing import Any

import pytest

# Set, not defaulted: an empty OPENAI_API_KEY in the environment fails LiteLLM the same way.
if not os.environ.get("OPENAI_API_KEY"):
    os.environ["OPENAI_API_KEY"] = "stub"

# pyproject's `timeout` (pytest-timeout) bounds every test; soak and fuzz runs are sized by
# environment variables (SOAK_SECONDS, STORM_SECONDS, FUZZ_EXAMPLES) and may take much longer.
SOAK_TIMEOUT_S = 3 * 3600


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("soak") and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(SOAK_TIMEOUT_S))


# Under pytest-xdist (`make unit`: `-n 2 --dist loadgroup`) a test goes to whichever worker is
# free, except the tests that share a module- or package-scoped fixture (a server, a Gaia2 run
# that several tests compare, tests/cluster's one Ray cluster): those of a module in
# WHOLE_MODULES run whole on one worker, and so do those of a package in WHOLE_PACKAGES, in
# collection order. The fixture is then set up once, as in a serial run, and order-dependent
# tests keep their order (tests/cluster: test_batch, then test_cluster, whose last test kills
# its worker node). tests/test_suite_bounds.py checks that the lists miss no such test.
# xdist's own `xdist_group` marks cannot say this: under pytest 9.2, xdist fails to tag the
# test ids with their group (it sets an attribute pytest no longer reads) and groups nothing.
WHOLE_PACKAGES = ("tests/cluster/",)
WHOLE_MODULES = (  # a module, or every module under a directory ending in "/"
    "tests/agents/",
    "tests/conformance/test_conformance_reference.py",
    "tests/simulation/test_replay.py",
    "tests/simulation/test_snapshots.py",
    "tests/service/dashboard/",
    "tests/gaia2/",
    "tests/cli/test_cli_serve.py",
    "tests/service/durability/test_durable_judged.py",
    "tests/service/durability/test_durable_judged_crash.py",
    "tests/service/sessions/test_gaia2_judge.py",
    "tests/test_import_rules.py",
)


def worker_scope(nodeid: str) -> str:
    """What runs whole on one worker with the test `nodeid`: its package, its module, or it."""
    module = nodeid.split("::", 1)[0]
    package = next((p for p in WHOLE_PACKAGES if module.startswith(p)), None)
    if package is not None:
        return package
    return module if module.startswith(WHOLE_MODULES) else nodeid


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook: unknown when it is not installed
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class WholeGroupScheduling(LoadScopeScheduling):
        """xdist's scope scheduling with `worker_scope`'s scopes; its largest scopes first."""

        def _split_scope(self, nodeid: str) -> str:
            return worker_scope(nodeid)

    return WholeGroupScheduling(config, log)


# The counters of what the fuzz, storm and durable fault tests did, by name: the module that
# keeps each (imported only where such tests ran) and its attribute.
TALLIES = {
    "fuzz": ("tests.hardening.fuzzing", "TALLY"),
    "storm": ("tests.hardening.storm", "TALLY"),
    "durable_faults": ("tests.service.durable_support", "TALLY"),
}
# In xdist's controlling process, which runs no test: what its workers counted.
RECEIVED: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)


def tally(name: str) -> collections.Counter[str]:
    """This process's counter `name` plus what workers sent of it."""
    module, attribute = TALLIES[name]
    own = getattr(sys.modules.get(module), attribute, collections.Counter())
    return collections.Counter(own) + RECEIVED[name]


def pytest_sessionfinish(session: pytest.Session) -> None:
    output = getattr(session.config, "workeroutput", None)  # only in an xdist worker
    if output is not None:
        output["tallies"] = {name: dict(tally(name)) for name in TALLIES}


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook: unknown when it is not installed
def pytest_testnodedown(node: Any, error: Any) -> None:
    for name, counts in getattr(node, "workeroutput", {}).get("tallies", {}).items():
        RECEIVED[name].update(counts)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if (fuzz := tally("fuzz"))["runs"]:
        terminalreporter.write_line(
            f"fuzz: {fuzz['runs']} runs, {fuzz['frames']} hostile frames "
            f"({fuzz['fresh']} on fresh connections) sent"
        )
    if (storms := tally("storm"))["storms"]:
        terminalreporter.write_line(
            f"storm: {storms['storms']} storms, {storms['clients']} clients, {storms['cuts']} "
            f"disconnects ({storms['cuts_during_run']} of the raw observers' mid-run), "
            f"{storms['evictions']} evictions, {storms['items']} items received in order"
        )
    if (faults := tally("durable_faults"))["runs"]:
        terminalreporter.write_line(
            f"durable faults: {faults['runs']} runs, {faults['kills']} SIGKILLs, "
            f"{faults['resolved']} requests in flight at a kill resolved from the stream, "
            f"{faults['clients']} clients, {faults['reconnects']} reconnects, "
            f"{faults['items']} items checked exactly once"
        )
