"""The oracle agent's pacing decisions (`areasync.agents.oracle.pacing`), driven with plain numbers.

No session: each test feeds a pacing object the clock the agent would see and the replies a
session would give, and checks the move it decides on.
"""

from __future__ import annotations

from areasync.agents.oracle.pacing import Jump, JumpPacing, WaitPacing
from areasync.protocol import WAIT_TOOL, EventRecord

# -- JumpPacing -------------------------------------------------------------------------------


def test_an_action_after_its_tick_is_reached_by_an_inclusive_jump() -> None:
    assert JumpPacing().next_jump(10.0, before_tick=False, seen=4.0) == Jump(10.0, inclusive=True)


def test_an_action_before_its_tick_is_reached_by_an_exclusive_jump() -> None:
    assert JumpPacing().next_jump(10.0, before_tick=True, seen=4.0) == Jump(10.0, inclusive=False)


def test_no_jump_once_the_clock_is_at_the_actions_time() -> None:
    assert JumpPacing().next_jump(10.0, before_tick=False, seen=10.0) is None


def test_no_jump_when_the_clock_is_past_the_actions_time() -> None:
    assert JumpPacing().next_jump(10.0, before_tick=True, seen=12.5) is None


def test_a_clock_a_hair_short_of_the_time_counts_as_there() -> None:
    assert JumpPacing().next_jump(10.0, before_tick=False, seen=10.0 - 1e-7) is None


def test_an_exclusive_landing_leaves_the_clock_resting_before_its_items() -> None:
    pacing = JumpPacing()
    assert pacing.landed(Jump(10.0, inclusive=False), clock=10.0, target=10.0)
    assert pacing.resting_before == 10.0


def test_an_inclusive_landing_leaves_nothing_owed() -> None:
    pacing = JumpPacing()
    pacing.landed(Jump(10.0, inclusive=False), clock=10.0, target=10.0)
    pacing.landed(Jump(12.0, inclusive=True), clock=12.0, target=12.0)
    assert pacing.resting_before is None


def test_a_landing_short_of_the_target_is_not_arrival() -> None:
    assert not JumpPacing().landed(Jump(10.0, inclusive=True), clock=7.0, target=10.0)


def test_an_action_after_the_tick_an_exclusive_jump_stopped_before_runs_that_tick_first() -> None:
    pacing = JumpPacing()
    pacing.landed(Jump(10.0, inclusive=False), clock=10.0, target=10.0)
    assert pacing.next_jump(10.0, before_tick=False, seen=10.0) == Jump(10.0, inclusive=True)


def test_a_second_action_ahead_of_the_same_tick_needs_no_jump() -> None:
    pacing = JumpPacing()
    pacing.landed(Jump(10.0, inclusive=False), clock=10.0, target=10.0)
    assert pacing.next_jump(10.0, before_tick=True, seen=10.0) is None


def test_a_later_action_is_jumped_to_from_where_the_clock_rests() -> None:
    pacing = JumpPacing()
    pacing.landed(Jump(10.0, inclusive=False), clock=10.0, target=10.0)
    assert pacing.next_jump(15.0, before_tick=False, seen=10.0) == Jump(15.0, inclusive=True)


def test_while_held_the_stopped_clock_counts_even_if_the_stream_lags() -> None:
    pacing = JumpPacing()
    pacing.held(10.0)
    assert pacing.next_jump(10.0, before_tick=False, seen=8.0) is None


def test_while_held_the_clock_is_the_stopped_one_not_the_streams() -> None:
    pacing = JumpPacing()
    pacing.held(11.0)
    assert pacing.now(seen=9.0) == 11.0


def test_after_the_hold_the_stream_tells_the_clock_again() -> None:
    pacing = JumpPacing()
    pacing.held(11.0)
    pacing.unheld(resumed=False)
    assert pacing.now(seen=9.0) == 9.0


def test_resuming_the_clock_runs_the_items_an_exclusive_jump_owed() -> None:
    pacing = JumpPacing()
    pacing.held(5.0)
    pacing.landed(Jump(10.0, inclusive=False), clock=10.0, target=10.0)
    pacing.unheld(resumed=True)
    assert pacing.resting_before is None


def test_a_hold_someone_else_keeps_leaves_the_owed_items_owed() -> None:
    pacing = JumpPacing()
    pacing.held(5.0)
    pacing.landed(Jump(10.0, inclusive=False), clock=10.0, target=10.0)
    pacing.unheld(resumed=False)
    assert pacing.resting_before == 10.0


# -- WaitPacing -------------------------------------------------------------------------------


def test_a_wait_lasts_the_whole_seconds_to_the_actions_time() -> None:
    assert WaitPacing().next_wait(10.0, now=2.5) == 7


def test_a_wait_to_a_whole_second_away_lasts_exactly_that() -> None:
    assert WaitPacing().next_wait(10.0, now=3.0) == 7


def test_less_than_a_second_short_the_agent_acts_without_waiting() -> None:
    assert WaitPacing().next_wait(10.0, now=9.4) is None


def test_no_wait_once_the_clock_is_at_the_actions_time() -> None:
    assert WaitPacing().next_wait(10.0, now=10.0) is None


def test_no_wait_when_the_clock_is_past_the_actions_time() -> None:
    assert WaitPacing().next_wait(10.0, now=30.0) is None


def test_the_waits_among_logged_events_are_the_wait_tools_own() -> None:
    app, function = WAIT_TOOL.split("__")
    records = [
        EventRecord(event_id="w", event_type="AGENT", time=1.0, app=app, function=function),
        EventRecord(
            event_id="m", event_type="AGENT", time=1.0, app="EmailClientV2", function="send_email"
        ),
    ]
    assert WaitPacing().wait_events(records) == ["w"]
