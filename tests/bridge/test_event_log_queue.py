"""The event log's queue (`queues.EventLogQueue`) keeps ARE's heap exactly.

The same operations on ARE's `PriorityQueue(fields=["event_time"])` and on `EventLogQueue`,
with many events at equal times (where the order is the heap's), leave the same items in the
same places of the heap array after every step, and every view (`list_view`, iteration,
indexing, `peek`, `get`) gives the same events in the same order.
"""

from __future__ import annotations

from typing import Any

from are.simulation.priority_queue import HeapItem, PriorityQueue
from hypothesis import given, settings
from hypothesis import strategies as st

from areasync import Simulation
from areasync.bridge.queues import EventLogQueue, LogHeapItem


class Logged:
    """An event as the log sees it: a time (and an identity)."""

    def __init__(self, event_time: Any, n: int) -> None:
        self.event_time = event_time
        self.n = n

    def __repr__(self) -> str:
        return f"Logged({self.event_time!r}, {self.n})"


times = st.one_of(
    st.sampled_from([0.0, 1.0, 1.0, 2.5, 3.0]),
    st.floats(min_value=0, max_value=10, allow_nan=False),
    st.integers(min_value=0, max_value=5),
)
operations = st.lists(
    st.one_of(
        st.tuples(st.just("put"), times),
        st.tuples(st.just("get"), st.none()),
        st.tuples(st.just("del_last"), st.none()),
        st.tuples(st.just("set_first"), times),
        st.tuples(st.just("view"), st.none()),
    ),
    max_size=60,
)


def layout(queue: PriorityQueue[Any]) -> list[Any]:
    return [item.item if isinstance(item, HeapItem) else item for item in queue.queue]


@settings(max_examples=300, deadline=None)
@given(operations)
def test_every_operation_leaves_the_same_heap(ops: list[tuple[str, Any]]) -> None:
    are: PriorityQueue[Any] = PriorityQueue(fields=["event_time"])
    ours = EventLogQueue()
    for n, (op, time) in enumerate(ops):
        if op == "put":
            event = Logged(time, n)
            are.put(event)
            ours.put(event)
        elif op == "get" and not are.empty():
            assert are.get() is ours.get()
        elif op == "del_last" and not are.empty():
            del are[-1]
            del ours[-1]
        elif op == "set_first" and not are.empty():
            event = Logged(time, n)
            are[0] = event
            ours[0] = event
        elif op == "view":
            assert are.list_view() == ours.list_view()
            assert list(are) == list(ours)
            assert are.peek() is ours.peek()
            if not are.empty():
                assert are[-1] is ours[-1]
        assert layout(are) == layout(ours)
        assert len(are) == len(ours) and are.qsize() == ours.qsize()
    # What `put` adds is a LogHeapItem (ARE's `__setitem__` wraps in its own HeapItem).
    if ops and ops[-1][0] == "put":
        assert any(isinstance(item, LogHeapItem) for item in ours.queue)


def test_comparisons_answer_as_ares() -> None:
    values: list[Any] = [0, 0.0, 1, 1.5, float("nan"), None, "a"]
    for a in values:
        for b in values:
            left, right = Logged(a, 0), Logged(b, 1)
            expected = outcome(HeapItem(left, ["event_time"]), HeapItem(right, ["event_time"]))
            got = outcome(LogHeapItem(left, ["event_time"]), HeapItem(right, ["event_time"]))
            assert got == expected, (a, b)
    # Several fields, or something else: ARE's own comparison.
    two = ["event_time", "n"]
    assert outcome(LogHeapItem(Logged(1, 0), two), HeapItem(Logged(1, 1), two)) == (True,)
    assert LogHeapItem(Logged(1, 0), ["event_time"]).__lt__(3) is NotImplemented


def outcome(a: HeapItem[Any], b: HeapItem[Any]) -> tuple[Any, ...]:
    try:
        return (a < b,)
    except Exception as exc:
        return (type(exc), str(exc))


async def test_a_simulations_event_log_uses_it() -> None:
    sim = Simulation.load("scenario_tutorial", mode="manual")
    for _ in range(3):
        await sim.call_tool("SystemApp__get_current_time", {})
    assert isinstance(sim.env.event_log.past_events, EventLogQueue)
    assert len(sim.env.event_log.list_view()) == 3
    await sim.stop()


class Identified(Logged):
    """A logged event with an id, as placeholders name them."""

    def __init__(self, event_time: Any, n: int, event_id: str) -> None:
        super().__init__(event_time, n)
        self.event_id = event_id


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(times, st.sampled_from("abcdef")), max_size=40))
def test_the_events_of_an_id_are_those_the_sorted_log_holds_or_none(
    puts: list[tuple[Any, str]],
) -> None:
    ours = EventLogQueue()
    for n, (time, event_id) in enumerate(puts):
        ours.put(Identified(time, n, event_id))
    for event_id in "abcdefg":
        in_view = [e for e in ours if e.event_id == event_id]  # as `EventLog.list_view()`
        found = ours.logged_with_id(event_id)
        assert found == in_view if len(in_view) <= 1 else found is None


def test_the_id_index_gives_way_to_the_sort_once_the_heap_is_changed_otherwise() -> None:
    ours = EventLogQueue()
    ours.put(Identified(1.0, 0, "a"))
    ours.put(Identified(2.0, 1, "b"))
    ours.get()
    assert ours.logged_with_id("b") is None
