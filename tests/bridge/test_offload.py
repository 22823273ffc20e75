"""`areasync.bridge.offload`: a blocking call deep in synchronous code, awaited off the loop.

The synchronous code stands in for ARE's (a tick that reaches the judge); the blocking call is
a function gated on a `threading.Event`, so every test is about order, never about timing.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable

import anyio
import anyio.lowlevel
import anyio.to_thread
import pytest

from areasync.bridge.offload import OffloadRefusedError, bridged, inside_bridge, offload

marker: contextvars.ContextVar[str | None] = contextvars.ContextVar("marker", default=None)
WAIT_S = 10.0


def deep_sync_code(call: Callable[[], object]) -> tuple[str, object]:
    """Synchronous frames around a blocking call, as ARE's tick around its judge."""
    marker.set("set by the synchronous code")
    result = offload(call)
    return threading.current_thread().name, result


async def test_the_loop_serves_other_tasks_while_a_bridged_call_blocks() -> None:
    gate = threading.Event()
    entered = threading.Event()

    def blocking() -> str:
        entered.set()
        assert gate.wait(WAIT_S)
        return "answer"

    async def session() -> tuple[str, object]:
        return deep_sync_code(blocking)

    results: list[tuple[str, object]] = []
    async with anyio.create_task_group() as tg:

        async def run() -> None:
            results.append(await bridged(session()))

        tg.start_soon(run)
        assert await anyio.to_thread.run_sync(entered.wait, WAIT_S)
        await anyio.lowlevel.checkpoint()  # the loop runs this task while the call is out
        assert not results
        gate.set()
    [(thread, answer)] = results
    assert answer == "answer"
    assert thread == threading.main_thread().name  # the synchronous frames stayed on the loop


async def test_the_blocking_call_runs_in_a_worker_thread_within_the_callers_context() -> None:
    seen: list[tuple[str, str | None]] = []

    def blocking() -> None:
        seen.append((threading.current_thread().name, marker.get()))

    async def session() -> str | None:
        deep_sync_code(blocking)
        return marker.get()

    after = await bridged(session())
    [(thread, value)] = seen
    assert thread != threading.main_thread().name
    assert value == "set by the synchronous code"
    assert after == "set by the synchronous code"  # one context throughout


async def test_an_exception_of_the_blocking_call_is_raised_in_the_synchronous_code() -> None:
    def blocking() -> None:
        raise LookupError("the endpoint said no")

    async def session() -> str:
        try:
            offload(blocking)
        except LookupError as exc:
            return f"caught: {exc}"
        return "not raised"

    assert await bridged(session()) == "caught: the endpoint said no"


async def test_a_bridged_coroutine_awaits_as_usual_between_calls() -> None:
    async def session() -> list[object]:
        first = offload(lambda: 1)
        await anyio.lowlevel.checkpoint()
        second = offload(lambda: 2)
        return [first, second, inside_bridge()]

    assert await bridged(session()) == [1, 2, True]


async def test_a_nested_bridge_is_served_by_the_outer_one() -> None:
    async def inner() -> object:
        return offload(lambda: "inner")

    async def outer() -> object:
        return await bridged(inner())

    assert await bridged(outer()) == "inner"


async def test_a_blocking_call_on_the_loop_outside_a_bridge_is_refused() -> None:
    ran: list[bool] = []
    with pytest.raises(OffloadRefusedError, match="not run"):
        offload(lambda: ran.append(True))
    assert not ran


def test_without_an_event_loop_the_call_runs_right_there() -> None:
    assert deep_sync_code(lambda: "direct") == (threading.main_thread().name, "direct")


async def test_a_cancelled_bridge_leaves_the_blocking_call_behind() -> None:
    gate = threading.Event()
    entered = threading.Event()
    finished = threading.Event()
    went_on: list[bool] = []

    def blocking() -> None:
        entered.set()
        gate.wait(WAIT_S)
        finished.set()

    async def session() -> None:
        offload(blocking)
        went_on.append(True)  # never: the cancellation is raised where the call was made

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(bridged, session())
            assert await anyio.to_thread.run_sync(entered.wait, WAIT_S)
            tg.cancel_scope.cancel()
        assert not finished.is_set()  # the bridge did not wait for the call to come back
        assert not went_on
    finally:
        gate.set()
