"""Exclusive jumps in the engine: `advance_to(t, inclusive=False)` stops just before t's items.

Everything due strictly before t fires at its own time; the clock rests at exactly t with the
items due at t still pending; the next step runs the tick at t, at t, exactly once - in the
queue-based loop (`step_fast`) and in the time-based loop (`step_grid`). The engine is driven
directly here, synchronously, without the async driver.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from areasync import Simulation
from areasync.engine.clock import to_s, to_us
from areasync.engine.ticks import Engine
from tests.scenarios import timeline

T = to_us(5.0)


def loaded(*times: float, mode: str = "fast", duration: float | None = 30.0) -> Simulation:
    """A started, undriven simulation: its engine moves only when a test moves it (and it does
    not end when its queue runs dry, so ticks can be counted past the last event)."""
    return Simulation.load(
        timeline(*times, duration=duration), mode=mode, oracle=True, exit_when_no_events=False
    )


def fired(sim: Simulation) -> list[tuple[float, str]]:
    """(time, function) of every completed event, in the order they were logged."""
    return [(event.time, event.function) for event in sim.events()]


def record_ticks(engine: Engine) -> list[float]:
    """The simulated time of every ARE tick from now on."""
    times: list[float] = []
    tick: Callable[[], None] = engine.env.tick

    def counting_tick() -> None:
        times.append(engine.clock.now())
        tick()

    engine.env.tick = counting_tick  # type: ignore[method-assign]
    return times


# -- the jump itself ---------------------------------------------------------------------------


def test_exclusive_jump_fires_every_item_due_strictly_before_the_target_at_its_own_time() -> None:
    sim = loaded(1, 4, 5, 9)
    sim.engine.advance_to(T, inclusive=False)
    assert fired(sim) == [(1.0, "fire"), (4.0, "fire")]


def test_exclusive_jump_rests_at_exactly_the_target_with_its_items_pending() -> None:
    sim = loaded(1, 5, 5)
    sim.engine.advance_to(T, inclusive=False)
    assert sim.engine.clock.now_us() == T
    assert sim.engine.next_due_us() == T
    assert sim.env.get_app("TimelineApp").marks == ["t=1"]


def test_a_tool_call_after_an_exclusive_jump_is_logged_at_the_target_ahead_of_its_items() -> None:
    sim = loaded(5)
    sim.engine.advance_to(T, inclusive=False)
    sim.tools.call("TimelineApp__mark", {"label": "agent"})
    sim.engine.step_fast()
    assert fired(sim) == [(5.0, "mark"), (5.0, "fire")]
    assert sim.env.get_app("TimelineApp").marks == ["agent", "t=5"]


def test_an_exclusive_jump_to_where_the_clock_is_changes_nothing() -> None:
    sim = loaded(0, 3)
    ticks = record_ticks(sim.engine)
    sim.engine.advance_to(0, inclusive=False)
    assert (sim.engine.clock.now_us(), fired(sim), ticks) == (0, [], [])
    assert sim.engine.next_due_us() == 0


def test_an_inclusive_jump_after_an_exclusive_one_runs_the_targets_items_there() -> None:
    sim = loaded(5, 9)
    sim.engine.advance_to(T, inclusive=False)
    sim.engine.advance_to(T)
    assert fired(sim) == [(5.0, "fire")]
    assert sim.engine.clock.now_us() == T


# -- the queue-based loop (fast) ---------------------------------------------------------------


def test_the_next_fast_step_fires_the_targets_items_at_the_target() -> None:
    sim = loaded(1, 5, 9)
    sim.engine.advance_to(T, inclusive=False)
    assert sim.engine.step_fast()
    assert fired(sim) == [(1.0, "fire"), (5.0, "fire")]
    assert sim.engine.clock.now_us() == T


def test_the_fast_tick_at_the_target_runs_once_with_ares_tick_index() -> None:
    sim = loaded(2.5, 5, 9)
    ticks = record_ticks(sim.engine)
    sim.engine.advance_to(T, inclusive=False)
    sim.engine.step_fast()
    assert sim.env.tick_count == 5  # ceil((5 - 0) / 1), as ARE's jump_to_next_event_time sets it
    sim.engine.step_fast()
    assert ticks == [2.5, 5.0, 9.0]
    assert [time for time, _ in fired(sim)] == [2.5, 5.0, 9.0]


def test_a_wait_timeout_due_at_the_target_waits_for_the_next_step() -> None:
    sim = Simulation.load(timeline(duration=30), mode="fast")
    sim.tools.call("SystemApp__wait_for_notification", {"timeout": 5})
    sim.engine.advance_to(T, inclusive=False)
    assert sim.notifications() == []
    sim.engine.step_fast()
    [note] = sim.notifications()
    assert "timeout" in note.message and note.timestamp == 5.0


# -- the duration bound (exclusive, as ARE's) ----------------------------------------------------


@pytest.mark.parametrize("target", [10.0, 25.0], ids=["to-the-end", "past-the-end"])
def test_an_exclusive_jump_to_or_past_the_end_ends_the_run_at_the_end(target: float) -> None:
    sim = loaded(5, 10, duration=10)
    sim.engine.advance_to(to_us(target), inclusive=False)
    assert sim.engine.finished
    assert sim.engine.clock.now_us() == to_us(10.0)
    assert fired(sim) == [(5.0, "fire")]


def test_after_an_exclusive_jump_an_item_on_the_bound_still_never_runs() -> None:
    sim = loaded(9.5, 10, duration=10)
    sim.engine.advance_to(to_us(9.5), inclusive=False)
    while sim.engine.step_fast():
        pass
    assert sim.engine.finished
    assert fired(sim) == [(9.5, "fire")]


# -- the time-based loop (realtime / manual ticks) ---------------------------------------------


def test_the_time_based_loops_next_tick_after_an_exclusive_jump_is_at_the_target() -> None:
    sim = loaded(2, 5, mode="manual")
    sim.engine.step_grid()  # the tick at 0 s
    sim.engine.advance_to(T, inclusive=False)
    assert sim.engine.next_grid_us() == T
    sim.engine.step_grid()
    assert fired(sim) == [(2.0, "fire"), (5.0, "fire")]
    assert sim.engine.next_grid_us() == to_us(6.0)


def test_the_time_based_loops_tick_at_the_target_happens_exactly_once() -> None:
    sim = loaded(5, mode="manual")
    ticks = record_ticks(sim.engine)
    sim.engine.step_grid()  # the tick at 0 s
    sim.engine.advance_to(T, inclusive=False)
    for _ in range(3):
        sim.engine.step_grid()
    assert ticks == [0.0, 5.0, 6.0, 7.0]


def test_an_exclusive_jump_to_the_next_tick_leaves_the_time_based_loop_as_it_was() -> None:
    sim = loaded(mode="manual")
    ticks = record_ticks(sim.engine)
    for _ in range(5):
        sim.engine.step_grid()  # ticks at 0..4 s: tick_count 5
    sim.engine.advance_to(T, inclusive=False)
    sim.engine.step_grid()
    assert ticks == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert sim.env.tick_count == 6  # as ARE's time loop after its tick at 5 s


def test_an_exclusive_jump_to_the_time_of_the_last_tick_owes_no_second_tick() -> None:
    sim = loaded(mode="manual")
    ticks = record_ticks(sim.engine)
    sim.engine.step_grid()  # the tick at 0 s; the clock stays at 0
    sim.engine.advance_to(0, inclusive=False)
    sim.engine.step_grid()
    assert ticks == [0.0, 1.0]


def test_an_inclusive_jump_runs_the_owed_tick() -> None:
    sim = loaded(5, mode="manual")
    ticks = record_ticks(sim.engine)
    sim.engine.step_grid()  # the tick at 0 s
    sim.engine.advance_to(T, inclusive=False)
    sim.engine.advance_to(T)  # runs the items at 5 s, as an inclusive jump to 5 s would
    sim.engine.step_grid()
    assert ticks == [0.0, 5.0, 6.0]
    assert fired(sim) == [(5.0, "fire")]


def test_an_inclusive_jump_past_the_target_passes_the_owed_tick() -> None:
    sim = loaded(5, mode="manual")
    ticks = record_ticks(sim.engine)
    sim.engine.step_grid()  # the tick at 0 s
    sim.engine.advance_to(T, inclusive=False)
    sim.engine.advance_to(to_us(8.0))
    sim.engine.step_grid()
    assert ticks == [0.0, 5.0, 9.0]  # as after one inclusive jump from 0 s to 8 s
    assert fired(sim) == [(5.0, "fire")]


def test_a_fast_step_at_the_target_runs_the_owed_tick() -> None:
    sim = loaded(5)
    ticks = record_ticks(sim.engine)
    sim.engine.step_grid()  # the tick at 0 s
    sim.engine.advance_to(T, inclusive=False)
    sim.engine.step_fast()
    sim.engine.step_grid()
    assert ticks == [0.0, 5.0, 6.0]


def test_an_owed_tick_moves_with_a_later_offset_as_the_rest_of_the_schedule() -> None:
    # ARE's own jumps (SystemApp.wait, resume_with_offset) shift the time-based loop's schedule.
    sim = loaded(mode="manual")
    sim.engine.advance_to(T, inclusive=False)
    sim.env.time_manager.add_offset(2.0)
    assert to_s(sim.engine.next_grid_us()) == 7.0
