"""Tool calls over the socket: results, ARE's error semantics, and results among stream items."""

from __future__ import annotations

from areasync.protocol import (
    CallTool,
    Error,
    ErrorCode,
    EventItem,
    Jump,
    ListTools,
    NotificationItem,
    Ping,
    Pong,
    Result,
    Role,
)
from tests.scenarios import timeline
from tests.service.support import TUTORIAL, attach, serving

WAIT_TOOL = "SystemApp__wait_for_notification"
CAT = "SandboxLocalFileSystem__cat"


async def test_list_tools_gives_public_names_with_argument_schemas() -> None:
    async with serving() as service, attach(service, Role.AGENT) as agent:
        tools = await agent.call(ListTools)
    by_name = {tool["name"]: tool for tool in tools}
    assert "EmailClientApp__send_email" in by_name and WAIT_TOOL in by_name
    args = {arg["name"]: arg for arg in by_name["EmailClientApp__send_email"]["args"]}
    assert args["subject"]["type"] == "str" and args["recipients"]["description"]


async def test_a_tool_call_returns_its_value_after_its_agent_event() -> None:
    async with serving() as service, attach(service, Role.AGENT) as agent:
        request = CallTool(id=agent.next_id(), tool="SystemApp__get_current_time")
        await agent.send(request)
        reply = await agent.reply_to(request.id)
    assert isinstance(reply, Result) and reply.value["current_timestamp"] == 0.0
    event = next(f for f in agent.frames if isinstance(f, EventItem))
    assert (event.event.event_type, event.event.function) == ("AGENT", "get_current_time")
    assert agent.frames.index(event) < agent.frames.index(reply)


async def test_an_unknown_tool_is_an_error_and_logs_nothing() -> None:
    async with serving() as service, attach(service, Role.AGENT) as agent:
        error = await agent.fail(CallTool, tool="NoSuchApp__nothing")
        await agent.request(Ping)
        assert error.code == ErrorCode.UNKNOWN_TOOL and "list_tools" in error.message
        assert not any(isinstance(f, EventItem) for f in agent.frames)
        assert service.registry.get("scenario_tutorial").sim.events() == []  # type: ignore[union-attr]


async def test_bad_arguments_are_invalid_args_and_log_nothing() -> None:
    async with serving() as service, attach(service, Role.AGENT) as agent:
        error = await agent.fail(CallTool, tool="EmailClientApp__send_email", args={"nope": 1})
        await agent.request(Ping)
        assert error.code == ErrorCode.INVALID_ARGS and "nope" in error.message
        assert service.registry.get("scenario_tutorial").sim.events() == []  # type: ignore[union-attr]


async def test_a_tool_that_raises_is_tool_failed_and_are_logs_the_exception() -> None:
    async with (
        serving(timeline(5)) as service,
        attach(service, Role.AGENT, session="areasync_test_timeline") as agent,
    ):
        error = await agent.fail(CallTool, tool="TimelineApp__explode", args={"reason": "boom"})
    assert error.code == ErrorCode.TOOL_FAILED and "boom" in error.message
    events = [f.event for f in agent.frames if isinstance(f, EventItem)]
    assert [(e.event_type, e.function, e.exception) for e in events] == [
        ("AGENT", "explode", "boom")
    ]


async def test_the_agent_receives_events_and_notifications_between_its_results() -> None:
    async with (
        serving() as service,
        attach(service, Role.AGENT) as agent,
        attach(service, Role.CONTROLLER) as controller,
    ):
        first = await agent.request(CallTool, tool="SystemApp__get_current_time")
        await controller.call(Jump, to=6.0)  # the scenario's ENV message at 5 s, user at 6 s
        second = await agent.request(CallTool, tool="SystemApp__get_current_time")
    assert isinstance(first, Result) and isinstance(second, Result)
    between = agent.frames[agent.frames.index(first) + 1 : agent.frames.index(second)]
    kinds = [type(f).__name__ for f in between if isinstance(f, EventItem | NotificationItem)]
    assert kinds.count("NotificationItem") == 1 and kinds.count("EventItem") >= 3
    assert second.value["current_timestamp"] == 6.0


async def test_wait_for_notification_answers_when_a_notification_arrives() -> None:
    async with (
        serving() as service,
        attach(service, Role.AGENT) as agent,
        attach(service, Role.CONTROLLER) as controller,
    ):
        wait = CallTool(id=agent.next_id(), tool=WAIT_TOOL, args={"timeout": 100})
        await agent.send(wait)
        assert isinstance(await agent.request(Ping), Pong)  # other requests are still answered
        await controller.call(Jump, next_event=True)  # 5 s: an ENV event, no notification
        await agent.until(lambda f: isinstance(f, EventItem) and f.event.time == 5.0)
        await controller.call(Jump, next_event=True)  # 6 s: the user's message
        reply = await agent.reply_to(wait.id)
    assert isinstance(reply, Result)
    note = next(f for f in agent.frames if isinstance(f, NotificationItem))
    assert note.notification.message_type == "USER_MESSAGE"
    assert agent.frames.index(note) < agent.frames.index(reply)
    assert not any(
        isinstance(f, Result | Error) and f.id == wait.id
        for f in agent.frames[: agent.frames.index(note)]
    )


async def test_wait_for_notification_answers_when_its_timeout_passes_in_simulated_time() -> None:
    async with (
        serving() as service,
        attach(service, Role.AGENT) as agent,
        attach(service, Role.CONTROLLER) as controller,
    ):
        wait = CallTool(id=agent.next_id(), tool=WAIT_TOOL, args={"timeout": 3})
        await agent.send(wait)
        await agent.request(Ping)
        await controller.call(Jump, by=4.0)
        reply = await agent.reply_to(wait.id)
    assert isinstance(reply, Result)
    # ARE announces the timeout itself, at the timeout's simulated time.
    note = next(f for f in agent.frames if isinstance(f, NotificationItem))
    assert "timeout" in note.notification.message and note.notification.timestamp == 3.0
    assert agent.frames.index(note) < agent.frames.index(reply)


async def test_a_file_tools_error_names_the_agents_path_not_the_hosts() -> None:
    async with serving() as service, attach(service, Role.AGENT) as agent:
        session = service.registry.get(TUTORIAL)
        assert session is not None
        (app,) = [a for a in session.sim.env.apps.values() if hasattr(a, "tmpdir")]
        error = await agent.fail(CallTool, tool=CAT, args={"path": "/notes/missing.txt"})
    # The call's AGENT event came before its error, with ARE's exception.
    event = next(f for f in agent.frames if isinstance(f, EventItem) and f.event.function == "cat")
    assert error.code == ErrorCode.TOOL_FAILED and "'/notes/missing.txt'" in error.message
    assert app.tmpdir not in error.message and "are_simulation" not in error.message
    assert event.event.exception is not None and "'/notes/missing.txt'" in event.event.exception
    assert "are_simulation" not in event.event.exception
