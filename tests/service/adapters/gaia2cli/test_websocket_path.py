"""The adapter's input goes the way a WebSocket frame goes (`service/connection/inprocess.py`).

Each test is a case where the adapter, calling the request dispatcher directly, answered
otherwise than a WebSocket client is answered: the journal's wait on a failed action, the
error's words, the metrics, the rate limit's order of checks, the session's room.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from areasync.client import AreasyncError
from areasync.protocol.frames import Role
from tests.service.adapters.gaia2cli.support import TO_USER, adapter, agent, harness, stream_seq
from tests.service.adapters.openenv.test_openenv_durable import HeldSync, answered_after_the_sync
from tests.service.support import WAIT, in_process_only

UI, TO_USER_ACTION = TO_USER.split("__")
BAD_ARGS = {"nope": 1}


@in_process_only("holds this process's journal syncs")
async def test_a_failed_action_is_answered_once_its_journal_record_is_durable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = HeldSync(monkeypatch)
    async with adapter(state_dir=tmp_path) as service:
        runner = harness(service, Role.AGENT)
        answers = []

        async def act() -> None:
            answers.append(await runner.call_tool(UI, TO_USER_ACTION, BAD_ARGS))

        with anyio.fail_after(WAIT):
            order = await answered_after_the_sync(held, act)
    assert order == ["released", "answered"]
    assert answers[0][0] == 200 and answers[0][1]["ok"] is False


async def test_a_failed_action_says_what_a_websocket_client_is_told() -> None:
    async with adapter() as service, agent(service) as sim:
        with pytest.raises(AreasyncError) as told:
            await sim.call_tool(TO_USER, **BAD_ARGS)
        status, body = await harness(service, Role.AGENT).call_tool(UI, TO_USER_ACTION, BAD_ARGS)
    assert status == 200 and body["ok"] is False
    assert body["error"] == told.value.message


async def test_an_action_is_counted_as_a_tool_call_in_the_metrics() -> None:
    async with adapter() as service:
        calls = service.registry.metrics.tool_call_seconds
        before = calls.count
        status, body = await harness(service, Role.AGENT).call_tool(
            UI, TO_USER_ACTION, {"content": "counted"}
        )
        after = calls.count
    assert status == 200 and body["ok"] is True
    assert after == before + 1


async def test_a_failed_action_is_counted_by_its_error_code_in_the_metrics() -> None:
    async with adapter() as service:
        errors = service.registry.metrics.errors
        before = errors["invalid_args"]
        await harness(service, Role.AGENT).call_tool(UI, TO_USER_ACTION, BAD_ARGS)
        after = errors["invalid_args"]
    assert after == before + 1


async def test_a_body_that_is_not_valid_json_does_not_use_up_the_rate_limit() -> None:
    async with adapter(rate=0.001, burst=1) as service:  # one request, then none in the test
        runner = harness(service)
        bad, _ = await runner.call("POST", "/notify", b"{not json")
        sent = await runner.notify("the one request of the burst")
    assert bad == 400 and sent["ok"] is True


async def test_a_client_refused_past_its_strikes_gets_no_fresh_burst_and_changes_nothing() -> None:
    async with adapter(rate=0.001, burst=1, rate_strikes=1) as service:
        runner = harness(service)
        await runner.notify("the one request of the burst")
        before = stream_seq(service)
        # A refusal (the one strike), then the close a WebSocket client would get, then after.
        answers = [await runner.call("POST", "/notify", {"message": "more"}) for _ in range(3)]
        assert stream_seq(service) == before
    assert [status for status, _ in answers] == [429, 429, 429]
    assert all(body["ok"] is False for _, body in answers)
    assert "back off" in answers[1][1]["error"] and "back off" in answers[2][1]["error"]


async def test_the_adapter_takes_none_of_a_full_sessions_places_for_clients() -> None:
    async with adapter(max_connections_per_session=1) as service:
        runner = harness(service)
        first = await runner.call("POST", "/notify", {"message": "before the agent"})
        async with agent(service):  # the session's one place, taken
            second = await runner.call("POST", "/notify", {"message": "after the agent"})
    assert [first[0], second[0]] == [200, 200]
    assert first[1]["ok"] is True and second[1]["ok"] is True


@in_process_only("patches this process's requests.perform")
async def test_an_internal_failure_says_so_without_the_exceptions_words(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("/a/path/on/the/server")

    monkeypatch.setattr("areasync.service.connection.requests.perform", broken)
    async with adapter() as service:
        status, body = await harness(service).call("POST", "/notify", {"message": "hi"})
    assert status == 500 and body["ok"] is False
    assert "/a/path" not in body["error"] and "server's log" in body["error"]


async def test_a_client_closed_for_its_rate_is_replaced_once_a_full_burst_is_earned_again() -> None:
    async with adapter(rate=0.001, burst=1, rate_strikes=1) as service:
        runner = harness(service)
        await runner.notify("the one request of the burst")
        for _ in range(2):  # the strike, then the close
            await runner.call("POST", "/notify", {"message": "too soon"})
        [closed] = service.gaia2.clients.values()
        assert closed.closed and closed.closed_at is not None
        closed.closed_at -= 1 / 0.001  # burst / rate seconds ago: the burst is earned again
        status, body = await runner.call("POST", "/notify", {"message": "later"})
        [replacement] = service.gaia2.clients.values()
    assert status == 200 and body["ok"] is True
    assert replacement is not closed
