"""Fast mode over the socket: time stands still during the agent's turn, jumps when it is idle."""

from __future__ import annotations

from typing import Any

import anyio

from areasync.protocol import CallTool, EventItem, GetState, Idle, Jump, Resume, Role
from areasync.service.sessions.session import WAITING_HOLDER
from tests.service.support import Peer, attach, serving

NOW = "SystemApp__get_current_time"


async def _now(agent: Peer) -> float:
    value: dict[str, Any] = await agent.call(CallTool, tool=NOW)
    return float(value["current_timestamp"])


async def test_a_fast_session_holds_its_clock_until_an_agent_attaches() -> None:
    async with serving(mode="fast") as service, attach(service, Role.OBSERVER) as observer:
        sim = service.registry.get("scenario_tutorial").sim  # type: ignore[union-attr]
        await observer.call(GetState)
        await anyio.wait_all_tasks_blocked()
        assert sim.now == 0.0 and not sim.ended and WAITING_HOLDER in sim.leases


async def test_time_stands_still_during_the_agents_turn_and_jumps_when_it_is_idle() -> None:
    async with serving(mode="fast") as service, attach(service, Role.AGENT) as agent:
        assert await _now(agent) == 0.0
        assert await _now(agent) == 0.0  # still the agent's turn: frozen
        await agent.call(Idle)
        # Events at 5 s and 6 s fire; the user's message at 6 s is the agent's next turn.
        await agent.until(lambda f: f.__struct_config__.tag == "notification")
        assert await _now(agent) == 6.0
        assert await _now(agent) == 6.0


async def test_wait_for_notification_ends_the_turn_until_the_next_notification() -> None:
    async with serving(mode="fast") as service, attach(service, Role.AGENT) as agent:
        await agent.call(CallTool, tool="SystemApp__wait_for_notification", args={"timeout": 100})
        assert await _now(agent) == 6.0


async def test_a_departing_agent_lets_the_session_run_on() -> None:
    async with serving(mode="fast") as service, attach(service, Role.OBSERVER) as observer:
        async with attach(service, Role.AGENT) as agent:
            await _now(agent)
        ended = await observer.until_ended()
    assert ended.state == "stopped" and observer.items[-2].clock.time == 20.0  # type: ignore[union-attr]


async def test_resume_starts_a_fast_session_without_an_agent() -> None:
    async with serving(mode="fast") as service, attach(service, Role.CONTROLLER) as controller:
        await controller.call(Resume)
        ended = await controller.until_ended()
    assert ended.state == "stopped"


async def test_jumps_move_a_waiting_session_but_keep_it_waiting() -> None:
    async with serving(mode="fast") as service, attach(service, Role.CONTROLLER) as controller:
        state = await controller.call(Jump, next_event=True)
        await controller.call(GetState)
        await anyio.wait_all_tasks_blocked()
        sim = service.registry.get("scenario_tutorial").sim  # type: ignore[union-attr]
        assert state["time"] == 5.0 and sim.now == 5.0 and not sim.ended


async def test_after_an_exclusive_jump_the_targets_events_fire_there_once_the_agent_idles() -> None:
    async with (
        serving(mode="fast") as service,
        attach(service, Role.AGENT) as agent,
        attach(service, Role.CONTROLLER) as controller,
    ):
        state = await controller.call(Jump, to=5.0, inclusive=False)
        assert await _now(agent) == 5.0  # the agent's turn, at 5 s, before the event at 5 s
        await agent.call(Idle)
        await agent.until(lambda f: f.__struct_config__.tag == "notification")  # 6 s
    events = [(i.event.time, i.event.event_type) for i in agent.items if isinstance(i, EventItem)]
    assert state["time"] == 5.0
    assert events[:2] == [(5.0, "AGENT"), (5.0, "ENV")]


async def test_an_oracle_fast_session_runs_without_waiting_for_an_agent() -> None:
    async with (
        serving(mode="fast", oracle=True) as service,
        attach(service, Role.OBSERVER, since=0) as observer,
    ):
        ended = await observer.until_ended()
    assert ended.validation is not None and ended.validation.success is True


async def test_an_idle_that_has_not_read_the_latest_notification_keeps_the_agents_turn() -> None:
    async with serving(mode="fast") as service, attach(service, Role.AGENT) as agent:
        await agent.call(Idle)
        note = await agent.until(lambda f: f.__struct_config__.tag == "notification")  # 6 s
        # As if the notification were still on its way: the agent has read up to before it.
        await agent.call(Idle, seen=note.seq - 1)
        await anyio.wait_all_tasks_blocked()
        sim = service.registry.get("scenario_tutorial").sim  # type: ignore[union-attr]
        assert sim.now == 6.0 and not sim.ended


async def test_an_idle_that_has_read_the_latest_notification_lets_time_run_on() -> None:
    async with serving(mode="fast") as service, attach(service, Role.AGENT) as agent:
        await agent.call(Idle)
        note = await agent.until(lambda f: f.__struct_config__.tag == "notification")  # 6 s
        await agent.call(Idle, seen=note.seq)
        ended = await agent.until_ended()
    assert ended.state == "stopped"
