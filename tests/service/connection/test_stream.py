"""One stream per session: every subscriber sees the same items, seq contiguous; controls."""

from __future__ import annotations

import msgspec
import pytest

from areasync.protocol import (
    CallTool,
    ClockItem,
    EndedItem,
    EventItem,
    Jump,
    ListTools,
    NotificationItem,
    Pause,
    Resume,
    Role,
    SendUserMessage,
    SetSpeed,
    Stop,
    Tick,
)
from areasync.service import ServiceConfig
from tests.service.support import attach, plain, serving, tokens


async def test_agent_observers_and_controller_see_identical_contiguous_streams() -> None:
    async with serving() as service:
        t = tokens(service)
        async with (
            attach(service, Role.AGENT, token=t[Role.AGENT], since=0) as agent,
            attach(service, Role.OBSERVER, token=t[Role.OBSERVER], since=0) as first,
            attach(service, Role.OBSERVER, token=t[Role.OBSERVER], since=0) as second,
            attach(service, Role.CONTROLLER, token=t[Role.CONTROLLER], since=0) as controller,
        ):
            await agent.call(CallTool, tool="SystemApp__get_current_time")
            await controller.call(Jump, next_event=True)
            await controller.call(Jump, next_event=True)
            await agent.call(CallTool, tool="SystemApp__get_current_time")
            await controller.call(Stop)
            peers = [agent, first, second, controller]
            for peer in peers:
                await peer.until_ended()
    streams = [[plain(item) for item in peer.items] for peer in peers]
    assert all(stream == streams[0] for stream in streams)
    assert agent.seqs == list(range(1, len(agent.seqs) + 1))
    assert isinstance(agent.items[-1], EndedItem)


async def test_pause_and_resume_broadcast_clock_items() -> None:
    async with (
        serving(mode="realtime") as service,
        attach(service, Role.CONTROLLER) as controller,
        attach(service, Role.OBSERVER) as observer,
    ):
        paused = await controller.call(Pause)
        clock = await observer.until(lambda f: isinstance(f, ClockItem))
        assert paused["state"] == "paused" and clock.clock.state == "paused"  # type: ignore[union-attr]
        resumed = await controller.call(Resume)
        clock = await observer.until(lambda f: isinstance(f, ClockItem))
        assert resumed["state"] == "running" and clock.clock.state == "running"  # type: ignore[union-attr]


async def test_jump_by_and_to_move_the_clock_and_broadcast_it() -> None:
    async with serving() as service, attach(service, Role.CONTROLLER) as controller:
        by = await controller.call(Jump, by=2.5)
        to = await controller.call(Jump, to=4.0)
        clocks = [item.clock.time for item in controller.items if isinstance(item, ClockItem)]
    assert (by["time"], to["time"]) == (2.5, 4.0)
    assert clocks[-2:] == [2.5, 4.0]


async def test_jump_to_the_next_event_fires_it() -> None:
    async with serving() as service, attach(service, Role.CONTROLLER) as controller:
        state = await controller.call(Jump, next_event=True)
    assert state["time"] == 5.0
    assert [i.event.time for i in controller.items if isinstance(i, EventItem)] == [5.0]


async def test_an_exclusive_jump_stops_before_the_targets_events_and_the_agent_acts_there() -> None:
    # scenario_tutorial has events at 5 s and 6 s; a manual session runs them on its next tick.
    async with (
        serving() as service,
        attach(service, Role.CONTROLLER) as controller,
        attach(service, Role.AGENT) as agent,
    ):
        state = await controller.call(Jump, to=5.0, inclusive=False)
        now = await agent.call(CallTool, tool="SystemApp__get_current_time")
        await controller.call(Tick)
        await agent.call(ListTools)  # the tick's events are on the agent's stream before this
    assert (state["time"], now["current_timestamp"]) == (5.0, 5.0)
    events = [(i.event.time, i.event.event_type) for i in agent.items if isinstance(i, EventItem)]
    assert events == [(5.0, "AGENT"), (5.0, "ENV")]


async def test_a_backward_jump_is_refused_and_changes_nothing() -> None:
    async with serving() as service, attach(service, Role.CONTROLLER) as controller:
        await controller.call(Jump, by=3.0)
        error = await controller.fail(Jump, to=1.0)
        assert error.code == "invalid_field" and "forward" in error.message
        assert service.registry.get("scenario_tutorial").sim.now == 3.0  # type: ignore[union-attr]


async def test_tick_runs_ticks_of_the_time_increment() -> None:
    async with serving() as service, attach(service, Role.CONTROLLER) as controller:
        state = await controller.call(Tick, n=3)
    assert state["tick"] == 3


async def test_set_speed_changes_the_speed_and_broadcasts_it() -> None:
    async with serving(mode="realtime") as service, attach(service, Role.CONTROLLER) as controller:
        state = await controller.call(SetSpeed, speed=4.0)
        clock = await controller.until(lambda f: isinstance(f, ClockItem) and f.clock.speed == 4.0)
    assert state["speed"] == 4.0 and clock is not None


async def test_stop_ends_the_session_for_every_subscriber() -> None:
    async with (
        serving() as service,
        attach(service, Role.CONTROLLER) as controller,
        attach(service, Role.OBSERVER) as observer,
    ):
        validation = await controller.call(Stop)
        ended = await observer.until_ended()
    assert ended.state == "stopped" and msgspec.to_builtins(ended.validation) == validation


async def test_mutating_requests_after_the_end_are_session_ended() -> None:
    async with serving() as service, attach(service, Role.ADMIN) as admin:
        await admin.call(Stop)
        errors = [
            await admin.fail(CallTool, tool="SystemApp__get_current_time"),
            await admin.fail(Jump, by=1.0),
            await admin.fail(SendUserMessage, content="anyone?"),
        ]
        tools = await admin.call(ListTools)
    assert {e.code for e in errors} == {"session_ended"} and tools


async def test_the_user_message_reaches_the_agent_as_a_notification() -> None:
    async with serving() as service:
        user_token = tokens(service)[Role.USER]
        async with (
            attach(service, Role.AGENT) as agent,
            attach(service, Role.USER, token=user_token) as user,
        ):
            await user.call(SendUserMessage, content="please send the pdf")
            note = await agent.until(lambda f: isinstance(f, NotificationItem))
    assert isinstance(note, NotificationItem)
    assert "please send the pdf" in note.notification.message


async def test_sessions_run_fast_mode_in_the_configured_step_budget() -> None:
    async with serving(step_budget=0.0005) as service:
        session = service.registry.get("scenario_tutorial")
        assert session is not None
        assert session.sim.settings.step_budget == 0.0005


def test_a_non_positive_step_budget_is_refused_with_its_name() -> None:
    with pytest.raises(ValueError, match="step_budget must be > 0"):
        ServiceConfig(step_budget=0)
