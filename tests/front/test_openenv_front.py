"""OpenEnv's real client through a front: `/openenv/<token>/ws` is handed to a worker too."""

from __future__ import annotations

from pathlib import Path

import anyio

from tests.front.support import ADMIN, REAL_PROCESSES, WAIT, front
from tests.scenarios import RunawayScenario
from tests.service.adapters.openenv.client import GenericEnvClient

pytestmark = REAL_PROCESSES

SEND = {"app_name": "AgentUserInterface", "tool_name": "send_message_to_user"}
TUTORIAL = "scenario_tutorial"
RUNAWAY = RunawayScenario.scenario_id


async def test_a_session_agent_url_through_the_front_resets_and_calls_a_tool(
    tmp_path: Path,
) -> None:
    async with front("--scenario", TUTORIAL, log=tmp_path / "log") as served:
        base = f"http://{served.base}/openenv/{served.token(TUTORIAL, 'agent')}"
        async with GenericEnvClient(base_url=base) as env:
            with anyio.fail_after(WAIT):
                first = await env.reset()
                step = await env.step(
                    {"action_type": "call_tool", **SEND, "tool_args": {"content": "hi"}}
                )
        assert first.observation["environment_state"] == "RUNNING"
        assert step.observation["action_success"] is True


async def test_an_admin_url_fresh_session_takes_an_id_no_other_worker_holds(
    tmp_path: Path,
) -> None:
    # The front's tutorial is on one worker; the episode's goes to the other (the least
    # loaded), which must not take the same id (its journal would be refused).
    async with front("--scenario", TUTORIAL, log=tmp_path / "log") as served:
        async with GenericEnvClient(base_url=f"http://{served.base}/openenv/{ADMIN}") as env:
            with anyio.fail_after(WAIT):
                reset = await env.reset(scenario=TUTORIAL, mode="manual")
                step = await env.step(
                    {"action_type": "call_tool", **SEND, "tool_args": {"content": "hi"}}
                )
        fresh = reset.observation["metadata"]["session_id"]
        assert fresh != TUTORIAL
        assert step.observation["action_success"] is True
        listed = await served.sessions()
        workers = {s["id"]: s["worker"] for s in listed["sessions"]}
        assert workers[fresh] != workers[TUTORIAL]


async def test_openenv_http_reset_and_step_through_the_front_drive_the_tokens_session(
    tmp_path: Path,
) -> None:
    async with front("--scenario", RUNAWAY, "--scenario", TUTORIAL, log=tmp_path / "log") as served:
        agent = served.token(TUTORIAL, "agent")
        base = f"/openenv/{agent}"
        action = {"action_type": "call_tool", **SEND, "tool_args": {"content": "over http"}}
        reset = await anyio.to_thread.run_sync(served.post, f"{base}/reset", {}, agent)
        step = await anyio.to_thread.run_sync(
            served.post, f"{base}/step", {"action": action}, agent
        )
        served_schema = await anyio.to_thread.run_sync(served.get, f"/openenv/{ADMIN}/schema")
        fresh = await anyio.to_thread.run_sync(served.post, f"/openenv/{ADMIN}/reset", {})
    assert reset[0] == 200 and reset[1]["done"] is False
    assert step[0] == 200 and step[1]["observation"]["action_success"] is True  # type: ignore[index]
    assert set(served_schema) >= {"action", "observation", "state"}
    assert fresh[0] == 409  # as one process: the admin's URL opens fresh sessions over /ws only
