"""No tool call of an agent may freeze the server: the per-call budget over a live socket.

An agent token chooses the cost of some of ARE's tools: a regular expression searched through
text it wrote itself, a listing of a tree it built, Python code that loops as long as it is
asked. Each test here drives a real server the way such an agent would, and checks that the
call is answered `tool_budget_exceeded` (or `tool_failed` for a creation over its cap) while
the session, and every other session, goes on. Ordering, never timing: where another session
must answer while the bad call runs, a gate holds the call's worker thread until it has.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from areasync.bridge import patterns
from areasync.protocol import CallTool, Error, ErrorCode, EventItem, Jump, Ping, Pong, Role
from tests.hardening.faults import watch_faults
from tests.scenarios import RunawayScenario
from tests.service.support import TUTORIAL, Gate, attach, serving

# A title whose search by `(a|a)+$` takes 2 ** 27 steps of backtracking: seconds with the
# standard library (holding the interpreter lock), far past any budget here with `regex`.
TITLE = "a" * 26 + "!"
CATASTROPHIC = "(a|a)+$"
REGEX_SEARCH = "MessagingApp__regex_search"


async def _conversation_titled(agent: Any, title: str) -> None:
    await agent.call(
        CallTool,
        tool="MessagingApp__create_conversation",
        args={"participants": ["Bo"], "title": title},
    )


def _agent_event(agent: Any, function: str) -> EventItem:
    return next(
        f
        for f in agent.frames
        if isinstance(f, EventItem)
        and f.event.event_type == "AGENT"
        and f.event.function == function
    )


async def test_a_catastrophic_regex_is_answered_tool_budget_exceeded_and_the_session_goes_on() -> (
    None
):
    with watch_faults() as faults:
        async with serving(tool_budget=1.0) as service, attach(service, Role.AGENT) as agent:
            await _conversation_titled(agent, TITLE)
            error = await agent.fail(CallTool, tool=REGEX_SEARCH, args={"query": CATASTROPHIC})
            found = await agent.call(CallTool, tool=REGEX_SEARCH, args={"query": "^a{26}!$"})
            logged = _agent_event(agent, "regex_search")
    assert error.code == ErrorCode.TOOL_BUDGET_EXCEEDED
    assert "1 s" in error.message and "--tool-budget" in error.message
    assert logged.event.exception is not None and "tool_budget" in logged.event.exception
    assert len(found) == 1  # the same session, the same search with a pattern that ends
    assert faults.problems == []


@pytest.fixture
def gate(monkeypatch: pytest.MonkeyPatch) -> Iterator[Gate]:
    gate = Gate()
    real = patterns.offload

    def gated(fn: Callable[[], Any]) -> Any:
        def held() -> Any:
            gate.hold()
            return fn()

        return real(held)

    monkeypatch.setattr(patterns, "offload", gated)
    yield gate
    gate.open()  # never leave a worker thread waiting


async def test_another_session_answers_while_a_catastrophic_regex_runs(gate: Gate) -> None:
    async with (
        serving(TUTORIAL, TUTORIAL, tool_budget=1.0) as service,
        attach(service, Role.AGENT) as agent,
        attach(service, Role.AGENT, session=f"{TUTORIAL}-2") as other,
    ):
        await _conversation_titled(agent, TITLE)
        bad = CallTool(id=agent.next_id(), tool=REGEX_SEARCH, args={"query": CATASTROPHIC})
        await agent.send(bad)
        await gate.wait_entered()  # the match is under way, in its worker thread
        pong = await other.request(Ping)
        session = service.registry.get(TUTORIAL)
        assert session is not None
        still_running = session.sim.lane.locked()
        gate.open()
        reply = await agent.reply_to(bad.id)
    assert isinstance(pong, Pong) and still_running
    assert isinstance(reply, Error) and reply.code == ErrorCode.TOOL_BUDGET_EXCEEDED


async def test_a_tree_listing_past_max_listing_is_refused_and_the_session_goes_on() -> None:
    deep = "/deep/" + "/".join(f"d{i}" for i in range(40))
    fs = "SandboxLocalFileSystem"
    async with serving(max_listing=30) as service, attach(service, Role.AGENT) as agent:
        await agent.call(CallTool, tool=f"{fs}__makedirs", args={"path": deep})
        error = await agent.fail(CallTool, tool=f"{fs}__tree", args={"path": "/deep"})
        listed = await agent.call(CallTool, tool=f"{fs}__ls", args={"path": "/deep"})
    assert error.code == ErrorCode.TOOL_BUDGET_EXCEEDED
    assert "30 directory entries" in error.message and "--max-listing" in error.message
    assert listed == ["/deep/d0"]


async def test_files_past_max_files_created_are_refused_saying_so() -> None:
    fs = "SandboxLocalFileSystem"
    async with serving(max_files_created=5) as service, attach(service, Role.AGENT) as agent:
        error = await agent.fail(CallTool, tool=f"{fs}__makedirs", args={"path": "/a/b/c/d/e/f/g"})
        made = await agent.call(CallTool, tool=f"{fs}__exists", args={"path": "/a/b/c/d/e"})
        refused = await agent.call(CallTool, tool=f"{fs}__exists", args={"path": "/a/b/c/d/e/f"})
    assert error.code == ErrorCode.TOOL_FAILED
    assert "max_files_created" in error.message and "--max-files-created" in error.message
    assert made is True and refused is False


async def test_a_pure_python_runaway_tool_is_stopped_by_the_watchdog() -> None:
    with watch_faults() as faults:
        async with (
            serving(RunawayScenario(), tool_budget=0.5) as service,
            attach(service, Role.AGENT, session=RunawayScenario.scenario_id) as agent,
        ):
            error = await agent.fail(CallTool, tool="RunawayApp__spin", args={"seconds": 600.0})
            marks = await agent.call(CallTool, tool="RunawayApp__mark", args={"label": "next"})
            logged = _agent_event(agent, "spin")
    assert error.code == ErrorCode.TOOL_BUDGET_EXCEEDED and "0.5 s" in error.message
    assert logged.event.exception is not None and "tool_budget" in logged.event.exception
    assert marks == 1
    assert faults.problems == []


async def test_a_runaway_scenario_event_is_logged_failed_and_the_run_goes_on() -> None:
    scenario = RunawayScenario(spin_at=1.0, mark_at=2.0)
    async with (
        serving(scenario, tool_budget=0.5) as service,
        attach(service, Role.CONTROLLER, session=scenario.scenario_id) as controller,
    ):
        await controller.call(Jump, to=3.0)
        events = [f.event for f in controller.frames if isinstance(f, EventItem)]
    spin, mark = (e for e in events if e.event_type == "ENV")
    assert spin.function == "spin" and spin.exception and "tool_budget" in spin.exception
    assert mark.function == "mark" and mark.exception is None and mark.return_value == 1
