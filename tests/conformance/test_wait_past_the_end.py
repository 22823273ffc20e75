"""`wait_for_notification` at the end of the scenario behaves as ARE's: it ignores the duration.

ARE's `Environment.wait_for_next_notification` fires what is due up to the wait's timeout and
jumps to its end even past the scenario's duration; the agent then acts there, and the loop ends
the run at its next step. Here ARE's real Environment (on a fake clock, driven from this thread
as an agent drives it) is the reference for the engine's port, and a fast-mode agent over the
service gets the same: its wait ends past the end, and it still has its turn there.
"""

from __future__ import annotations

from typing import Any

from are.simulation.apps import AgentUserInterface
from are.simulation.apps.system import SystemApp
from are.simulation.environment import Environment, EnvironmentConfig
from are.simulation.types import EventRegisterer

from areasync import SyncEnvironment
from areasync.conformance.normal_form import LogEntry, normalize_events
from areasync.conformance.reference_loops import fake_wall_clock
from areasync.protocol import CallTool, Idle, Role
from tests.scenarios import timeline
from tests.service.support import attach, serving

WAIT = "SystemApp__wait_for_notification"
TIMELINE = "areasync_test_timeline"  # the session id of `timeline()`


def wait_near_the_end(
    environment: type[Environment], late_event_at: float | None
) -> tuple[float, list[LogEntry]]:
    """Duration 10 s; at 8 s the agent waits 5 s, then answers. Returns (woke at, log)."""
    env = environment(EnvironmentConfig(start_time=0, duration=10, queue_based_loop=False))
    system, aui = SystemApp(), AgentUserInterface()
    env.register_apps([system, aui])
    if late_event_at is not None:
        with EventRegisterer.capture_mode():
            late = aui.send_message_to_agent(content="past the end").with_id("late")
        late.event_time = late_event_at
        env.event_queue.put(late)
    env.time_manager.add_offset(8)
    system.wait_for_notification(timeout=5)
    woke = env.time_manager.time()
    aui.send_message_to_user(content="got it")
    return woke, normalize_events(env.event_log.list_view(), 0.0)


def ares(late_event_at: float | None) -> tuple[float, list[LogEntry]]:
    with fake_wall_clock():
        return wait_near_the_end(Environment, late_event_at)


def test_a_wait_times_out_past_the_end_as_ares_does() -> None:
    ours = wait_near_the_end(SyncEnvironment, None)
    assert ours == ares(None)
    assert ours[0] == 13.0


def test_a_wait_fires_an_event_past_the_end_as_ares_does() -> None:
    ours = wait_near_the_end(SyncEnvironment, 12.0)
    assert ours == ares(12.0)
    assert ours[0] == 12.0 and [e.time for e in ours[1]] == [8.0, 12.0, 12.0]


async def test_a_fast_agent_waiting_past_the_end_acts_where_its_wait_ended() -> None:
    async with (
        serving(timeline(duration=10.0, initialize=True), mode="fast") as service,
        attach(service, Role.AGENT, session=TIMELINE) as agent,
        attach(service, Role.OBSERVER, session=TIMELINE, since=0) as observer,
    ):
        await agent.call(CallTool, tool=WAIT, args={"timeout": 15})
        now: dict[str, Any] = await agent.call(CallTool, tool="SystemApp__get_current_time")
        await agent.call(Idle)
        ended = await observer.until_ended()
    assert float(now["current_timestamp"]) == 15.0  # ARE jumps to the timeout, past the end
    assert ended.state == "stopped"
