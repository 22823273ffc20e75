"""An agent that speaks only HTTP runs a whole fast session: its turn, its waits, its end."""

from __future__ import annotations

import anyio

from areasync.protocol.frames import Role
from tests.service.adapters.gaia2cli.harness import Harness
from tests.service.adapters.gaia2cli.runner import Runner
from tests.service.adapters.gaia2cli.support import adapter, harness
from tests.service.support import TUTORIAL

WALL_S = 30.0
HOLDER = f"agent:gaia2-cli@{TUTORIAL}"  # the HTTP agent's fast-mode lease


async def wait(agent: Harness, sim_seconds: int = 60) -> None:
    with anyio.fail_after(WALL_S):
        status, body = await agent.call_tool(
            "SystemApp", "wait_for_notification", {"timeout": sim_seconds}
        )
    assert status == 200 and body["ok"] is True, body


async def test_an_http_agent_waits_while_time_moves_to_the_users_message() -> None:
    async with adapter() as service:  # fast mode, and no WebSocket agent
        agent = harness(service, Role.AGENT)
        await wait(agent)
        status, body = await agent.call("GET", "/notifications")
    assert status == 200 and body["lastSeq"] == 1
    note = body["notifications"][0]
    assert note["type"] == "USER_MESSAGE" and "transferring the pdf" in note["message"]
    assert note["simTime"] == 6.0


async def test_an_http_agent_holds_time_still_while_it_works() -> None:
    async with adapter() as service:
        agent = harness(service, Role.AGENT)
        await wait(agent)
        status, _ = await agent.call_tool("SystemApp", "get_current_time", {})
        sim = service.registry.sessions[TUTORIAL].sim
        assert status == 200 and HOLDER in sim.leases
        assert sim.clock_state(peek=True).time == 6.0


async def test_an_http_agent_that_says_it_is_done_lets_the_session_run_to_its_end() -> None:
    async with adapter() as service:
        agent = harness(service, Role.AGENT)
        await wait(agent)
        await agent.call_tool("AgentUserInterface", "send_message_to_user", {"content": "On it."})
        assert await agent.idle() == {"ok": True}
        run = await Runner(service.gaia2_url(TUTORIAL), limit=WALL_S).run()
    assert run.statuses[-1]["status"] in ("complete", "stopped")
    assert run.statuses[-1]["last_response"] == "On it." and run.statuses[-1]["turn"] == 1


async def test_an_http_idle_that_has_not_read_the_latest_notification_keeps_the_agents_turn() -> (
    None
):
    async with adapter() as service:
        agent = harness(service, Role.AGENT)
        await wait(agent)  # time moves to the user's message at 6 s, notification 1
        # As if notification 1 were still on its way: the agent has read none.
        assert await agent.idle(seen=0) == {"ok": True}
        await anyio.wait_all_tasks_blocked()
        sim = service.registry.sessions[TUTORIAL].sim
        assert HOLDER in sim.leases
        assert sim.clock_state(peek=True).time == 6.0 and not sim.ended


async def test_an_http_idle_that_has_read_the_latest_notification_lets_time_run_on() -> None:
    async with adapter() as service:
        agent = harness(service, Role.AGENT)
        await wait(agent)
        read = await agent.messages(route="/notifications")
        assert await agent.idle(seen=read["lastSeq"]) == {"ok": True}
        status = await agent.wait_status(limit=WALL_S)
    assert read["lastSeq"] == 1 and status["status"] in ("complete", "stopped")


async def test_health_is_connected_once_an_http_agent_has_arrived() -> None:
    async with adapter() as service:
        before = await harness(service).health()
        await harness(service, Role.AGENT).call_tool("SystemApp", "get_current_time", {})
        after = await harness(service).health()
    assert before["connected"] is False and after["connected"] is True


async def test_idle_is_the_agents_and_refused_to_the_user() -> None:
    async with adapter() as service:
        status, body = await harness(service).call("POST", "/idle", {})
    assert status == 403 and "agent token" in body["error"]


async def test_a_file_tools_failure_names_the_agents_path_not_the_hosts() -> None:
    async with adapter() as service:
        status, body = await harness(service, Role.AGENT).call_tool(
            "SandboxLocalFileSystem", "cat", {"path": "/notes/missing.txt"}
        )
        session = service.registry.sessions[TUTORIAL]
        (app,) = [a for a in session.sim.env.apps.values() if hasattr(a, "tmpdir")]
    assert status == 200 and body["ok"] is False and "'/notes/missing.txt'" in body["error"]
    assert app.tmpdir not in body["error"] and "are_simulation" not in body["error"]
