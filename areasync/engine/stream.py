"""The session stream: an append-only, seq-numbered log of everything a session produced.

Items are numbered 1, 2, 3, ... with no gaps. The whole stream is kept for the session's life,
so any reader can resume from any `since` and get every later item exactly once, in order:
the in-process `Simulation.stream()`, a reconnecting WebSocket client, a dashboard.

Appending never waits and never fails: readers that fall behind cost the writer nothing. Readers
wait on a shared `anyio.Event`, created only when someone waits (so a run with no live reader
pays nothing per item) and set at the next append.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Generic, TypeVar

import anyio

T = TypeVar("T")
V = TypeVar("V")


class StreamLog(Generic[T]):
    """Items in seq order; `items[seq - 1]` is the item numbered `seq`."""

    def __init__(self) -> None:
        self.items: list[T] = []
        self.closed = False
        self._changed: anyio.Event | None = None
        self.listeners: list[Callable[[int, T], None]] = []

    @property
    def seq(self) -> int:
        """The seq of the last item (0 when empty)."""
        return len(self.items)

    def append(self, make: Callable[[int], T]) -> T:
        """Number the next item and append it; `make(seq)` builds it."""
        return self.append_with(_made_by, make)

    def append_with(self, make: Callable[[int, V], T], value: V) -> T:
        """Number the next item and append it; `make(seq, value)` builds it (one call fewer
        than `append` with a closure: a session appends one per event)."""
        if self.closed:
            raise RuntimeError("the stream is closed: the session has ended")
        seq = len(self.items) + 1
        item = make(seq, value)
        self.items.append(item)
        for listener in self.listeners:
            listener(seq, item)
        changed = self._changed  # `_notify`, inline: once per item of every session
        if changed is not None:
            self._changed = None
            changed.set()
        return item

    def revive(self) -> None:
        """Make a thawed copy of this log one of its own: nobody waits on it yet (a copy
        carries no waiter of the original's, whose event belongs to another event loop)."""
        self._changed = None

    def close(self) -> None:
        self.closed = True
        self._notify()

    def _notify(self) -> None:
        changed, self._changed = self._changed, None
        if changed is not None:
            changed.set()

    def after(self, since: int) -> list[T]:
        if since < 0 or since > len(self.items):
            raise ValueError(
                f"since={since} is outside this stream (0..{len(self.items)}); "
                "use a seq you have received, or 0 for everything"
            )
        return self.items[since:]

    async def wait_beyond(self, seq: int) -> None:
        """Return once the stream has an item after `seq`, or is closed."""
        while len(self.items) <= seq and not self.closed:
            if self._changed is None:
                self._changed = anyio.Event()
            await self._changed.wait()

    async def follow(self, since: int = 0) -> AsyncIterator[T]:
        """Every item after `since`, then each new one as it arrives, until the stream closes."""
        position = since
        self.after(since)  # validates `since`
        while True:
            while position < len(self.items):
                position += 1
                yield self.items[position - 1]
            if self.closed:
                return
            await self.wait_beyond(position)


def _made_by(seq: int, make: Callable[[int], T]) -> T:
    return make(seq)
