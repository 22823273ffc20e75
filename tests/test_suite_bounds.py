"""The suite never hangs: every test runs under pytest-timeout's limit. `make unit` runs it on
pytest-xdist workers, each module whole on one worker and tests/cluster (one Ray cluster) too."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import (
    SOAK_TIMEOUT_S,
    pytest_collection_modifyitems,
    pytest_xdist_make_scheduler,
    worker_scope,
)

MAKEFILE = Path(__file__).resolve().parents[1] / "Makefile"


def test_every_test_has_a_global_time_limit(pytestconfig: pytest.Config) -> None:
    assert pytestconfig.pluginmanager.hasplugin("timeout")
    assert 0 < float(pytestconfig.getini("timeout")) <= 600


def test_soak_tests_get_a_longer_limit(request: pytest.FixtureRequest) -> None:
    item = pytest.Function.from_parent(request.node.parent, name=request.node.name)
    item.add_marker(pytest.mark.soak)
    pytest_collection_modifyitems([item])
    marker = item.get_closest_marker("timeout")
    assert marker is not None and marker.args == (SOAK_TIMEOUT_S,)


def test_make_unit_runs_the_suite_on_xdist_workers() -> None:
    recipe = re.search(r"^unit:.*\n\t(.*)$", MAKEFILE.read_text(), re.MULTILINE)
    assert recipe is not None
    assert re.search(r"-m pytest .*-n \S+ .*--dist loadgroup", recipe[1]), recipe[1]


def test_the_scheduler_keeps_a_shared_module_or_package_on_one_worker(
    pytestconfig: pytest.Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("xdist")
    monkeypatch.setattr(pytestconfig.option, "dist", "loadgroup", raising=False)
    monkeypatch.setattr(pytestconfig.option, "tx", ["2*popen"], raising=False)
    scope = pytest_xdist_make_scheduler(pytestconfig, None)._split_scope
    assert scope("tests/cluster/test_batch.py::test_a") == scope("tests/cluster/test_cluster.py::b")
    assert scope("tests/gaia2/test_parity.py::a") == scope("tests/gaia2/test_parity.py::b[x]")
    assert scope("tests/gaia2/test_parity.py::a") != scope("tests/gaia2/test_sweep.py::a")
    assert scope("tests/engine/test_clock.py::a") != scope("tests/engine/test_clock.py::b")
    monkeypatch.setattr(pytestconfig.option, "dist", "load")
    assert pytest_xdist_make_scheduler(pytestconfig, None) is None


def test_every_test_sharing_a_module_or_package_fixture_runs_with_its_module_or_package(
    request: pytest.FixtureRequest,
) -> None:
    """Over the tests of this run (under `make unit`, each worker collects the whole suite)."""
    strays = []
    for item in request.session.items:
        scopes = {
            definition.scope
            for definitions in item._fixtureinfo.name2fixturedefs.values()  # type: ignore[attr-defined]
            for definition in definitions
        }
        scope = worker_scope(item.nodeid)
        shared_module = "module" in scopes and scope == item.nodeid
        shared_package = "package" in scopes and not scope.endswith("/")
        if shared_module or shared_package:
            strays.append(item.nodeid)
    assert not strays, f"add them to tests/conftest.py's WHOLE_MODULES or WHOLE_PACKAGES: {strays}"


def test_every_test_that_drives_a_browser_or_node_is_marked_browser(
    request: pytest.FixtureRequest,
) -> None:
    """Over the tests of this run: those given a Playwright `browser` or running Node.js."""

    def drives_one(item: pytest.Item) -> bool:
        module = getattr(item, "module", None)
        return "browser" in getattr(item, "fixturenames", ()) or hasattr(module, "NODE")

    unmarked = [
        item.nodeid
        for item in request.session.items
        if drives_one(item) and item.get_closest_marker("browser") is None
    ]
    assert not unmarked, f"mark them pytest.mark.browser (make test-browser): {unmarked}"


def test_make_test_browser_runs_the_browser_tests_that_make_test_runs() -> None:
    recipe = re.search(r"^test-browser:.*\n\t(.*)$", MAKEFILE.read_text(), re.MULTILINE)
    assert recipe is not None
    assert "-m 'browser and not slow and not soak'" in recipe[1], recipe[1]
