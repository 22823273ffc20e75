"""A session's MCP endpoint, driven by the official MCP client over Streamable HTTP: the agent's
tools with ARE's descriptions and schemas, calls as the agent, notifications as MCP
notifications and through the bounded wait tool, bearer tokens and the port's screens.
"""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import httpx
import jsonschema
import pytest
from mcp import ClientSession

from areasync.protocol.frames import CreateSession, EventItem, ListTools, Mode, Role
from areasync.service import Service
from areasync.service.adapters.mcp.port import NOTIFICATION_LOGGER
from areasync.service.adapters.openenv.tools import WAIT as WAIT_TOOL
from tests.service.adapters.mcp.support import Logged, mcp_client, text
from tests.service.support import ADMIN, TUTORIAL, WAIT, attach, http_get, serving, tokens
from tests.waiting import eventually

SEND = "AgentUserInterface__send_message_to_user"


async def test_the_agent_s_tools_are_listed_with_are_s_descriptions_and_schemas() -> None:
    async with serving(mcp_port=0) as service:
        async with attach(service, Role.AGENT) as agent:
            infos = {info["name"]: info for info in (await agent.request(ListTools)).value}  # type: ignore[union-attr]
        async with mcp_client(service) as client:
            with anyio.fail_after(WAIT):
                listed = (await client.list_tools()).tools
    tools = {tool.name: tool for tool in listed}
    assert set(tools) == {*infos, WAIT_TOOL}
    send = tools[SEND]
    assert send.description is not None and infos[SEND]["description"] in send.description
    args = infos[SEND]["args"]
    assert send.inputSchema["required"] == [a["name"] for a in args if a["required"]]
    assert send.inputSchema["properties"]["content"]["type"] == "string"
    for tool in listed:
        jsonschema.Draft202012Validator.check_schema(tool.inputSchema)


async def test_a_tool_call_is_made_as_the_session_s_agent() -> None:
    async with (
        serving(mcp_port=0) as service,
        attach(service, Role.OBSERVER) as observer,
        mcp_client(service) as client,
    ):
        with anyio.fail_after(WAIT):
            result = await client.call_tool(SEND, {"content": "hi from MCP"})
            event = await observer.until(lambda f: isinstance(f, EventItem))
    assert result.isError is False
    assert isinstance(event, EventItem)
    assert event.event.event_type == "AGENT" and event.event.function == "send_message_to_user"


async def test_a_failing_call_is_an_error_result_and_changes_nothing() -> None:
    async with serving(mcp_port=0) as service, mcp_client(service) as client:
        session = service.registry.get(TUTORIAL)
        assert session is not None
        before = len(session.sim.env.event_log)
        with anyio.fail_after(WAIT):
            unknown = await client.call_tool("NoApp__nothing", {})
            wrong = await client.call_tool(SEND, {"nope": 1})
        assert len(session.sim.env.event_log) == before
    assert unknown.isError is True and "NoApp__nothing" in text(unknown)
    assert wrong.isError is True


async def test_notifications_arrive_as_mcp_notifications_and_from_the_wait_tool() -> None:
    logged = Logged()
    async with (
        serving(mode=Mode.FAST, mcp_port=0) as service,
        mcp_client(service, logged=logged) as client,
    ):
        with anyio.fail_after(WAIT):
            await client.call_tool(SEND, {"content": "hello"})
            waited = await client.call_tool(WAIT_TOOL, {"timeout": WAIT})
    value = json.loads(text(waited))
    assert value["notifications"], "the tutorial's user answers the agent's message"
    assert logged.data(NOTIFICATION_LOGGER) == value["notifications"]


async def test_are_s_own_wait_tool_lets_fast_time_run_and_its_notification_follows() -> None:
    logged = Logged()
    async with (
        serving(mode=Mode.FAST, mcp_port=0) as service,
        mcp_client(service, logged=logged) as client,
    ):
        session = service.registry.get(TUTORIAL)
        assert session is not None
        with anyio.fail_after(WAIT):
            await client.call_tool(SEND, {"content": "hello"})
            start = session.sim.clock_state().time
            waited = await client.call_tool("SystemApp__wait_for_notification", {"timeout": 3600})
    assert waited.isError is False
    assert session.sim.clock_state().time > start
    assert logged.data(NOTIFICATION_LOGGER), "the user's answer, delivered with the wait's result"


async def test_the_wait_tool_refuses_a_timeout_beyond_its_bound() -> None:
    async with serving(mcp_port=0, mcp_max_wait=5.0) as service, mcp_client(service) as client:
        with anyio.fail_after(WAIT):
            result = await client.call_tool(WAIT_TOOL, {"timeout": 6})
    assert result.isError is True and "mcp_max_wait" in text(result)


async def test_fast_mode_time_stands_still_while_the_mcp_agent_holds_its_turn() -> None:
    async with serving(mode=Mode.FAST, mcp_port=0) as service, mcp_client(service) as client:
        session = service.registry.get(TUTORIAL)
        assert session is not None
        with anyio.fail_after(WAIT):
            await client.call_tool(SEND, {"content": "a"})
            start = session.sim.clock_state().time
            await client.call_tool(SEND, {"content": "b"})
        assert session.sim.leases  # the agent's turn: nothing else may move time
        assert session.sim.clock_state().time == start


async def test_the_admin_token_reaches_a_session_by_its_id() -> None:
    async with (
        serving(mcp_port=0) as service,
        mcp_client(service, token=service.tokens.admin) as client,
    ):
        with anyio.fail_after(WAIT):
            result = await client.call_tool(SEND, {"content": "from the admin"})
    assert result.isError is False


async def post(service: Service, path: str, headers: dict[str, str]) -> httpx.Response:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    accept = {"Accept": "application/json, text/event-stream"}
    async with httpx.AsyncClient(timeout=WAIT) as http:
        return await http.post(
            f"{service.mcp.base}{path}", json=body, headers={**accept, **headers}
        )


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({}, 401),
        ({"Authorization": "Bearer wrong"}, 401),
        ({"Authorization": "Bearer {user}"}, 403),
        ({"Authorization": "Bearer {agent}", "Host": "evil.example:80"}, 421),
        ({"Authorization": "Bearer {agent}", "Origin": "http://evil.example"}, 403),
    ],
)
async def test_a_request_without_the_agent_s_credential_or_from_another_site_is_refused(
    headers: dict[str, str], status: int
) -> None:
    async with serving(mcp_port=0) as service:
        own = tokens(service)
        filled = {
            k: v.format(user=own[Role.USER], agent=own[Role.AGENT]) for k, v in headers.items()
        }
        response = await post(service, f"/mcp/{TUTORIAL}", filled)
    assert response.status_code == status and response.json()["error"]["message"]


async def test_a_session_token_opens_only_its_own_session() -> None:
    async with serving(mcp_port=0) as service:
        agent = tokens(service)[Role.AGENT]
        response = await post(service, "/mcp/other", {"Authorization": f"Bearer {agent}"})
    assert response.status_code == 404


async def test_requests_leave_no_task_behind() -> None:
    import asyncio

    async with serving(mcp_port=0) as service:
        agent = tokens(service)[Role.AGENT]
        await post(service, f"/mcp/{TUTORIAL}", {"Authorization": f"Bearer {agent}"})
        baseline = len(asyncio.all_tasks())
        for _ in range(20):
            response = await post(service, f"/mcp/{TUTORIAL}", {"Authorization": f"Bearer {agent}"})
            assert response.status_code == 200
        await eventually(lambda: len(asyncio.all_tasks()) <= baseline, what="no task left")


async def test_a_shutdown_ends_a_waiting_call_at_once(tmp_path: Path) -> None:
    # A suspended session (--state-dir) never ends: nothing in its stream wakes the wait.
    outcome: list[bool] = []

    async def wait(client: ClientSession) -> None:
        result = await client.call_tool(WAIT_TOOL, {"timeout": 3600})
        outcome.append(result.isError is False)

    with anyio.CancelScope() as bound:
        async with (
            serving(state_dir=tmp_path, mcp_port=0, mcp_max_wait=3600.0) as service,
            mcp_client(service) as client,
        ):
            await client.list_tools()
            async with anyio.create_task_group() as tg:
                tg.start_soon(wait, client)
                await eventually(service.mcp.held.waiting)
                service.shutdown()
                bound.deadline = anyio.current_time() + WAIT  # the call must end by then
    assert not bound.cancelled_caught and outcome == [True]


async def test_a_sessions_mcp_url_is_in_its_listing_and_in_create_sessions_result() -> None:
    async with serving(mcp_port=0) as service, attach(service, Role.ADMIN) as admin:
        created = await admin.call(CreateSession, scenario=TUTORIAL, mode="manual")
        status, _, body = await http_get(service, f"/api/sessions?token={ADMIN}")
        urls = {sid: service.mcp.url(sid) for sid in (TUTORIAL, created["session_id"])}
    listed = {entry["id"]: entry.get("mcp_url") for entry in json.loads(body)["sessions"]}
    assert status == 200 and created["mcp_url"] == urls[created["session_id"]]
    assert listed == urls  # the one given at the start too, made before the port listened
