"""The suite never hangs: every test runs under pytest-timeout's limit."""

from __future__ import annotations

import pytest

from tests.conftest import SOAK_TIMEOUT_S, pytest_collection_modifyitems


def test_every_test_has_a_global_time_limit(pytestconfig: pytest.Config) -> None:
    assert pytestconfig.pluginmanager.hasplugin("timeout")
    assert 0 < float(pytestconfig.getini("timeout")) <= 600


def test_soak_tests_get_a_longer_limit(request: pytest.FixtureRequest) -> None:
    item = pytest.Function.from_parent(request.node.parent, name=request.node.name)
    item.add_marker(pytest.mark.soak)
    pytest_collection_modifyitems([item])
    marker = item.get_closest_marker("timeout")
    assert marker is not None and marker.args == (SOAK_TIMEOUT_S,)
