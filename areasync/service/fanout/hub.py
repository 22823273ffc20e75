"""Fan-out of a session's stream: encode each item once, hand every subscriber the same bytes.

The session's `StreamLog` keeps every item for the session's life (replay needs it), so a
subscriber needs no queue of its own: it is a *cursor* into the log (`position`, the last seq
handed to its socket) plus its own short queue of replies. Appending an item costs the session
one `WireFrame` and nothing per subscriber (only agents, which must take their turn on a
notification, hear of each item); it never waits for anyone. Once the synchronous stretch that
appended items is over (`call_soon`), the hub visits every subscriber once: one more than
`max_lag` items behind is told to go, the others `flush`. A subscriber whose socket keeps up
writes everything new in one write, right there, with no task switch; one whose socket is
behind leaves it to its own writer task, which waits for the socket to drain (see
`outbox.py`). A subscriber that keeps up costs one comparison and one write per stretch,
however many items it held.

Encode once, all the way down: each item's complete WebSocket frame is built once
(`frames.WireFrame`) and is the same bytes for every subscriber of an encoding; a writer hands
the socket a run of ready frames in one write. Subscribers at the same position are handed the
same run: `wire_run`
builds the bytes of a run once (a join of frames, or `batch` messages of up to BATCH_BYTES for
clients that asked for batches, see `protocol/frames.py`) and every other subscriber at that
position gets that very object.

Slow consumers: lag is what the stream outran. A subscriber's *lag* is the number of items
appended since its socket last drained (its user-space buffer at or under websockets'
`write_limit`, seen by `flush` or by its writer) that it has not been handed; more than
`max_lag` and it is told to go (`overflow`, which closes it with 4008). It reconnects with
`since` and loses nothing, because the log still has everything. So a subscriber that stops
reading is gone after `max_lag` new items once its buffers are full, while one that reads keeps
its place however far behind a burst leaves it: a jump that fires 50,000 items in one stretch, or
a replay after a reconnect, is a backlog to work through, not lag (each time its socket drains,
the count starts again). Being behind costs the server nothing per subscriber - the log keeps
every item anyway - so only a socket that stops draining is a reason to close. The check runs
at the end of each synchronous stretch of appends, after the subscriber was given the chance to
write. Memory per subscriber is its cursor, its reply queue (bounded separately) and what the
socket's user-space buffer holds (`write_limit` plus one write of at most `WRITE_BYTES`),
whatever the client does.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Final, Protocol

from areasync.engine.stream import StreamLog
from areasync.protocol.frames import EventItem, NotificationItem, StreamItem
from areasync.service.fanout.frames import Messages, WireFrame
from areasync.service.metrics import Metrics

logger = logging.getLogger("areasync.service")

_RUN_CACHE_SIZE: Final = 8


# Seconds a reply sent outside the outbox waits for its input to be durable before giving up.
DURABLE_WAIT = 30.0


class Subscriber(Protocol):
    """What the hub needs from a connection."""

    @property
    def position(self) -> int:
        """The last seq handed to the socket."""

    @property
    def drained_at(self) -> int:
        """The stream's seq when its socket last drained (or when it attached)."""

    wants_items: bool  # call on_item for every new item (agents: their turn comes with it)

    def on_item(self, seq: int, item: StreamItem) -> None:
        """A new item is in the log (called synchronously, inside the append)."""

    def overflow(self, lag: int) -> None:
        """The stream outran the subscriber by `lag` items, above the bound: it must go."""

    def flush(self) -> None:
        """Write what is pending, now, if the socket keeps up (never waits); a socket found
        drained moves `drained_at` to the stream's end."""


class Gate(Protocol):
    """What holds back stream items and replies until they are durable (`durability/journal.py`)."""

    appended: int  # records appended so far

    @property
    def error(self) -> Exception | None:
        """Why the journal failed (nothing more becomes durable), or None."""

    @property
    def durable(self) -> int:
        """Records known durable."""

    def limit(self) -> int | None:
        """The last seq that may be shown (None: all of them)."""


class StreamHub:
    """The encoded stream of one session and the subscribers following it."""

    def __init__(
        self, log: StreamLog[StreamItem], *, max_lag: int, metrics: Metrics | None = None
    ) -> None:
        self.max_lag = max_lag
        self.metrics = metrics
        self.frames: list[WireFrame] = [WireFrame(item) for item in log.items]
        # Dicts as ordered sets: delivery order is attach order, which keeps runs readable.
        self._subscribers: dict[Subscriber, None] = {}
        self._watchers: dict[Subscriber, None] = {}  # those that want on_item
        self.events = sum(1 for item in log.items if isinstance(item, EventItem))
        # The seq of the last notification (0: none yet): an agent's idle that has not read
        # up to it keeps its turn (requests.py).
        self.last_notification = max(
            (seq for seq, item in enumerate(log.items, 1) if type(item) is NotificationItem),
            default=0,
        )
        self._flush_scheduled = False
        # Runs built by wire_run since the last flush: subscribers at one position share them.
        self._runs: dict[tuple[int, int, bool, bool, int], tuple[int, int, bytes]] = {}
        # A session with a journal shows only what follows from durable records (durable.py).
        self.gate: Gate | None = None
        # `durable()`'s callers: (records that must be durable, their future), oldest first.
        self._durable_waits: list[tuple[int, asyncio.Future[bool]]] = []
        log.listeners.append(self._on_append)

    @property
    def seq(self) -> int:
        """The seq of the last item subscribers may be shown: the last in the stream, or,
        with a gate, the last that follows from durable records."""
        produced = len(self.frames)
        gate = self.gate
        if gate is None:
            return produced
        limit = gate.limit()
        return produced if limit is None or limit > produced else limit

    async def durable(self, limit: float = DURABLE_WAIT) -> bool:
        """Return once every journal record appended so far is durable (at once without a
        journal): a reply sent outside the outbox (an OpenEnv observation, a gaia2-cli answer)
        must not tell of an input a restart would not know. False if the journal failed
        first, or after `limit` seconds (the session is failing: say so rather than answer)."""
        gate = self.gate
        if gate is None or gate.durable >= gate.appended:
            return True
        if gate.error is not None:
            return False
        waiter = asyncio.get_running_loop().create_future()
        self._durable_waits.append((gate.appended, waiter))
        try:
            async with asyncio.timeout(limit):
                return await waiter
        except TimeoutError:
            return False

    def _release_durable(self) -> None:
        gate = self.gate
        if gate is None:
            return
        durable, failed = gate.durable, gate.error is not None
        waiting = []
        for needs, waiter in self._durable_waits:
            if waiter.done():
                continue  # its caller gave up (a timeout)
            if durable >= needs:
                waiter.set_result(True)
            elif failed:
                waiter.set_result(False)
            else:
                waiting.append((needs, waiter))
        self._durable_waits = waiting

    def release(self) -> None:
        """Hand what may go out (new items, or what the gate let through) to subscribers once
        this synchronous stretch is over."""
        if not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)

    @property
    def subscribers(self) -> list[Subscriber]:
        return list(self._subscribers)

    def subscribe(self, subscriber: Subscriber) -> None:
        self._subscribers[subscriber] = None
        if subscriber.wants_items:
            self._watchers[subscriber] = None

    def unsubscribe(self, subscriber: Subscriber) -> None:
        self._subscribers.pop(subscriber, None)
        self._watchers.pop(subscriber, None)

    def _on_append(self, seq: int, item: StreamItem) -> None:
        self.frames.append(WireFrame(item))
        is_event = type(item) is EventItem
        if is_event:
            self.events += 1
        elif type(item) is NotificationItem:
            self.last_notification = seq
        if self.metrics is not None:
            self.metrics.stream_items += 1
            self.metrics.events += is_event
        if self._watchers:
            for watcher in tuple(self._watchers):  # a copy: one may leave while we iterate
                watcher.on_item(seq, item)
        # Items appended in one synchronous stretch (a tick, a jump, a tool call) go out
        # together, once the stretch is over: one write per subscriber, not one per item.
        self.release()

    def _flush(self) -> None:
        self._flush_scheduled = False
        seq = len(self.frames)
        limit = self.max_lag
        for subscriber in tuple(self._subscribers):
            try:
                subscriber.flush()
            except Exception:  # one broken subscriber must not hold up the others
                logger.exception("writing to %r failed", subscriber)
            position = subscriber.position
            drained_at = subscriber.drained_at
            lag = seq - (position if position > drained_at else drained_at)
            if lag > limit:
                self.unsubscribe(subscriber)
                subscriber.overflow(lag)
        if self._durable_waits:
            self._release_durable()
        # The shared runs served this round; the next starts where it ended. Holding them
        # longer would only keep up to WRITE_BYTES per run alive for nobody.
        self._runs.clear()

    def wire_run(
        self, start: int, stop: int, *, text: bool, batch: bool, budget: int
    ) -> tuple[int, int, bytes]:
        """Stream items start+1 .. at most stop, as wire bytes of at most about `budget` bytes.

        Returns `(end, messages, data)`: the seq of the last item included (at least one is),
        how many WebSocket messages `data` holds, and the bytes to write. Without `batch` each
        item is its own message; with it, items go as `batch` messages of up to BATCH_BYTES (an
        item alone goes as itself). The result is kept for the next subscribers at the same
        position.
        """
        key = (start, stop, text, batch, budget)
        cached = self._runs.get(key)
        if cached is not None:
            return cached
        frames = self.frames
        messages = Messages(text=text, batch=batch)
        end = start
        while end < stop:
            wire = frames[end]
            if not messages.fits(len(wire.frame_for(text)), budget):
                break
            if batch:
                messages.add(wire.payload(text))
            else:
                messages.add_frame(wire.frame_for(text))
            end += 1
        result = (end, messages.messages, messages.data())
        if len(self._runs) >= _RUN_CACHE_SIZE:
            self._runs.clear()
        self._runs[key] = result
        return result
