"""Run ARE's own test modules against `SyncEnvironment` instead of ARE's threaded `Environment`.

ARE ships its tests with the package (`are/simulation/tests`). The modules re-exported here
exercise exactly the API `SyncEnvironment` promises to keep: start/join/stop, the
time-based and queue-based loops, scheduling and dependencies, condition and validation events,
notifications and `SystemApp.wait_for_notification`. Each `test_are_<name>.py` next to this file
re-exports one ARE module unchanged (`from are.simulation.tests.<module> import *`); the
autouse fixture below then swaps, for the duration of each test only:

* `Environment` -> `SyncEnvironment` in the ARE test module's own namespace (the test functions
  keep their original globals, so that is where the name must change), and in the ARE library
  modules those tests reach an `Environment` through (`ENVIRONMENT_USERS`);
* the `time` module seen by the test module -> a clock whose `sleep` moves the virtual wall
  (`VirtualWall.sleep`) instead of blocking, and whose readings are real time plus every
  virtual second slept. None of the listed modules sleeps today, so their elapsed-time checks
  (`elapsed < 2` around `wait_for_notification`) stay real-time checks: our wait must be fast
  in fact, not merely on a virtual wall. A future `time.sleep(x)` "while the env runs in the
  background" still works: the wall moves and every environment bound to it runs what falls due;
* `areasync.bridge.sync.DEFAULT_WALL` -> a fresh `VirtualWall`, so no test sees another's clock.

Two guards make the substitution honest: a test fails if it constructs a plain ARE `Environment`
(a path we did not substitute) or starts a thread (ARE's event loop, or anything else).
Nothing in the installed ARE package is modified; every swap is undone after the test.
"""

from __future__ import annotations

import importlib
import threading
import time as _real_time
import types
import warnings
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest
from are.simulation.environment import Environment

import areasync.bridge.sync as sync_module
from areasync.bridge.sync import SyncEnvironment, VirtualWall

# ARE library modules that construct an `Environment` by a name imported at module level and
# that some listed test reaches. None does today: scenarios_test and timeout_agent_validation_test
# build their environments themselves, benchmark_scenario_test mocks it, and the helpers that do
# construct one (scenario_imported_from_json.utils, scenario_runner, benchmark.scenario_executor)
# are not on any listed test's path. Guard 1 below fails any test that starts reaching one.
ENVIRONMENT_USERS: tuple[str, ...] = ()

# Registered scenarios that `scenarios_test.test_run_scenario` cannot run here, and why. Both are
# out of scope for conformance (tests needing the network, the Hugging Face Hub or MCP).
OUT_OF_SCOPE_SCENARIOS: dict[str, str] = {
    "scenario_hf_demo_mcp": (
        "needs network: initialize() downloads its universe from the Hugging Face Hub "
        "(meta-agents-research-environments/gaia2) and then starts the MCP servers it lists"
    ),
    "scenario_mcp_demo": (
        "MCP: its apps spawn MCP servers as subprocesses (needing the `mcp` package) and talk "
        "to them from a background asyncio thread"
    ),
}


class WallTime(types.ModuleType):
    """A stand-in for the `time` module: `sleep` moves the virtual wall instead of blocking.

    Readings are the real clock plus the virtual seconds slept so far, so that `t0 = time();
    sleep(5); time() - t0 >= 5` holds as it does under ARE, while work done between readings
    still counts at its real cost.
    """

    def __init__(self, wall: VirtualWall) -> None:
        super().__init__("time")
        self._wall = wall
        self._slept = 0.0

    def __getattr__(self, name: str) -> Any:
        # Everything not overridden (strftime, struct_time, gmtime...) is the real module's.
        return getattr(_real_time, name)

    def sleep(self, seconds: float) -> None:
        self._slept += seconds
        self._wall.sleep(seconds)

    def time(self) -> float:
        return _real_time.time() + self._slept

    def monotonic(self) -> float:
        return _real_time.monotonic() + self._slept

    def perf_counter(self) -> float:
        return _real_time.perf_counter() + self._slept


@pytest.hookimpl(wrapper=True)
def pytest_pycollect_makeitem(
    collector: pytest.Collector, name: str, obj: object
) -> Generator[Any, Any, Any]:
    # ARE's scenarios_test parametrizes over generators, which this pytest deprecates at
    # collection. That is ARE's code, kept unchanged; keep the run's output about our environment.
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore",
            message="Passing a non-Collection iterable to parametrize",
            category=pytest.PytestDeprecationWarning,
        )
        return (yield)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip, with the reason, the ARE tests that need the network (HF Hub, MCP servers)."""
    here = Path(__file__).parent
    for item in items:
        if item.path.parent != here or getattr(item, "originalname", None) != "test_run_scenario":
            continue
        scenario_t = item.callspec.params.get("scenario_t")  # type: ignore[attr-defined]
        reason = OUT_OF_SCOPE_SCENARIOS.get(getattr(scenario_t, "scenario_id", None) or "")
        if reason is not None:
            item.add_marker(pytest.mark.skip(reason=reason))


def _are_test_module(item: pytest.Item) -> types.ModuleType:
    """The ARE module a collected test function really lives in (its globals)."""
    function = getattr(item, "function", None)
    assert function is not None, f"{item.nodeid} is not a test function"
    return importlib.import_module(function.__module__)


@pytest.fixture(autouse=True)
def are_on_sync_environment(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[VirtualWall]:
    """Substitute SyncEnvironment and the virtual wall for one ARE test; undo afterwards."""
    wall = VirtualWall()
    monkeypatch.setattr(sync_module, "DEFAULT_WALL", wall)

    module = _are_test_module(request.node)
    targets = [module, *(importlib.import_module(name) for name in ENVIRONMENT_USERS)]
    for target in targets:
        if getattr(target, "Environment", None) is Environment:
            monkeypatch.setattr(target, "Environment", SyncEnvironment)
    if getattr(module, "time", None) is _real_time:
        monkeypatch.setattr(module, "time", WallTime(wall))

    # Guard 1: every environment built during the test must be ours.
    plain: list[str] = []
    original_init = Environment.__init__

    def checked_init(self: Environment, *args: Any, **kwargs: Any) -> None:
        if not isinstance(self, SyncEnvironment):
            plain.append(type(self).__qualname__)
        original_init(self, *args, **kwargs)

    monkeypatch.setattr(Environment, "__init__", checked_init)

    # Guard 2: nothing starts a thread (ARE's event loop would be one).
    started: list[str] = []
    original_start = threading.Thread.start

    def checked_start(self: threading.Thread) -> None:
        started.append(self.name)
        original_start(self)

    monkeypatch.setattr(threading.Thread, "start", checked_start)

    yield wall

    assert not plain, (
        f"the test built ARE's own Environment ({plain}): a code path reaches it by a name "
        "that is not substituted; add its module to ENVIRONMENT_USERS"
    )
    assert not started, f"the test started threads {started}; SyncEnvironment must not"
