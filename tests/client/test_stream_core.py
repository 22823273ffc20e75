"""The client's resumable stream without a socket: welcomes and items in, position and state out."""

from __future__ import annotations

import pytest

from areasync.client.errors import StreamResetError
from areasync.client.stream import Generation, ResumableStream, StreamGap
from areasync.protocol import (
    ClockItem,
    ClockState,
    EndedItem,
    EventItem,
    EventRecord,
    NotificationItem,
    NotificationRecord,
    Replay,
    Welcome,
)
from tests.client.fake_server import event


def welcome(
    *, epoch: str = "e1", seq: int = 0, replay: Replay = Replay.NONE, time: float = 0.0
) -> Welcome:
    return Welcome(
        session_id="s",
        role="agent",
        epoch=epoch,
        seq=seq,
        scenario_id="scenario",
        clock=ClockState(state="running", time=time, tick=0, mode="manual", speed=1.0),
        replay=replay,
    )


def event_at(seq: int, time: float) -> EventItem:
    return EventItem(
        seq=seq, event=EventRecord(event_id=f"e{seq}", event_type="ENV", time=time, function="f")
    )


def note_at(seq: int, time: float) -> NotificationItem:
    return NotificationItem(
        seq=seq,
        notification=NotificationRecord(message_type="USER_MESSAGE", message="hi", timestamp=time),
    )


def clock_item(seq: int, time: float) -> ClockItem:
    return ClockItem(
        seq=seq, clock=ClockState(state="paused", time=time, tick=0, mode="manual", speed=1.0)
    )


def following(since: int | None = None, **fields: object) -> ResumableStream:
    stream = ResumableStream(since)
    stream.welcome(welcome(**fields))  # type: ignore[arg-type]
    return stream


# -- what hello carries -----------------------------------------------------------------------


def test_the_first_hello_asks_for_the_since_given_and_no_epoch() -> None:
    assert ResumableStream(since=3).resume_point() == (3, None)
    assert ResumableStream().resume_point() == (None, None)


def test_after_a_welcome_hello_resumes_after_the_last_item_of_its_epoch() -> None:
    stream = following(since=0, epoch="e7", replay=Replay.FULL)
    stream.receive(event(1))
    stream.receive(event(2))
    assert stream.resume_point() == (2, "e7")


def test_a_negative_since_is_refused() -> None:
    with pytest.raises(ValueError, match="since must be a seq >= 0"):
        ResumableStream(since=-1)


# -- the first welcome ------------------------------------------------------------------------


def test_without_since_the_stream_is_followed_from_the_welcome_on() -> None:
    stream = following(seq=5)
    assert (stream.seq, stream.epoch) == (5, "e1")
    assert stream.receive(event(6))


def test_with_since_replayed_the_stream_starts_after_since() -> None:
    stream = following(since=2, seq=5, replay=Replay.FULL)
    assert stream.seq == 2
    assert stream.receive(event(3))


def test_the_welcome_sets_clock_and_now() -> None:
    stream = following(time=100.0)
    assert stream.clock is not None and stream.clock.time == 100.0
    assert stream.now == 100.0


# -- items ------------------------------------------------------------------------------------


def test_the_next_seq_is_appended() -> None:
    stream = following()
    assert stream.receive(event(1)) is True
    assert stream.generation is not None
    assert [item.seq for item in stream.generation.items] == [1]


def test_an_item_already_held_is_dropped() -> None:
    stream = following()
    stream.receive(event(1))
    stream.receive(event(2))
    assert stream.receive(event(1)) is False
    assert stream.seq == 2


def test_a_skipped_seq_is_a_gap_and_nothing_is_taken_in() -> None:
    stream = following()
    stream.receive(event(1))
    with pytest.raises(StreamGap, match="expected seq 2, got 3"):
        stream.receive(event(3))
    assert stream.seq == 1


def test_events_notifications_and_clock_items_move_now_forward_only() -> None:
    stream = following(time=10.0)
    stream.receive(event_at(1, time=20.0))
    assert stream.now == 20.0
    stream.receive(note_at(2, time=21.0))
    assert stream.now == 21.0
    stream.receive(event_at(3, time=15.0))
    stream.receive(clock_item(4, time=5.0))
    assert stream.now == 21.0
    assert stream.clock is not None and stream.clock.time == 5.0


def test_the_ended_item_is_recorded() -> None:
    stream = following()
    ended = EndedItem(seq=1, state="stopped")
    stream.receive(ended)
    assert stream.ended is ended


def test_an_item_before_any_welcome_is_a_bug() -> None:
    with pytest.raises(RuntimeError, match="before the welcome"):
        ResumableStream().receive(event(1))


# -- reconnecting -----------------------------------------------------------------------------


def test_a_full_replay_of_the_same_epoch_continues_the_generation() -> None:
    stream = following(since=0, replay=Replay.FULL)
    stream.receive(event(1))
    first = stream.generation
    assert stream.welcome(welcome(seq=3, replay=Replay.FULL)) is None
    assert stream.generation is first
    assert stream.receive(event(1)) is False  # the replay overlaps what is held
    assert stream.receive(event(2)) is True
    assert stream.resets == 0


def test_a_reset_ends_the_generation_with_the_welcome_that_announced_it() -> None:
    stream = following(since=0, replay=Replay.FULL)
    stream.receive(event(1))
    reset = welcome(epoch="e2", seq=4, replay=Replay.RESET)
    ended = stream.welcome(reset)
    assert ended is not None
    assert isinstance(ended.reset, StreamResetError)
    assert ended.reset.welcome is reset
    assert stream.resets == 1


def test_after_a_reset_the_new_stream_is_received_from_seq_1() -> None:
    stream = following(since=0, replay=Replay.FULL)
    stream.receive(event(1))
    stream.receive(event(2))
    stream.welcome(welcome(epoch="e2", seq=4, replay=Replay.RESET))
    assert (stream.seq, stream.epoch) == (0, "e2")
    assert stream.receive(event(1)) is True


def test_a_new_epoch_ends_the_generation_even_if_the_server_says_full() -> None:
    stream = following(since=0, replay=Replay.FULL)
    assert stream.welcome(welcome(epoch="e2", replay=Replay.FULL)) is not None


def test_a_reset_restarts_now_from_the_new_streams_clock() -> None:
    stream = following(since=0, replay=Replay.FULL, time=50.0)
    stream.receive(event_at(1, time=60.0))
    stream.welcome(welcome(epoch="e2", replay=Replay.RESET, time=1.0))
    assert stream.now == 1.0


def test_the_first_since_is_not_asked_for_again_after_a_reset() -> None:
    stream = following(since=0, replay=Replay.FULL)
    stream.welcome(welcome(epoch="e2", replay=Replay.RESET))
    stream.receive(event(1))
    assert stream.resume_point() == (1, "e2")


def test_replay_unavailable_ends_the_generation_and_the_next_hello_starts_over() -> None:
    stream = following(since=0, replay=Replay.FULL)
    stream.receive(event(1))
    ended = stream.replay_unavailable("since=1 is ahead")
    assert ended is not None and ended.reset is not None and ended.reset.welcome is None
    assert stream.resume_point() == (None, None)
    assert stream.resets == 1


def test_replay_unavailable_before_any_welcome_ends_nothing() -> None:
    assert ResumableStream(since=9).replay_unavailable("since=9 is ahead") is None


# -- a generation -----------------------------------------------------------------------------


def test_a_generation_finds_the_position_after_a_seq_it_holds() -> None:
    generation = Generation(base=2, epoch="e1")
    generation.items.extend([event(3), event(4)])
    assert generation.position(None) == 0
    assert generation.position(3) == 1
    assert [item.seq for item in generation.after(3)] == [4]


def test_a_generation_refuses_a_position_outside_what_it_holds() -> None:
    generation = Generation(base=2, epoch="e1")
    generation.items.append(event(3))
    with pytest.raises(ValueError, match="outside what this client holds"):
        generation.position(1)
    with pytest.raises(ValueError, match="outside what this client holds"):
        generation.position(4)
