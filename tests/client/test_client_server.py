"""The client against the real service over loopback: typed results and errors, ids matched to
replies under concurrency, controls, the user role, ARE's wait, and both encodings."""

from __future__ import annotations

import anyio
import pytest

from areasync.client import (
    ForbiddenError,
    InvalidArgsError,
    ToolFailedError,
    UnauthorizedError,
    UnknownToolError,
    connect,
)
from areasync.protocol import (
    SERVER_CAPABILITIES,
    ClockState,
    EndedItem,
    EventItem,
    ToolInfo,
    Validation,
)
from areasync.testing import AreasyncServer, ClientFactory
from tests.scenarios import timeline

WAIT = 20  # wall seconds any one test step may take before it fails instead of hanging


async def test_the_welcome_offers_the_servers_capabilities(
    areasync_client: ClientFactory,
) -> None:
    client = await areasync_client()
    assert client.capabilities == set(SERVER_CAPABILITIES)
    assert "batch" in client.capabilities


async def test_list_tools_gives_typed_tool_infos(areasync_client: ClientFactory) -> None:
    agent = await areasync_client(role="agent")
    with anyio.fail_after(WAIT):
        tools = await agent.list_tools()
    assert all(isinstance(tool, ToolInfo) for tool in tools)
    send = next(tool for tool in tools if tool.name == "AgentUserInterface__send_message_to_user")
    assert [arg.name for arg in send.args] == ["content"]


async def test_an_unknown_tool_raises_unknown_tool_error(areasync_client: ClientFactory) -> None:
    agent = await areasync_client(role="agent")
    with anyio.fail_after(WAIT), pytest.raises(UnknownToolError) as caught:
        await agent.call_tool("Nope__nothing")
    assert caught.value.code == "unknown_tool"
    assert caught.value.retryable is False


async def test_bad_arguments_raise_invalid_args_error(areasync_client: ClientFactory) -> None:
    agent = await areasync_client(role="agent")
    with anyio.fail_after(WAIT), pytest.raises(InvalidArgsError):
        await agent.call_tool("AgentUserInterface__send_message_to_user", wrong="x")


async def test_a_tool_that_raises_gives_tool_failed_error(
    areasync_server: AreasyncServer, areasync_client: ClientFactory
) -> None:
    session_id = areasync_server.create_session(timeline(5), mode="manual")
    agent = await areasync_client(role="agent", session=session_id)
    with anyio.fail_after(WAIT), pytest.raises(ToolFailedError) as caught:
        await agent.call_tool("TimelineApp__explode", reason="boom")
    assert "boom" in caught.value.message


async def test_a_frame_the_role_may_not_send_raises_forbidden_error(
    areasync_client: ClientFactory,
) -> None:
    agent = await areasync_client(role="agent")
    with anyio.fail_after(WAIT), pytest.raises(ForbiddenError):
        await agent.pause()


async def test_a_wrong_token_raises_unauthorized_error(areasync_server: AreasyncServer) -> None:
    with anyio.fail_after(WAIT), pytest.raises(UnauthorizedError):
        await connect(areasync_server.url, role="agent", token="wrong")


async def test_a_refused_origin_raises_unauthorized_error_with_the_servers_reason(
    areasync_server: AreasyncServer,
) -> None:
    # The client sends no Origin by default; one that does (posing as a page) is refused, and
    # the error carries the server's explanation.
    with anyio.fail_after(WAIT), pytest.raises(UnauthorizedError) as caught:
        await connect(
            areasync_server.url,
            role="agent",
            token=areasync_server.token,
            ws_options={"origin": "http://evil.example"},
        )
    assert "HTTP 403" in caught.value.message and "--allow-origin" in caught.value.message


@pytest.mark.parametrize("encoding", ["json", "msgpack"])
async def test_concurrent_requests_each_get_their_own_reply(
    areasync_server: AreasyncServer, areasync_client: ClientFactory, encoding: str
) -> None:
    session_id = areasync_server.create_session(timeline(5), mode="manual")
    agent = await areasync_client(role="agent", session=session_id, encoding=encoding)
    results: dict[int, int] = {}

    async def mark(n: int) -> None:
        results[n] = await agent.call_tool("TimelineApp__mark", label=f"call-{n}")

    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tg:
            for n in range(50):
                tg.start_soon(mark, n)
            tg.start_soon(agent.list_tools)
            tg.start_soon(agent.ping)
    # Each call got the reply to its own request: the mark count it made, all distinct.
    assert sorted(results.values()) == list(range(1, 51))
    marks = areasync_server.simulation(session_id).env.get_app("TimelineApp").marks
    assert {f"call-{n}" for n in range(50)} == set(marks)


async def test_controls_return_typed_clock_states(areasync_server: AreasyncServer) -> None:
    session_id = areasync_server.create_session("scenario_tutorial", mode="manual")
    url = areasync_server.session_url(session_id)
    async with connect(url, role="controller", token=areasync_server.token) as controller:
        with anyio.fail_after(WAIT):
            paused = await controller.pause()
            resumed = await controller.resume()
            jumped = await controller.jump(by=3)
            stepped = await controller.next_event()
            sped = await controller.set_speed(4)
            validation = await controller.stop()
            ended = await controller.wait_ended()
    assert isinstance(paused, ClockState) and paused.state == "paused"
    assert resumed.state == "running"
    assert jumped.time == 3.0
    assert stepped.time == 5.0  # scenario_tutorial's first event
    assert sped.speed == 4.0
    assert isinstance(validation, Validation)
    assert isinstance(ended, EndedItem)


async def test_get_state_at_a_seq_gives_the_state_the_session_had_there(
    areasync_server: AreasyncServer,
) -> None:
    session_id = areasync_server.create_session("scenario_tutorial", mode="manual")
    url = areasync_server.session_url(session_id)
    async with connect(url, role="controller", token=areasync_server.token) as controller:
        with anyio.fail_after(WAIT):
            cut = areasync_server.simulation(session_id).log.seq
            await controller.next_event()  # a message at T+5 s
            now = await controller.get_state(["MessagingApp"])
            then = await controller.get_state(["MessagingApp"], at_seq=cut)
    assert now != then
    assert list(then) == ["MessagingApp"]


async def test_an_exclusive_jump_lets_the_agent_act_at_the_target_before_its_events(
    areasync_server: AreasyncServer,
) -> None:
    session_id = areasync_server.create_session("scenario_tutorial", mode="manual")
    url = areasync_server.session_url(session_id)
    async with (
        connect(url, role="controller", token=areasync_server.token) as controller,
        connect(url, role="agent", token=areasync_server.token) as agent,
    ):
        with anyio.fail_after(WAIT):
            target = controller.clock.start_time + 5.0  # scenario_tutorial's first event
            jumped = await controller.jump(to=target, inclusive=False)
            await agent.call_tool("SystemApp__get_current_time")
            await controller.tick()
    events = areasync_server.simulation(session_id).events()
    assert jumped.time == target
    assert [(e.time, e.event_type) for e in events] == [(target, "AGENT"), (target, "ENV")]


async def test_a_user_message_reaches_the_agent_as_a_notification(
    areasync_server: AreasyncServer, areasync_client: ClientFactory
) -> None:
    session_id = areasync_server.create_session("scenario_tutorial", mode="manual")
    agent = await areasync_client(role="agent", session=session_id)
    user = await areasync_client(role="user", session=session_id)
    with anyio.fail_after(WAIT):
        await user.send_user_message("Are you there?")
        async for note in agent.notifications():
            if note.message_type == "USER_MESSAGE":
                break
    assert "Are you there?" in note.message


async def test_wait_for_notification_returns_what_arrived(areasync_client: ClientFactory) -> None:
    agent = await areasync_client(role="agent")  # scenario_tutorial, fast: the user writes at 6 s
    with anyio.fail_after(WAIT):
        notes = await agent.wait_for_notification(timeout=60)
    assert [note.message_type for note in notes] == ["USER_MESSAGE"]
    assert agent.now == 6.0


async def test_the_stream_ends_with_the_ended_item(areasync_client: ClientFactory) -> None:
    agent = await areasync_client(role="agent", since=0)
    with anyio.fail_after(WAIT):
        await agent.idle()
        await agent.wait_for_notification(timeout=60)
        await agent.idle()
        items = [item async for item in agent.stream()]
    assert isinstance(items[-1], EndedItem)
    assert [item.seq for item in items] == list(range(1, len(items) + 1))
    assert any(isinstance(item, EventItem) for item in items)
