"""A gaia2-cli harness drives an areasync session through the adapter, over real HTTP and SSE."""

from __future__ import annotations

from pathlib import Path

import anyio

from areasync.protocol.frames import Role
from tests.service.adapters.gaia2cli.harness import Harness, SseReader
from tests.service.adapters.gaia2cli.support import (
    TO_USER,
    adapter,
    agent,
    finish,
    harness,
    notified,
)
from tests.service.support import TUTORIAL, WAIT
from tests.waiting import eventually


async def test_a_scenario_turn_runs_through_the_adapter() -> None:
    async with adapter() as service, agent(service) as sim:
        runner = harness(service)
        assert (await runner.health())["connected"] is True
        sent = await runner.notify("Please forward Greg's pdf to John.")
        assert sent["ok"] is True and sent["runId"]
        assert "forward Greg's pdf" in notified(service)
        await sim.call_tool(TO_USER, content="Done: sent to John.")
        await finish(sim)
        done = await runner.wait_status()
        messages = (await runner.messages())["messages"]
    assert [m["message"]["content"][0]["text"] for m in messages] == ["Done: sent to John."]
    assert messages[0]["seq"] == 1 and messages[0]["state"] == "final"
    assert done["status"] in ("complete", "stopped") and done["turn"] == 1
    assert done["last_response"] == "Done: sent to John."
    assert done["num_events"] >= 1 and done["nb_turns"] == 1
    assert set(done["judgment"]) == {"success", "failure_reason"}


async def test_health_is_not_connected_until_an_agent_follows_the_session() -> None:
    async with adapter() as service:
        before = await harness(service).health()
        async with agent(service):
            after = await harness(service).health()
    assert before["connected"] is False and before["ok"] is False
    assert after["connected"] is True and after["backend"] == "areasync"


async def test_health_stays_connected_once_its_agent_has_left() -> None:
    async with adapter() as service:
        async with agent(service):
            pass
        health = await harness(service).health()
    assert health["connected"] is True and health["ok"] is True


async def test_messages_after_resumes_exactly_after_that_seq() -> None:
    async with adapter() as service, agent(service) as sim:
        for text in ("one", "two", "three"):
            await sim.call_tool(TO_USER, content=text)
        runner = harness(service)
        everything = await runner.messages(0)
        rest = await runner.messages(2)
        nothing = await runner.messages(3)
    assert [m["seq"] for m in everything["messages"]] == [1, 2, 3]
    assert [m["message"]["content"][0]["text"] for m in rest["messages"]] == ["three"]
    assert nothing == {"ok": True, "messages": [], "lastSeq": 3}


async def test_every_token_of_the_session_reads_the_same_messages() -> None:
    async with adapter() as service, agent(service) as sim:
        await sim.call_tool(TO_USER, content="hello")
        seen = [
            (await harness(service, role).messages())["messages"]
            for role in (Role.USER, Role.OBSERVER, Role.AGENT, Role.ADMIN)
        ]
    assert all(messages == seen[0] for messages in seen) and len(seen[0]) == 1


async def test_sse_receives_each_message_once_in_order() -> None:
    async with adapter() as service, agent(service) as sim:
        reader = await SseReader.open(service.gaia2_url(TUTORIAL))
        try:
            assert reader.headers["content-type"].startswith("text/event-stream")
            for text in ("one", "two", "three"):
                await sim.call_tool(TO_USER, content=text)
            with anyio.fail_after(WAIT):
                frames = [await reader.next() for _ in range(3)]
            await sim.call_tool(TO_USER, content="four")
            with anyio.fail_after(WAIT):
                fourth = await reader.next()
        finally:
            reader.close()
    assert [event for event, _ in frames] == ["chat"] * 3
    assert [data["seq"] for _, data in frames] == [1, 2, 3]
    assert fourth[1]["seq"] == 4 and fourth[1]["message"]["content"][0]["text"] == "four"


async def test_sse_after_replays_what_was_missed_then_follows() -> None:
    async with adapter() as service, agent(service) as sim:
        for text in ("one", "two"):
            await sim.call_tool(TO_USER, content=text)
        reader = await SseReader.open(service.gaia2_url(TUTORIAL), "?after=1")
        try:
            await sim.call_tool(TO_USER, content="three")
            with anyio.fail_after(WAIT):
                frames = [await reader.next() for _ in range(2)]
        finally:
            reader.close()
    assert [data["seq"] for _, data in frames] == [2, 3]


async def test_sse_ends_with_an_end_frame_when_the_session_ends() -> None:
    async with adapter() as service, agent(service) as sim:
        reader = await SseReader.open(service.gaia2_url(TUTORIAL))
        try:
            await sim.call_tool(TO_USER, content="bye")
            await finish(sim)
            with anyio.fail_after(WAIT):
                frames = [await reader.next() for _ in range(2)]
        finally:
            reader.close()
    assert frames[0][0] == "chat"
    assert frames[1][0] == "end" and frames[1][1]["lastSeq"] == 1


async def test_send_user_message_and_send_notifications_reach_the_agent_as_notify_does() -> None:
    async with adapter() as service, agent(service):
        runner = harness(service)
        await runner.notify("first", route="/send_user_message")
        await runner.notify("[Notification] second", route="/send_notifications")
        texts = notified(service)
    assert "first" in texts and "[Notification] second" in texts


async def test_call_tool_calls_the_sessions_tool_as_its_agent() -> None:
    async with adapter() as service, agent(service):
        status, body = await harness(service, Role.AGENT).call_tool(
            "AgentUserInterface", "send_message_to_user", {"content": "from an action"}
        )
        messages = (await harness(service).messages())["messages"]
    assert status == 200 and body["ok"] is True and isinstance(body["result"], str)
    assert messages[-1]["message"]["content"][0]["text"] == "from an action"


async def test_notify_after_the_session_ended_is_refused() -> None:
    async with adapter() as service, agent(service) as sim:
        await finish(sim)
        runner = harness(service)
        await runner.wait_status()
        status, body = await runner.call("POST", "/notify", {"message": "too late"})
    assert status == 409 and body["ok"] is False and "ended" in body["error"]


async def test_a_journaled_session_answers_notify_once_its_input_is_durable(
    tmp_path: Path,
) -> None:
    async with adapter(state_dir=tmp_path) as service, agent(service):
        sent = await harness(service).notify("journaled")
        journal = service.registry.sessions[TUTORIAL].journal
        assert journal is not None and journal.durable == journal.appended
    assert sent["ok"] is True and "journaled" in notified_text(tmp_path)


def notified_text(state_dir: Path) -> str:
    """What the session's journal files hold, as text (the input is recorded there)."""
    return "".join(p.read_bytes().decode(errors="replace") for p in state_dir.rglob("*.journal"))


async def test_sse_clients_that_leave_a_quiet_session_are_released_at_once() -> None:
    async with adapter() as service, agent(service):
        base = service.gaia2_url(TUTORIAL)
        runner = harness(service)
        readers = [await SseReader.open(base) for _ in range(3)]
        assert (await runner.health())["sseClients"] == 3
        for reader in readers:
            reader.close()
        # No message comes: only their leaving can release them.
        await eventually(lambda: released(runner), within=WAIT)


async def released(runner: Harness) -> bool:
    return bool((await runner.health())["sseClients"] == 0)
