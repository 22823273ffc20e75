"""The client's resumable stream, without I/O: frames in, state out.

The server numbers its stream items 1, 2, 3, ... per session epoch. This module keeps what the
client received of that sequence and decides, for each welcome and each item, what it means:

- an item with the next seq is appended; one already held is dropped (a replay overlapping what
  arrived before a break); a jump is a :class:`StreamGap`, after which the connection cannot be
  trusted and the client resumes from the last item it has;
- a reconnect's hello carries :meth:`ResumableStream.resume_point` (``since``, ``epoch``); the
  welcome either continues the current :class:`Generation` (``replay: full``, same epoch) or
  ends it, and iterators over an ended generation raise :class:`StreamResetError` instead of
  splicing two different streams together.

Nothing here touches a socket or waits: the connection layer feeds frames in and wakes whoever
waits when something changed, and the tests drive it with frames alone.
"""

from __future__ import annotations

from areasync.client.errors import StreamResetError
from areasync.protocol import (
    ClockItem,
    ClockState,
    EndedItem,
    EventItem,
    NotificationItem,
    Replay,
    StreamItem,
    Welcome,
)

__all__ = ["Generation", "ResumableStream", "StreamGap"]


class StreamGap(Exception):
    """The server skipped seqs: the connection is not trustworthy, resume from the last one."""


class Generation:
    """The stream items of one epoch, in seq order, as this client received them.

    ``items[i]`` has seq ``base + i + 1``. A reset (new epoch) ends the generation: ``reset``
    holds the error its iterators raise, and new iterators follow the next generation.
    """

    def __init__(self, base: int, epoch: str) -> None:
        self.base = base
        self.epoch = epoch
        self.items: list[StreamItem] = []
        self.reset: StreamResetError | None = None

    @property
    def last_seq(self) -> int:
        return self.base + len(self.items)

    def position(self, since: int | None) -> int:
        """The index in ``items`` of the first item after ``since`` (None: the first held)."""
        if since is None:
            return 0
        if since < self.base or since > self.last_seq:
            raise ValueError(
                f"since={since} is outside what this client holds (seqs after "
                f"{self.base} up to {self.last_seq}); connect with since=0 to "
                "receive the whole stream"
            )
        return since - self.base

    def after(self, seq: int) -> list[StreamItem]:
        """The items held after ``seq``, in order (all of them for a seq before ``base``)."""
        return self.items[max(0, seq - self.base) :]


class ResumableStream:
    """One client's view of the session's stream across connections, resets included.

    ``since`` is what the first hello asks for (None: follow from the welcome on, 0: replay the
    whole stream); later hellos resume from the last item held.
    """

    def __init__(self, since: int | None = None) -> None:
        if since is not None and since < 0:
            raise ValueError(f"since must be a seq >= 0 (0: the whole stream), got {since}")
        self._since = since
        self.generation: Generation | None = None
        self.clock: ClockState | None = None
        """The latest clock state announced (welcome, then ``clock`` items); None before."""
        self.now = 0.0
        """Simulated time as of the latest clock state, event or notification; never goes back
        within one stream."""
        self.ended: EndedItem | None = None
        self.resets = 0
        """How many generations ended because the server could not resume them."""

    @property
    def epoch(self) -> str | None:
        """The epoch of the stream followed, None before a welcome and after a reset."""
        return None if self.generation is None else self.generation.epoch

    @property
    def seq(self) -> int:
        """The seq of the last item held (the resume point)."""
        return 0 if self.generation is None else self.generation.last_seq

    def resume_point(self) -> tuple[int | None, str | None]:
        """``(since, epoch)`` for the next hello."""
        if self.generation is None:
            return self._since, None
        return self.generation.last_seq, self.generation.epoch

    def welcome(self, welcome: Welcome) -> Generation | None:
        """Take in a welcome: start, continue or reset the stream. Returns the generation the
        welcome ended (its iterators now raise), or None."""
        self.clock = welcome.clock
        self.now = max(self.now, welcome.clock.time)
        generation, ended = self.generation, None
        if generation is None:
            self.now = welcome.clock.time
            # Follow from `since` when the server replays it, else from the welcome on.
            since = self._since
            base = since if since is not None and welcome.replay is Replay.FULL else welcome.seq
            self.generation = Generation(base, welcome.epoch)
        elif welcome.replay is not Replay.FULL or welcome.epoch != generation.epoch:
            # The server could not resume (or did not say it did): never splice two streams.
            ended = self._reset(
                f"the server could not resume the stream after seq {generation.last_seq} "
                f"(replay={welcome.replay.value}, epoch {generation.epoch!r} -> "
                f"{welcome.epoch!r})",
                welcome=welcome,
            )
            self.now = welcome.clock.time  # a new stream: its own clock
            # After a reset the server sends the new stream from seq 1 (as for since=0), so the
            # new generation starts empty and receives all of it.
            self.generation = Generation(0, welcome.epoch)
        self._since = None  # only ever asked for on the first connection
        return ended

    def replay_unavailable(self, message: str) -> Generation | None:
        """The server refused to replay after our position (``replay_unavailable``): it is not
        the stream we followed. Ends the current generation (returned), so that the next hello
        starts over without ``since``; None if there was none (nothing to start over from)."""
        generation = self.generation
        if generation is None:
            return None
        return self._reset(
            f"the server cannot replay after seq {generation.last_seq}: {message}", welcome=None
        )

    def receive(self, item: StreamItem) -> bool:
        """Take in a stream item: True if it was appended, False if it was already held.

        Raises :class:`StreamGap` if seqs were skipped (nothing is taken in then).
        """
        generation = self.generation
        if generation is None:
            raise RuntimeError("a stream item before the welcome")
        last = generation.last_seq
        if item.seq <= last:
            return False
        if item.seq != last + 1:
            raise StreamGap(f"stream gap: expected seq {last + 1}, got {item.seq}")
        if isinstance(item, ClockItem):
            self.clock = item.clock
            self.now = max(self.now, item.clock.time)
        elif isinstance(item, EventItem):
            self.now = max(self.now, item.event.time)
        elif isinstance(item, NotificationItem):
            self.now = max(self.now, item.notification.timestamp)
        elif isinstance(item, EndedItem):
            self.ended = item
        generation.items.append(item)
        return True

    def _reset(self, reason: str, *, welcome: Welcome | None) -> Generation:
        generation = self.generation
        assert generation is not None
        self.resets += 1
        generation.reset = StreamResetError(
            f"{reason}. Call stream() again to follow the new stream, and get_state() to "
            "rebuild what you derived from the old one.",
            welcome=welcome,
        )
        self.generation = None
        return generation
