"""Fast mode: ARE's queue-based loop on the virtual clock, with no thread and no sleeping."""

import threading
import time

import msgspec
import pytest

from areasync import Simulation
from areasync.protocol import ClockItem, EndedItem, EventItem
from tests.scenarios import timeline


async def test_a_fast_oracle_run_completes_and_validates() -> None:
    sim = Simulation.load("scenario_tutorial", mode="fast", oracle=True)
    validation = await sim.run()
    assert validation is not None and validation.success is True
    assert sim.state == "stopped"
    assert [e.function for e in sim.events()] == [
        "add_message",
        "send_message_to_agent",
        "send_email_to_user",
        "forward_email",
    ]


async def test_events_fire_at_their_own_times_in_order() -> None:
    sim = Simulation.load(timeline(3, 1, 2, 2), mode="fast", oracle=True)
    await sim.run()
    assert [e.time for e in sim.events()] == [1.0, 2.0, 2.0, 3.0]
    assert sim.env.get_app("TimelineApp").marks == ["t=1", "t=2", "t=2", "t=3"]


async def test_an_event_at_exactly_the_duration_never_runs() -> None:
    sim = Simulation.load(timeline(5, 10, duration=10), mode="fast", oracle=True)
    await sim.run()
    assert [e.time for e in sim.events()] == [5.0]
    assert sim.now == 10.0


async def test_tick_count_is_the_tick_index_of_the_last_event_time() -> None:
    sim = Simulation.load(timeline(2.5, duration=10), mode="fast", oracle=True)
    await sim.run()
    assert sim.env.tick_count == 3  # ceil(2.5 / 1), as ARE's jump_to_next_event_time sets it


async def test_stream_seqs_are_contiguous_from_one() -> None:
    sim = Simulation.load("scenario_tutorial", mode="fast", oracle=True)
    await sim.run()
    assert [item.seq for item in sim.log.items] == list(range(1, len(sim.log.items) + 1))


async def test_the_stream_ends_with_ended_carrying_the_validation() -> None:
    sim = Simulation.load("scenario_tutorial", mode="fast", oracle=True)
    await sim.run()
    last = sim.log.items[-1]
    assert isinstance(last, EndedItem)
    assert last.state == "stopped"
    assert last.validation is not None and last.validation.success is True


async def test_stream_since_yields_every_later_item_exactly_once() -> None:
    sim = Simulation.load("scenario_tutorial", mode="fast", oracle=True)
    await sim.run()
    items = [item async for item in sim.stream(since=2)]
    assert [i.seq for i in items] == list(range(3, sim.log.seq + 1))


async def test_two_fast_runs_give_the_same_stream_modulo_ids() -> None:
    def shape(sim: Simulation) -> list[object]:
        out: list[object] = []
        for item in sim.log.items:
            if isinstance(item, EventItem):
                e = item.event
                out.append((e.event_type, e.time, e.app, e.function, e.args))
            elif not isinstance(item, ClockItem):
                out.append(msgspec.to_builtins(item))
        return out

    # ARE's own scenarios carry uuid4 ids and wall-clock timestamps from construction time;
    # this one has neither, so the streams must be identical item for item.
    first = Simulation.load(timeline(1, 2, 2, 7.5, 9), mode="fast", oracle=True)
    second = Simulation.load(timeline(1, 2, 2, 7.5, 9), mode="fast", oracle=True)
    await first.run()
    await second.run()
    assert shape(first) == shape(second)


async def test_a_whole_run_starts_no_thread_and_never_sleeps(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sleeps: list[float] = []
    threads: list[threading.Thread] = []
    real_start = threading.Thread.start

    def record_start(self: threading.Thread) -> None:
        threads.append(self)
        real_start(self)

    monkeypatch.setattr(time, "sleep", sleeps.append)
    monkeypatch.setattr(threading.Thread, "start", record_start)
    sim = Simulation.load("scenario_tutorial", mode="fast", oracle=True)
    await sim.run()
    assert sim.ended
    assert threads == []
    assert sleeps == []


async def test_fast_run_without_oracle_runs_out_to_the_duration() -> None:
    sim = Simulation.load(timeline(1, 2, duration=20), mode="fast")
    await sim.run()
    assert sim.now == 20.0
    assert len(sim.events()) == 2


def test_a_non_positive_step_budget_is_refused() -> None:
    from areasync.simulation import InvalidRequestError

    with pytest.raises(InvalidRequestError, match="step_budget must be > 0"):
        Simulation.load(timeline(1.0), mode="fast", step_budget=0.0)


async def test_a_short_step_budget_gives_the_same_run() -> None:
    # The budget only decides how often the driver yields to the event loop, never what runs.
    logs = []
    for budget in (0.002, 0.00001):
        async with Simulation.load(timeline(1, 2, 2, 3), mode="fast", step_budget=budget) as sim:
            await sim.run()
            logs.append(
                [
                    (i.event.time, i.event.function)
                    for i in sim.log.items
                    if isinstance(i, EventItem)
                ]
            )
    assert logs[0] == logs[1] and len(logs[0]) >= 4
