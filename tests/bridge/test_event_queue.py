"""The event queue's store (`queues.TimeOrderedHeap`) gives up its items in one fixed order.

Items put together (a sorted run) and items put one by one (a heap) leave in the order of
`(time in microseconds, event_time, event_id, insertion)`, whatever mix of puts, pops of what
is due, `get`s and `peek`s came between; `head_us` is always the first item's time.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from areasync.bridge.queues import TimeOrderedHeap
from areasync.engine.clock import to_us


class Due:
    """An event as the queue sees it: a time, an id (and an identity)."""

    def __init__(self, event_time: float, event_id: str, n: int) -> None:
        self.event_time = event_time
        self.event_id = event_id
        self.n = n

    def __repr__(self) -> str:
        return f"Due({self.event_time!r}, {self.event_id!r}, {self.n})"


times = st.one_of(
    st.sampled_from([0.0, 1.0, 1.0, 2.5, 3.0, 0.35000000000000003]),
    st.floats(min_value=0, max_value=10, allow_nan=False),
)
ids = st.sampled_from(["a", "b", "c", ""])
operations = st.lists(
    st.one_of(
        st.tuples(st.just("put"), st.lists(st.tuples(times, ids), min_size=1, max_size=1)),
        st.tuples(st.just("put_all"), st.lists(st.tuples(times, ids), max_size=8)),
        st.tuples(st.just("pop_due"), st.lists(times, min_size=1, max_size=1)),
        st.tuples(st.just("get"), st.just([])),
    ),
    max_size=40,
)


class Reference:
    """What the queue must answer: every item in a list, the first found by sorting."""

    def __init__(self) -> None:
        self.items: list[tuple[int, float, str, int, Due]] = []
        self.count = 0

    def put(self, item: Due) -> None:
        self.items.append(
            (to_us(item.event_time), item.event_time, item.event_id, self.count, item)
        )
        self.count += 1

    def first(self) -> tuple[int, float, str, int, Due] | None:
        return min(self.items) if self.items else None

    def pop_first(self) -> Due:
        first = self.first()
        assert first is not None
        self.items.remove(first)
        return first[4]


@settings(max_examples=300, deadline=None)
@given(operations)
def test_items_leave_in_time_id_and_insertion_order_whatever_the_mix_of_puts(
    ops: list[tuple[str, list[Any]]],
) -> None:
    queue, reference, made = TimeOrderedHeap(), Reference(), 0
    for op, values in ops:
        if op in ("put", "put_all"):
            items = []
            for t, event_id in values:
                items.append(Due(t, event_id, made))
                made += 1
            for item in items:
                reference.put(item)
            if op == "put":
                queue.put(items[0])
            else:
                queue.put_all(items)
        elif op == "pop_due":
            now_us = to_us(values[0])
            expected = []
            while (first := reference.first()) is not None and first[0] <= now_us:
                expected.append(reference.pop_first())
            assert queue.pop_due_us(now_us) == expected
        elif reference.items:
            assert queue.get() is reference.pop_first()
        first = reference.first()
        assert queue.head_us == (None if first is None else first[0])
        assert queue.peek() is (None if first is None else first[4])
        assert len(queue) == len(reference.items)
        assert list(queue) == [entry[4] for entry in sorted(reference.items)]
