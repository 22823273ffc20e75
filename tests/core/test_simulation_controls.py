"""Clock controls on a running simulation: pause, resume, jump, next event, tick, speed, stop."""

import pytest

from areasync import BadStateError, InvalidRequestError, Simulation
from areasync.protocol import ClockItem
from tests.scenarios import timeline


def manual(*times: float, duration: float | None = 30.0) -> Simulation:
    return Simulation.load(timeline(*times, duration=duration), mode="manual", oracle=True)


async def test_manual_time_does_not_move_by_itself() -> None:
    async with manual(1) as sim:
        assert sim.now == 0.0
        assert sim.events() == []


async def test_jump_by_fires_each_due_event_at_its_own_time() -> None:
    async with manual(1, 4, 9) as sim:
        await sim.jump(by=5)
        assert [e.time for e in sim.events()] == [1.0, 4.0]
        assert sim.now == 5.0


async def test_jump_to_an_absolute_time() -> None:
    async with manual(1, 4, 9) as sim:
        await sim.jump(to=9)
        assert [e.time for e in sim.events()] == [1.0, 4.0, 9.0]
        assert sim.now == 9.0


async def test_next_event_fires_exactly_the_next_event() -> None:
    async with manual(3, 6) as sim:
        await sim.next_event()
        assert [e.time for e in sim.events()] == [3.0]
        assert sim.now == 3.0


async def test_tick_runs_time_based_ticks_one_increment_apart() -> None:
    async with manual(0.5, 2.5) as sim:
        clock = await sim.tick(3)
        assert clock.tick == 3
        assert sim.now == 2.0
        assert [e.time for e in sim.events()] == [0.5]


async def test_negative_jump_is_rejected_and_changes_nothing() -> None:
    async with manual(1) as sim:
        await sim.jump(to=5)
        seq = sim.log.seq
        with pytest.raises(InvalidRequestError, match="forward"):
            await sim.jump(by=-1)
        with pytest.raises(InvalidRequestError, match="already at"):
            await sim.jump(to=2)
        assert sim.now == 5.0
        assert sim.log.seq == seq


async def test_jump_needs_exactly_one_target() -> None:
    async with manual(1) as sim:
        with pytest.raises(InvalidRequestError, match="exactly one"):
            await sim.jump(to=3, by=1)
        with pytest.raises(InvalidRequestError, match="exactly one"):
            await sim.jump()


async def test_resume_when_not_paused_is_an_error() -> None:
    async with manual(1) as sim:
        with pytest.raises(BadStateError, match="not paused"):
            await sim.resume()
        assert sim.state == "running"


async def test_pause_then_resume_round_trips_the_state() -> None:
    async with manual(1) as sim:
        assert (await sim.pause()).state == "paused"
        with pytest.raises(BadStateError, match="not running"):
            await sim.pause()
        assert (await sim.resume()).state == "running"


async def test_controls_publish_clock_items() -> None:
    async with manual(1) as sim:
        before = sim.log.seq
        await sim.pause()
        await sim.resume()
        clocks = [i for i in sim.log.items[before:] if isinstance(i, ClockItem)]
        assert [c.clock.state for c in clocks] == ["paused", "running"]


async def test_next_event_with_nothing_scheduled_is_an_error() -> None:
    async with manual(duration=30) as sim:
        with pytest.raises(BadStateError, match="no event is scheduled"):
            await sim.next_event()
        assert sim.now == 0.0


async def test_jumping_past_the_duration_ends_the_session_at_the_duration() -> None:
    async with manual(5, 20, duration=10) as sim:
        await sim.jump(to=100)
        assert sim.ended
        assert sim.now == 10.0
        assert [e.time for e in sim.events()] == [5.0]


async def test_stop_ends_the_session_and_later_controls_are_refused() -> None:
    async with manual(5) as sim:
        await sim.stop()
        assert sim.ended and sim.state == "stopped"
        with pytest.raises(BadStateError, match="ended"):
            await sim.jump(by=1)


@pytest.mark.parametrize("bad", [0, -2, 1.5, True])
async def test_tick_count_must_be_a_positive_whole_number(bad: object) -> None:
    async with manual(1) as sim:
        with pytest.raises(InvalidRequestError, match="whole number"):
            await sim.tick(bad)  # type: ignore[arg-type]
        assert sim.now == 0.0


async def test_set_speed_rejects_nonsense_and_keeps_the_old_speed() -> None:
    async with manual(1) as sim:
        with pytest.raises(InvalidRequestError, match="speed"):
            sim.set_speed(0)
        assert sim.set_speed(10).speed == 10.0


async def test_every_external_input_is_logged_for_replay() -> None:
    async with manual(1) as sim:
        await sim.jump(by=2)
        await sim.call_tool("TimelineApp__count")
        assert [(i.source, i.time) for i in sim.inputs] == [("jump", 0.0), ("call_tool", 2.0)]
