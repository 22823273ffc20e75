"""Shared test setup: make `tests/scenarios.py` importable as `tests.scenarios`, give the
long-running `soak` tests a longer time limit than the suite's global one, and give LiteLLM
the API key it insists on (every model here is the stub LLM on loopback, which ignores it)."""

from __future__ import annotations

import os

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
