"""The stub LLM the suite talks to, started one way everywhere.

`StubLLM` (areasync/gaia2/stub_llm.py) serves an OpenAI-compatible API on loopback from a
script. A module whose tests share one declares `stub = stub_fixture()` (the bundled scenarios'
agent scripts) or `stub = stub_fixture(lambda: Script(...))`: a module-scoped fixture named
`stub`. A test that needs one of its own (another script, a latency) opens `stub_llm(...)`.
LiteLLM insists on an API key the stub ignores: one is set while the stub serves.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from areasync.gaia2.dataset import agent_scripts
from areasync.gaia2.stub_llm import Script, StubLLM


def default_script() -> Script:
    """The agent scripts of the bundled scenarios, no judge rules."""
    return Script(agent=agent_scripts())


@contextmanager
def stub_llm(script: Script | None = None, *, latency: float = 0.0) -> Iterator[StubLLM]:
    """A stub LLM serving `script` (default: `default_script()`), each answer `latency` s late."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("OPENAI_API_KEY", os.environ.get("OPENAI_API_KEY") or "stub")
        with StubLLM(default_script() if script is None else script, latency=latency) as server:
            yield server


def stub_fixture(
    script: Callable[[], Script] = default_script, *, latency: float = 0.0, name: str = "stub"
) -> Any:
    """A module-scoped fixture `name`: one stub LLM serving `script()` for the module's tests."""

    @pytest.fixture(scope="module", name=name)
    def stub() -> Iterator[StubLLM]:
        with stub_llm(script(), latency=latency) as server:
            yield server

    return stub
