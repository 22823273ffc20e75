"""ARE's event queue, with the same order and API but without its per-comparison overhead.

ARE keeps future events in a `PriorityQueue` of `HeapItem`s whose `__lt__` builds two tuples
with `getattr` in a Python list comprehension, ~2 log2(n) comparisons per pop, and
`pop_events_to_process` pops then re-pushes the first event that is not due, on every tick. With
many queued events that alone costs more than executing an event (docs/topics/performance.md,
"Design measurements").

`TimeOrderedHeap` orders by exactly ARE's key `(event_time, event_id)` but compares plain tuples
in C, with an insertion counter as the final tie-break (where ARE's heap order is arbitrary),
`FastEventQueue.pop_events_to_process` peeks before popping, and the events scheduled together
at load are a sorted run rather than a heap, so that taking the next one costs the same however
many are queued.

The event log (`EventLog.past_events`, also one of ARE's `PriorityQueue`s, on `event_time`)
keeps ARE's own heap, because its order is observable: `list_view()` sorts the heap's array,
stably, so events logged at the same time come out in an order that depends on where the heap
put them. `EventLogQueue` is ARE's `PriorityQueue` whose items are `LogHeapItem`s: ARE's
`HeapItem` with a `__lt__` that gives the same answer (the same one-element tuples compared,
`(getattr(a, f),) < (getattr(b, f),)`) without two method calls and two list comprehensions.
Every comparison answers as ARE's does, so every push, pop and sort moves the same items to the
same places (`tests/bridge/test_event_log_queue.py`). Each logged event is pushed once (one
comparison when it is the latest) and every `list_view()` sorts the whole log (scenario
validation, the trace export), each cheaper than ARE's (`timeit` figures in
docs/topics/performance.md, "Design measurements").
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterator
from typing import Any

from are.simulation.priority_queue import HeapItem, PriorityQueue
from are.simulation.types import Event, EventQueue, OracleEvent

from areasync.engine.clock import US_PER_S, to_us


class TimeOrderedHeap:
    """The subset of ARE's `PriorityQueue` API that ARE uses on the event queue.

    Each entry is `(time in whole microseconds, event_time, event_id, insertion count, event)`:
    rounding to the microsecond never reverses two times, so the entries sort exactly as
    ARE's `(event_time, event_id)`, and whether the head is due is one integer comparison
    (`head_us`). Entries are distinct (the insertion count), so the order they leave in is
    fixed whatever structure holds them.

    Items put together (`put_all`: a scenario's first events, at load) are kept as one sorted
    run, taken from its end: a pop there costs the same at any length, where a heap's costs
    ~2 log2(n) tuple comparisons and a walk through memory that grows with n. Items put one by
    one (a successor, a scheduled event) go on a heap; a pop takes the smaller of the two
    heads. `head_us` is always the first entry's time (None when empty): the engine asks it
    at every step, as an attribute."""

    def __init__(self) -> None:
        self.queue: list[tuple[int, float, str, int, Any]] = []  # a heap
        self.run: list[tuple[int, float, str, int, Any]] = []  # sorted, the first entry last
        self.head_us: int | None = None
        self._counter = itertools.count()

    def put(self, item: Any) -> None:
        entry = self._entry(item)
        heapq.heappush(self.queue, entry)
        head = self.head_us
        if head is None or entry[0] < head:
            self.head_us = entry[0]

    def put_all(self, items: list[Any]) -> None:
        """`put` of each of `items` in turn, into the sorted run (see the class docstring):
        what is popped, and in what order, is the same."""
        # `_entry` of each, written out: a scenario's load puts all of its first events here.
        count = self._counter
        run = self.run
        run.extend(
            [
                (round(t * US_PER_S), t, item.event_id or "", next(count), item)
                for item in items
                for t in (item.event_time,)
            ]
        )
        run.sort(reverse=True)  # in time order already (a scenario's usual case): linear
        self._new_head()

    def _entry(self, item: Any) -> tuple[int, float, str, int, Any]:
        t = item.event_time
        return (to_us(t), t, item.event_id or "", next(self._counter), item)

    def _new_head(self) -> None:
        run, heap = self.run, self.queue
        if run:
            self.head_us = heap[0][0] if heap and heap[0] < run[-1] else run[-1][0]
        else:
            self.head_us = heap[0][0] if heap else None

    def _pop(self) -> tuple[int, float, str, int, Any]:
        run, heap = self.run, self.queue
        entry = run.pop() if run and not (heap and heap[0] < run[-1]) else heapq.heappop(heap)
        self._new_head()
        return entry

    def pop_due_us(self, now_us: int) -> list[Any]:
        """Every item due at `now_us` (microseconds) or before, in order."""
        due: list[Any] = []
        head = self.head_us
        if head is None or head > now_us:
            return due
        run, heap = self.run, self.queue
        if not heap:  # only the run: no heap to compare with (the usual fast run)
            while run and run[-1][0] <= now_us:
                due.append(run.pop()[_ITEM])
        else:
            while True:
                if run and not (heap and heap[0] < run[-1]):
                    if run[-1][0] > now_us:
                        break
                    due.append(run.pop()[_ITEM])
                elif heap and heap[0][0] <= now_us:
                    due.append(heapq.heappop(heap)[_ITEM])
                else:
                    break
        self._new_head()
        return due

    def get(self) -> Any:
        return self._pop()[_ITEM]

    def peek(self) -> Any:
        run, heap = self.run, self.queue
        if run:
            return (heap[0] if heap and heap[0] < run[-1] else run[-1])[_ITEM]
        return heap[0][_ITEM] if heap else None

    def empty(self) -> bool:
        return self.head_us is None

    def qsize(self) -> int:
        return len(self.queue) + len(self.run)

    def __len__(self) -> int:
        return len(self.queue) + len(self.run)

    def __iter__(self) -> Iterator[Any]:
        return iter([entry[_ITEM] for entry in sorted(self.queue + self.run)])


_ITEM = 4  # where a `TimeOrderedHeap` entry holds its event


class FastEventQueue(EventQueue):
    """ARE's `EventQueue` (same semantics, including `already_scheduled`) on a tuple heap."""

    def __init__(self) -> None:
        super().__init__()
        self.future_events = TimeOrderedHeap()

    def put(self, events: Any) -> None:
        scheduled = self.already_scheduled
        taken = []
        for event in events if isinstance(events, list) else [events]:
            # As ARE: an Event instance is scheduled once; condition checks may recur.
            if isinstance(event, Event | OracleEvent) and event.event_id in scheduled:
                continue
            taken.append(event)
            scheduled.add(event.event_id)
        if len(taken) == 1:
            self.future_events.put(taken[0])
        elif taken:
            self.future_events.put_all(taken)

    def pop_events_to_process(self, timestamp: float) -> list[Any]:
        # Due-ness in whole microseconds, as the engine schedules: an event at a float
        # a hair above its microsecond (0.35000000000000003 s) is due at that microsecond. With
        # ARE's float comparison the engine's tick at 350,000 us would find it not yet due, and
        # the queue-based loop, whose next tick is at that same microsecond, would never move.
        return self.pop_due_us(to_us(timestamp))

    def pop_due_us(self, now_us: int) -> list[Any]:
        """`pop_events_to_process` of the time `now_us` in microseconds (a tick converts its
        time once, not once per pass)."""
        return self.future_events.pop_due_us(now_us)

    def __len__(self) -> int:
        return len(self.future_events)


_SEVERAL = object()  # in `EventLogQueue`'s index: an id logged more than once
_NONE = object()  # not in it


class LogHeapItem(HeapItem[Any]):
    """ARE's `HeapItem`, comparing as it does with less work (see the module docstring)."""

    def __lt__(self, other: object) -> bool:
        if isinstance(other, HeapItem):
            fields = self.fields
            if len(fields) == 1:
                name = fields[0]
                return (getattr(self.item, name),) < (getattr(other.item, name),)
        return HeapItem.__lt__(self, other)


class EventLogQueue(PriorityQueue[Any]):
    """ARE's `PriorityQueue` for the event log (`fields=["event_time"]`), of `LogHeapItem`s."""

    def __init__(self) -> None:
        super().__init__(fields=["event_time"])
        # The logged event of each event id (`_SEVERAL` for an id logged more than once): what
        # a placeholder `{{event_id.key}}` reads, found without sorting the whole log (see
        # `logged_with_id`). None once anything but a push changed the heap.
        self._by_id: dict[str, Any] | None = {}

    def put(self, item: Any, block: bool = True, timeout: float | None = None) -> None:
        # `Queue.put` of an unbounded queue (the log never is full), taking its mutex
        # directly, and waking a waiting `get` only when one waits: nothing reads the log
        # from another thread in a session, and ARE's environments do not `get` from it.
        with self.mutex:
            self._put(item)
            self.unfinished_tasks += 1
            if self.not_empty._waiters:
                self.not_empty.notify()

    def _put(self, item: Any) -> None:
        with self.lock:
            event_id = getattr(item, "event_id", None)
            by_id = self._by_id
            if by_id is not None and isinstance(event_id, str):
                by_id[event_id] = item if event_id not in by_id else _SEVERAL
            else:
                self._by_id = None  # not an event: the index cannot say what the sort would
            if self.fields is not None:
                item = LogHeapItem(item, self.fields)
            heapq.heappush(self.queue, item)

    def logged_with_id(self, event_id: str) -> list[Any] | None:
        """The logged events with `event_id` as `list_view()` would order them, or None when
        that order is not known without the sort (two with one id, or the heap was changed
        by other means than a push)."""
        with self.lock:
            if self._by_id is None:
                return None
            found = self._by_id.get(event_id, _NONE)
            if found is _SEVERAL:
                return None
            return [] if found is _NONE else [found]

    def _get(self) -> Any:
        self._by_id = None
        return super()._get()

    def __setitem__(self, index: Any, value: Any) -> None:
        self._by_id = None
        super().__setitem__(index, value)

    def __delitem__(self, index: Any) -> None:
        self._by_id = None
        super().__delitem__(index)
