"""`CommandLane`: one session's commands run one at a time, in the order they asked.

Driven directly, with no simulation: tasks take the lane and record when they run.
"""

from __future__ import annotations

import anyio
import anyio.lowlevel

from areasync.simulation import CommandLane


async def test_a_free_lane_is_taken_without_a_task_switch() -> None:
    lane = CommandLane()
    other_ran = False

    async def other() -> None:
        nonlocal other_ran
        other_ran = True

    async with anyio.create_task_group() as tg:
        tg.start_soon(other)
        async with lane:
            assert lane.locked()
            assert not other_ran  # no checkpoint: the other task has not had a turn
    assert not lane.locked()


async def test_waiting_commands_run_in_the_order_they_asked() -> None:
    lane = CommandLane()
    order: list[int] = []

    async def command(n: int) -> None:
        async with lane:
            order.append(n)
            await anyio.lowlevel.checkpoint()  # yield while holding: nobody may overtake

    async with anyio.create_task_group() as tg, lane:
        for n in range(5):
            tg.start_soon(command, n)
        await anyio.wait_all_tasks_blocked()
        assert lane.waiting == 5
    assert order == [0, 1, 2, 3, 4]


async def test_a_command_cancelled_while_waiting_leaves_the_line() -> None:
    lane = CommandLane()
    ran: list[str] = []
    scope = anyio.CancelScope()

    async def command(name: str) -> None:
        async with lane:
            ran.append(name)

    async def cancellable() -> None:
        with scope:
            await command("cancelled")

    async with anyio.create_task_group() as tg, lane:
        tg.start_soon(cancellable)
        await anyio.wait_all_tasks_blocked()
        tg.start_soon(command, "kept")
        await anyio.wait_all_tasks_blocked()
        assert lane.waiting == 2
        scope.cancel()
        await anyio.wait_all_tasks_blocked()
        assert lane.waiting == 1
    assert ran == ["kept"]
    assert not lane.locked()
