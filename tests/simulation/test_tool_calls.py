"""Tool calls by ARE public name, with ARE's error semantics."""

import anyio
import pytest

from areasync import InvalidArgsError, Simulation, ToolFailedError, UnknownToolError
from tests.scenarios import timeline


def manual(*times: float) -> Simulation:
    return Simulation.load(timeline(*times), mode="manual")


async def test_list_tools_gives_public_names_with_typed_arguments() -> None:
    async with manual() as sim:
        tools = {t.name: t for t in sim.list_tools()}
        mark = tools["TimelineApp__mark"]
        assert [(a.name, a.type, a.required) for a in mark.args] == [("label", "str", True)]
        assert "SystemApp__wait_for_notification" in tools


async def test_a_tool_call_returns_its_result_and_logs_an_agent_event() -> None:
    async with manual() as sim:
        assert await sim.call_tool("TimelineApp__mark", {"label": "x"}) == 1
        [event] = sim.events()
        assert (event.event_type, event.function, event.args) == ("AGENT", "mark", {"label": "x"})


async def test_unknown_tool_is_an_error_and_touches_nothing() -> None:
    async with manual() as sim:
        seq = sim.log.seq
        with pytest.raises(UnknownToolError, match="list_tools"):
            await sim.call_tool("TimelineApp__nope")
        assert sim.log.seq == seq and len(sim.env.event_log) == 0


async def test_wrong_argument_types_are_an_error_and_log_nothing() -> None:
    async with manual() as sim:
        with pytest.raises(InvalidArgsError, match="must be of type"):
            await sim.call_tool("TimelineApp__mark", {"label": 3})
        assert len(sim.env.event_log) == 0


async def test_missing_arguments_are_an_error_and_log_nothing() -> None:
    async with manual() as sim:
        with pytest.raises(InvalidArgsError, match="label"):
            await sim.call_tool("TimelineApp__mark", {})
        assert len(sim.env.event_log) == 0


async def test_a_raising_app_logs_an_agent_event_with_the_exception() -> None:
    async with manual() as sim:
        with pytest.raises(ToolFailedError, match="boom"):
            await sim.call_tool("TimelineApp__explode", {"reason": "boom"})
        [event] = sim.events()
        assert event.event_type == "AGENT" and event.exception == "boom"


async def test_wait_for_notification_returns_at_its_timeout_in_simulated_time() -> None:
    async with manual(1, 4) as sim:
        async with anyio.create_task_group() as tg:
            done = anyio.Event()

            async def wait() -> None:
                await sim.call_tool("SystemApp__wait_for_notification", {"timeout": 10})
                done.set()

            tg.start_soon(wait)
            await anyio.wait_all_tasks_blocked()
            await sim.jump(by=9)
            assert not done.is_set()
            await sim.jump(by=2)
            with anyio.fail_after(5):
                await done.wait()
        assert "timeout" in sim.notifications()[-1].message


async def test_wait_for_notification_returns_early_on_a_user_message() -> None:
    async with manual() as sim:
        async with anyio.create_task_group() as tg:
            done = anyio.Event()

            async def wait() -> None:
                await sim.call_tool("SystemApp__wait_for_notification", {"timeout": 100})
                done.set()

            tg.start_soon(wait)
            await anyio.wait_all_tasks_blocked()
            await sim.send_user_message("hello agent")
            with anyio.fail_after(5):
                await done.wait()
        # The wait's timeout was cancelled: jumping past it produces no timeout notification.
        await sim.jump(by=200)
        assert not any("timeout" in n.message for n in sim.notifications())


async def test_fast_mode_jumps_to_the_wait_timeout_when_the_agent_waits() -> None:
    sim = Simulation.load(timeline(duration=None), mode="fast")
    async with sim:
        sim.begin_lease("agent")
        await sim.call_tool("SystemApp__wait_for_notification", {"timeout": 42}, holder="agent")
        assert sim.now == 42.0
        await sim.stop()
