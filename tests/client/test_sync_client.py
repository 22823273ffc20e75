"""The blocking wrapper: the async client's API from plain synchronous code."""

from __future__ import annotations

import threading

import anyio
import pytest
from anyio.from_thread import start_blocking_portal

from areasync.client import UnknownToolError, connect_sync
from areasync.protocol import CallTool, ClientFrame, ClockState, ErrorCode, Jump, ProtocolError
from areasync.testing import AreasyncServer
from tests.client.fake_server import TOKEN, FakeServer, event


def test_sync_client_calls_tools_and_iterates_the_stream() -> None:
    async def echo(frame: ClientFrame) -> object:
        assert isinstance(frame, CallTool)
        if frame.tool == "Nope__x":
            raise ProtocolError(ErrorCode.UNKNOWN_TOOL, "no such tool")
        return frame.args

    # The fake server runs on its own loop thread; the code under test is plain blocking code.
    with start_blocking_portal("asyncio") as portal:
        serving = portal.wrap_async_context_manager(FakeServer())
        fake = serving.__enter__()
        fake.handlers["call_tool"] = echo
        for _ in range(3):
            fake.append(event)
        try:
            with connect_sync(fake.url, token=TOKEN, since=0) as sim:
                assert sim.call_tool("App__do", {"a": 1}, b=2, timeout=5) == {"a": 1, "b": 2}
                with pytest.raises(UnknownToolError):
                    sim.call_tool("Nope__x", timeout=5)
                seqs = []
                for item in sim.stream():
                    seqs.append(item.seq)
                    if len(seqs) == 3:
                        break
                assert seqs == [1, 2, 3]
                assert sim.ping(timeout=5) >= 0
        finally:
            serving.__exit__(None, None, None)


def test_sync_client_sends_an_exclusive_jump() -> None:
    async def clock(frame: ClientFrame) -> object:
        assert isinstance(frame, Jump)
        return ClockState(state="running", time=frame.to or 0.0, tick=0, mode="fast", speed=1.0)

    with start_blocking_portal("asyncio") as portal:
        serving = portal.wrap_async_context_manager(FakeServer())
        fake = serving.__enter__()
        fake.handlers["jump"] = clock
        try:
            with connect_sync(fake.url, role="controller", token=TOKEN) as sim:
                state = sim.jump(to=5.0, inclusive=False, timeout=5)
        finally:
            serving.__exit__(None, None, None)
    [jump] = [frame for frame in fake.received if isinstance(frame, Jump)]
    assert (jump.to, jump.inclusive, state.time) == (5.0, False, 5.0)


def test_sync_client_raises_timeout_for_a_wall_timeout() -> None:
    async def hang(frame: ClientFrame) -> object:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    with start_blocking_portal("asyncio") as portal:
        serving = portal.wrap_async_context_manager(FakeServer())
        fake = serving.__enter__()
        fake.handlers["call_tool"] = hang
        try:
            with connect_sync(fake.url, token=TOKEN) as sim, pytest.raises(TimeoutError):
                sim.call_tool("App__do", timeout=0.05)
        finally:
            serving.__exit__(None, None, None)


def test_sync_client_leaves_no_thread_behind() -> None:
    before = threading.active_count()
    with start_blocking_portal("asyncio") as portal:
        serving = portal.wrap_async_context_manager(FakeServer())
        fake = serving.__enter__()
        try:
            with connect_sync(fake.url, token=TOKEN) as sim:
                sim.ping(timeout=5)
        finally:
            serving.__exit__(None, None, None)
    assert threading.active_count() == before


async def test_sync_client_runs_an_agent_loop_against_the_real_server(
    areasync_server: AreasyncServer,
) -> None:
    def blocking_agent() -> list[str]:
        # Plain synchronous code, as an RL loop would be; it runs in a worker thread so that
        # the in-process server keeps serving on this test's event loop.
        with connect_sync(areasync_server.url, role="agent", token=areasync_server.token) as sim:
            tools = sim.list_tools(timeout=10)
            notes = sim.wait_for_notification(60, wall_timeout=10)
            sim.call_tool(
                "AgentUserInterface__send_message_to_user", content="hello from sync", timeout=10
            )
            sim.idle(timeout=10)
            sim.wait_ended(timeout=10)
            assert tools
            return [note.message_type for note in notes]

    with anyio.fail_after(30):
        kinds = await anyio.to_thread.run_sync(blocking_agent)
    assert kinds == ["USER_MESSAGE"]
    replies = [
        e for e in areasync_server.simulation().events() if e.function == "send_message_to_user"
    ]
    assert [e.args["content"] for e in replies] == ["hello from sync"]
