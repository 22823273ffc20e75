"""A thawed copy of a session's clock or stream is made one of its own by its own public
`revive` (a snapshot's fork calls it: `areasync.simulation.snapshots`), never by a caller
setting its private fields."""

from __future__ import annotations

import copy

import anyio
import pytest

from areasync.engine.clock import ClockError, VirtualClock
from areasync.engine.stream import StreamLog
from areasync.protocol.frames import Mode


class Wall:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_revived_clock_is_held_once_whatever_held_the_original_when_it_was_copied() -> None:
    wall = Wall()
    original = VirtualClock(0.0, mode=Mode.REALTIME, wall=wall)
    original.hold()  # the lane's hold
    original.hold()  # a control's
    clock = copy.deepcopy(original)
    clock.revive()
    assert not clock.flowing
    clock.unhold()  # the driver lets the load's hold go
    assert clock.flowing
    with pytest.raises(ClockError):
        clock.unhold()


def test_a_revived_copy_of_a_stream_wakes_its_own_waiters() -> None:
    original: StreamLog[str] = StreamLog()
    original.append(lambda seq: f"item {seq}")

    async def wait_on_the_original() -> None:
        with anyio.move_on_after(0):  # leaves a waiter's event of this event loop behind
            await original.wait_beyond(1)

    anyio.run(wait_on_the_original)
    log = copy.copy(original)
    log.items = list(original.items)
    log.revive()

    async def wait_on_the_copy() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(log.wait_beyond, 1)
            await anyio.lowlevel.checkpoint()
            log.append(lambda seq: f"item {seq}")
        assert log.seq == 2

    anyio.run(wait_on_the_copy)
