"""Clock controls on a running simulation: pause, resume, jump, next event, tick, speed, stop."""

import pytest

from areasync import BadStateError, InvalidRequestError, Simulation
from areasync.protocol import ClockItem
from areasync.simulation.input_records import Jump
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


# -- exclusive jumps (`inclusive=False`): stop just before the target's own items ------------


async def test_exclusive_jump_rests_at_the_target_before_its_items() -> None:
    async with manual(1, 5, 9) as sim:
        clock = await sim.jump(to=5, inclusive=False)
        assert clock.time == 5.0
        assert [e.time for e in sim.events()] == [1.0]


async def test_exclusive_jump_by_an_amount_stops_before_the_items_there() -> None:
    async with manual(2, 5) as sim:
        await sim.jump(by=2)
        await sim.jump(by=3, inclusive=False)
        assert sim.now == 5.0
        assert [e.time for e in sim.events()] == [2.0]


async def test_a_tool_call_after_an_exclusive_jump_lands_at_the_target_ahead_of_its_items() -> None:
    async with manual(5) as sim:
        await sim.jump(to=5, inclusive=False)
        await sim.call_tool("TimelineApp__mark", {"label": "agent"})
        await sim.tick()
        assert [(e.time, e.function) for e in sim.events()] == [(5.0, "mark"), (5.0, "fire")]


async def test_a_fast_session_runs_the_targets_items_at_the_target_once_the_agent_is_idle() -> None:
    sim = Simulation.load(timeline(5, 9, duration=30), mode="fast")
    sim.begin_lease("agent")
    async with sim:
        await sim.jump(to=5, inclusive=False)
        await sim.call_tool("TimelineApp__mark", {"label": "agent"})
        assert [e.time for e in sim.events()] == [5.0]  # the agent's call only
        sim.end_lease("agent")
        await sim.run()
    assert [(e.time, e.function) for e in sim.events()] == [
        (5.0, "mark"),
        (5.0, "fire"),
        (9.0, "fire"),
    ]


async def test_a_paused_realtime_session_runs_the_targets_tick_at_the_target_on_resume() -> None:
    sim = Simulation.load(timeline(5, duration=7), mode="realtime", speed=1000.0, oracle=True)
    async with sim:
        await sim.pause()
        await sim.jump(to=5, inclusive=False)
        await sim.call_tool("TimelineApp__mark", {"label": "agent"})
        await sim.resume()
        await sim.run()
    assert [(e.time, e.function) for e in sim.events()] == [(5.0, "mark"), (5.0, "fire")]


async def test_an_exclusive_jump_to_the_duration_ends_the_session_there() -> None:
    async with manual(5, 10, duration=10) as sim:
        await sim.jump(to=10, inclusive=False)
        assert sim.ended and sim.now == 10.0
        assert [e.time for e in sim.events()] == [5.0]


@pytest.mark.parametrize("bad", [None, 0, "false"])
async def test_jumps_inclusive_must_be_true_or_false(bad: object) -> None:
    async with manual(5) as sim:
        with pytest.raises(InvalidRequestError, match="`inclusive` must be true or false"):
            await sim.jump(to=5, inclusive=bad)  # type: ignore[arg-type]
        assert sim.now == 0.0


async def test_an_exclusive_jump_is_logged_as_such_for_replay() -> None:
    async with manual(5) as sim:
        await sim.jump(to=5, inclusive=False)
        last = sim.inputs[-1]
        assert isinstance(last, Jump) and (last.to, last.by, last.inclusive) == (5, None, False)
