"""OpenEnv's real client (PyPI openenv-core's `GenericEnvClient`, over `/ws`) drives areasync.

A real service on loopback; the client is OpenEnv's own, given nothing but a base URL.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest

from areasync.conformance.scenario_json import export_scenario_json
from areasync.conformance.scenarios import GAIA2_SHAPED_ID
from areasync.protocol.frames import EventItem, Role, SendUserMessage
from areasync.service import Service
from areasync.service.adapters.openenv.messages import schema
from tests.service.adapters.openenv.client import GenericEnvClient
from tests.service.support import (
    TUTORIAL,
    WAIT,
    attach,
    front_lacks,
    http_get,
    json_body,
    serving,
    tokens,
)
from tests.waiting import settled

SEND = {"app_name": "AgentUserInterface", "tool_name": "send_message_to_user"}


def agent_url(service: Service, session: str = TUTORIAL) -> str:
    return service.openenv_url(tokens(service, session)[Role.AGENT])


async def test_a_session_agent_url_resets_calls_a_tool_and_reads_the_state() -> None:
    async with serving() as service, GenericEnvClient(base_url=agent_url(service)) as env:
        with anyio.fail_after(WAIT):
            first = await env.reset()
            assert first.observation["environment_state"] == "RUNNING"
            assert "AgentUserInterface" in first.observation["available_apps"]
            step = await env.step(
                {"action_type": "call_tool", **SEND, "tool_args": {"content": "hi"}}
            )
            state = await env.state()
        assert step.observation["action_success"] is True
        assert (
            step.observation["action_result"]["tool"] == "AgentUserInterface__send_message_to_user"
        )
        assert step.observation["event_log_length"] == first.observation["event_log_length"] + 1
        assert state["session_id"] == TUTORIAL and state["step_count"] == 1


async def test_the_admin_url_gives_each_connection_a_fresh_session() -> None:
    async with serving() as service:
        async with (
            GenericEnvClient(base_url=service.openenv_url()) as one,
            GenericEnvClient(base_url=service.openenv_url()) as two,
        ):
            with anyio.fail_after(WAIT):
                a = await one.reset(scenario=TUTORIAL, mode="manual")
                b = await two.reset(scenario=TUTORIAL, mode="manual")
            ids = {a.observation["metadata"]["session_id"], b.observation["metadata"]["session_id"]}
            assert len(ids) == 2 and TUTORIAL not in ids
            assert all(service.registry.get(i) is not None for i in ids)
        # OpenEnv's model: the environment goes with its connection.
        with anyio.fail_after(WAIT):
            for i in ids:
                await service.registry.get(i).sim.run()  # type: ignore[union-attr]  # its end


async def test_reset_ends_the_episode_and_several_run_in_a_row() -> None:
    async with serving() as service, GenericEnvClient(base_url=service.openenv_url()) as env:
        seen = []
        with anyio.fail_after(WAIT):
            for _ in range(3):
                result = await env.reset(scenario=TUTORIAL, mode="manual")
                seen.append(result.observation["metadata"]["session_id"])
                ticked = await env.step({"action_type": "tick", "num_ticks": 2})
                assert ticked.observation["tick_count"] == result.observation["tick_count"] + 2
        assert len(set(seen)) == 3
        assert all(service.registry.get(i).ended for i in seen[:2])  # type: ignore[union-attr]


async def test_initialize_loads_a_gaia2_json_scenario_and_lists_its_apps() -> None:
    text = export_scenario_json(GAIA2_SHAPED_ID)
    async with serving() as service, GenericEnvClient(base_url=service.openenv_url()) as env:
        with anyio.fail_after(WAIT * 3):
            empty = await env.reset()
            init = await env.step(
                {"action_type": "initialize", "scenario_json": text, "mode": "manual"}
            )
            apps = await env.step({"action_type": "list_apps"})
        assert empty.observation["environment_state"] == "SETUP"
        assert init.observation["environment_state"] == "RUNNING"
        assert set(apps.observation["action_result"]["apps"]) <= set(
            init.observation["available_apps"]
        )


async def test_each_observation_holds_exactly_the_notifications_since_the_last() -> None:
    async with serving() as service, GenericEnvClient(base_url=service.openenv_url()) as env:
        got: list[dict[str, Any]] = []
        with anyio.fail_after(WAIT):
            await env.reset(scenario=TUTORIAL, mode="manual")
            for _ in range(40):
                result = await env.step({"action_type": "tick", "num_ticks": 5})
                got += result.observation["notifications"]
                if result.done:
                    break
            session = service.registry.get(result.observation["metadata"]["session_id"])
        assert session is not None
        expected = [json.loads(json.dumps(_plain(n))) for n in session.sim.notifications()]
        assert got and got == expected


async def test_get_state_returns_the_apps_and_the_event_log() -> None:
    async with serving() as service, GenericEnvClient(base_url=service.openenv_url()) as env:
        with anyio.fail_after(WAIT):
            await env.reset(scenario=TUTORIAL, mode="manual")
            result = await env.step({"action_type": "get_state", "include_event_queue": True})
        state = result.observation["action_result"]
        assert "AgentUserInterface" in state["apps"]
        assert isinstance(state["event_log"], list) and isinstance(state["event_queue"], list)


@pytest.mark.parametrize(
    "action",
    [
        {"action_type": "fly"},
        {"action_type": "call_tool", **SEND, "tool_args": {"nope": 1}},
        {"action_type": "call_tool", "app_name": "NoApp", "tool_name": "x"},
        {"action_type": "tick", "num_ticks": 0},
    ],
    ids=["unknown action", "bad tool args", "unknown tool", "bad tick"],
)
async def test_bad_input_gets_openenv_s_error_and_changes_nothing(action: dict[str, Any]) -> None:
    async with serving() as service, GenericEnvClient(base_url=agent_url(service)) as env:
        with anyio.fail_after(WAIT):
            await env.reset()
            before = await env.state()
            events = len(service.registry.get(TUTORIAL).sim.events())  # type: ignore[union-attr]
            with pytest.raises(RuntimeError, match=r"code: (VALIDATION|EXECUTION)_ERROR"):
                await env.step(action)
            after = await env.state()
        assert after == before
        assert len(service.registry.get(TUTORIAL).sim.events()) == events  # type: ignore[union-attr]


async def test_a_step_before_reset_is_refused() -> None:
    async with serving() as service, GenericEnvClient(base_url=service.openenv_url()) as env:
        with anyio.fail_after(WAIT), pytest.raises(RuntimeError, match="send reset first"):
            await env.step({"action_type": "list_apps"})


async def test_an_agent_url_keeps_the_agent_role() -> None:
    async with serving() as service, GenericEnvClient(base_url=agent_url(service)) as env:
        with anyio.fail_after(WAIT), pytest.raises(RuntimeError, match="may not send `tick`"):
            await env.reset()
            await env.step({"action_type": "tick"})


async def test_an_agent_url_cannot_start_a_scenario() -> None:
    async with serving() as service, GenericEnvClient(base_url=agent_url(service)) as env:
        with anyio.fail_after(WAIT), pytest.raises(RuntimeError, match="admin token"):
            await env.reset(scenario=TUTORIAL)
        assert len(service.registry.sessions) == 1


async def test_an_idle_openenv_connection_is_reaped_with_its_session() -> None:
    async with serving(openenv_idle_timeout=0.3) as service:
        env = GenericEnvClient(base_url=service.openenv_url())
        with anyio.fail_after(WAIT):
            result = await env.reset(scenario=TUTORIAL, mode="manual")
            session = service.registry.get(result.observation["metadata"]["session_id"])
            assert env._ws is not None
            reaped = json.loads(await env._ws.recv())
            assert session is not None
            await session.sim.run()  # returns once the reaped session has ended
        await env.close()
        assert reaped["type"] == "error" and "reaped" in reaped["data"]["message"]


@front_lacks("max_sessions 1 cannot be split over two workers (refused at start)")
async def test_no_room_for_a_session_is_a_capacity_error() -> None:
    async with (
        serving(max_sessions=1) as service,
        GenericEnvClient(base_url=service.openenv_url()) as env,
    ):
        with anyio.fail_after(WAIT), pytest.raises(RuntimeError, match="CAPACITY_REACHED"):
            await env.reset(scenario=TUTORIAL)


async def test_parallel_clients_each_run_their_own_episode() -> None:
    async with serving() as service:
        finals: list[int] = []

        async def run(n: int) -> None:
            async with GenericEnvClient(base_url=service.openenv_url()) as env:
                await env.reset(scenario=TUTORIAL, mode="manual")
                result = await env.step({"action_type": "tick", "num_ticks": n})
                finals.append(result.observation["tick_count"])

        with anyio.fail_after(WAIT * 2):
            async with anyio.create_task_group() as tg:
                for n in (1, 2, 3, 4):
                    tg.start_soon(run, n)
        assert sorted(finals) == [1, 2, 3, 4]


async def test_schema_is_what_is_served(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    async with serving() as service:
        base = service.openenv_url(tokens(service)[Role.AGENT])
        target = base.removeprefix(service.http_url)
        status, _, body = await http_get(service, target + "/schema")
        async with GenericEnvClient(base_url=base) as env:
            with anyio.fail_after(WAIT):
                observation = (await env.reset()).observation
                state = await env.state()
        bad, _, _ = await http_get(service, "/openenv/wrong/schema")
    served = json_body(body)
    assert status == 200 and served == json.loads(json.dumps(schema()))
    jsonschema.validate(observation, served["observation"])
    jsonschema.validate(state, served["state"])
    jsonschema.validate({"action_type": "tick", "num_ticks": 2}, served["action"])
    assert bad == 401
    server_log = [r.getMessage() for r in caplog.records if r.name != "websockets.client"]
    assert any("/openenv/" in line for line in server_log)  # the request lines were logged...
    assert not any(tokens(service)[Role.AGENT] in line for line in server_log)  # ...redacted


def _plain(value: Any) -> Any:
    import msgspec

    return msgspec.to_builtins(value)


async def test_fast_mode_time_stands_still_while_the_agent_holds_its_turn() -> None:
    async with serving() as service, GenericEnvClient(base_url=service.openenv_url()) as env:
        with anyio.fail_after(WAIT):
            start = await env.reset(scenario=TUTORIAL, mode="fast")
            held = await env.step(
                {
                    "action_type": "call_tool",
                    **SEND,
                    "tool_args": {"content": "a"},
                    "advance_time": False,
                }
            )
            await settled()  # the driver would have run on by now, were it free to
            still = await env.state()
        assert held.observation["metadata"]["time_advanced"] is False
        assert still["current_time"] == start.observation["current_time"]


async def test_letting_time_advance_with_a_notification_not_yet_observed_keeps_the_turn() -> None:
    async with (
        serving(mode="fast") as service,
        GenericEnvClient(base_url=agent_url(service)) as env,
        attach(service, Role.USER) as user,
    ):
        with anyio.fail_after(WAIT):
            start = await env.reset()  # the agent's turn: fast time stands still
            # News the agent has not been shown yet (its last observation came before it).
            await user.call(SendUserMessage, content="one more thing")
            step = await env.step(
                {"action_type": "call_tool", **SEND, "tool_args": {"content": "on it"}}
            )
            await anyio.wait_all_tasks_blocked()
            state = await env.state()
    assert step.observation["metadata"]["time_advanced"] is False
    assert any("one more thing" in n["message"] for n in step.observation["notifications"])
    assert state["current_time"] == start.observation["current_time"]


async def test_fast_mode_advance_time_lets_the_clock_run_to_the_next_notification() -> None:
    await _fast_mode_runs_to_the_next_notification()


async def test_fast_mode_advance_time_reaches_the_next_notification_with_journals(
    tmp_path: Path,
) -> None:
    await _fast_mode_runs_to_the_next_notification(state_dir=tmp_path / "state")


async def _fast_mode_runs_to_the_next_notification(**overrides: Any) -> None:
    async with (
        serving(**overrides) as service,
        GenericEnvClient(base_url=service.openenv_url()) as env,
    ):
        with anyio.fail_after(WAIT):
            start = await env.reset(scenario=TUTORIAL, mode="fast")
            step = await env.step(
                {"action_type": "call_tool", **SEND, "tool_args": {"content": "a"}}
            )
            notifications: list[dict[str, Any]] = []
            while not notifications:  # bounded by fail_after: the scenario sends one
                result = await env.step({"action_type": "list_apps"})
                notifications = result.observation["notifications"]
        assert step.observation["metadata"]["time_advanced"] is True
        assert result.observation["current_time"] > start.observation["current_time"]


async def test_http_reset_step_and_state_drive_a_session() -> None:
    import requests

    async with serving() as service:
        base = agent_url(service)

        def run() -> tuple[Any, ...]:
            reset = requests.post(f"{base}/reset", json={}, timeout=WAIT)
            step = requests.post(
                f"{base}/step",
                json={
                    "action": {"action_type": "call_tool", **SEND, "tool_args": {"content": "x"}}
                },
                timeout=WAIT,
            )
            bad = requests.post(
                f"{base}/step", json={"action": {"action_type": "fly"}}, timeout=WAIT
            )
            state = requests.get(f"{base}/state", timeout=WAIT)
            return reset, step, bad, state

        reset, step, bad, state = await anyio.to_thread.run_sync(run)
    assert reset.status_code == 200 and reset.json()["done"] is False
    assert step.status_code == 200 and step.json()["observation"]["action_success"] is True
    assert bad.status_code == 422 and bad.json()["detail"]["code"] == "VALIDATION_ERROR"
    assert state.status_code == 200 and state.json()["step_count"] == 1


async def test_a_dashboard_watches_an_openenv_episode_live() -> None:
    async with serving() as service, GenericEnvClient(base_url=service.openenv_url()) as env:
        with anyio.fail_after(WAIT):
            result = await env.reset(scenario=TUTORIAL, mode="manual")
            session_id = result.observation["metadata"]["session_id"]
            async with attach(service, Role.OBSERVER, session=session_id) as dashboard:
                await env.step({"action_type": "call_tool", **SEND, "tool_args": {"content": "hi"}})
                event = await dashboard.until(lambda f: isinstance(f, EventItem))
        assert isinstance(event, EventItem)
        assert event.event.event_type == "AGENT"


async def test_a_shutdown_closes_openenv_connections() -> None:
    async with serving() as service:
        env = GenericEnvClient(base_url=service.openenv_url())
        with anyio.fail_after(WAIT):
            await env.reset(scenario=TUTORIAL, mode="manual")
    with anyio.fail_after(WAIT), pytest.raises(Exception, match=r"1001|closed|going away"):
        await env.step({"action_type": "list_apps"})
    await env.close()
