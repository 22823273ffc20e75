"""An OpenEnv action goes the way a WebSocket frame goes (`service/connection/inprocess.py`), in the
cases where the episode, calling the request dispatcher directly, answered otherwise: a refused call
that the journal records, and the metrics of tool calls and of errors; and an episode whose
client the gate closed says hello again on reset, as a WebSocket client reconnects.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.service.adapters.openenv.client import GenericEnvClient
from tests.service.adapters.openenv.test_openenv_durable import (
    SEND,
    HeldSync,
    agent_url,
    answered_after_the_sync,
)
from tests.service.support import WAIT, serving

BAD_ARGS = {"action_type": "call_tool", **SEND, "tool_args": {"nope": 1}}
CALL = {"action_type": "call_tool", **SEND, "tool_args": {"content": "hi"}, "advance_time": False}


async def test_an_error_for_a_call_the_journal_records_waits_for_the_record_to_be_durable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = HeldSync(monkeypatch)
    async with (
        serving(state_dir=tmp_path) as service,
        GenericEnvClient(base_url=agent_url(service)) as env,
    ):

        async def refused_step() -> None:
            with pytest.raises(RuntimeError, match="EXECUTION_ERROR"):
                await env.step(BAD_ARGS)

        with anyio.fail_after(WAIT):
            await env.reset()
            order = await answered_after_the_sync(held, refused_step)
    assert order == ["released", "answered"]


async def test_a_tool_call_is_counted_as_a_tool_call_in_the_metrics() -> None:
    async with serving() as service, GenericEnvClient(base_url=agent_url(service)) as env:
        calls = service.registry.metrics.tool_call_seconds
        with anyio.fail_after(WAIT):
            await env.reset()
            before = calls.count
            await env.step(CALL)
        assert calls.count == before + 1


async def test_a_refused_tool_call_is_counted_by_its_error_code_in_the_metrics() -> None:
    async with serving() as service, GenericEnvClient(base_url=agent_url(service)) as env:
        errors = service.registry.metrics.errors
        with anyio.fail_after(WAIT):
            await env.reset()
            before = errors["invalid_args"]
            with pytest.raises(RuntimeError):
                await env.step(BAD_ARGS)
        assert errors["invalid_args"] == before + 1


async def test_an_episode_closed_for_its_rate_takes_steps_again_after_a_reset() -> None:
    async with (
        serving(rate=0.001, burst=1, rate_strikes=1) as service,  # no new token in the test
        GenericEnvClient(base_url=agent_url(service)) as env,
    ):
        with anyio.fail_after(WAIT):
            await env.reset()
            await env.step(CALL)  # the burst's one request
            with pytest.raises(RuntimeError, match="EXECUTION_ERROR"):
                await env.step(CALL)  # refused: its one strike
            with pytest.raises(RuntimeError, match="SESSION_ERROR"):
                await env.step(CALL)  # out of strikes: the client is closed
            await env.reset()
            again = await env.step(CALL)
    assert again.observation["action_success"] is True
