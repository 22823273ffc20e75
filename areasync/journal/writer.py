"""Appending to one session's journal: ordered, acknowledged only once durable, off the loop.

`JournalWriter.append(record)` encodes and queues the record on the event loop (microseconds, no
I/O) and returns a `Ticket`; awaiting the ticket returns once the record is on disk (written and
fdatasync'ed), or raises `JournalWriteError`. The writer's `run()` task does the I/O: it hands
each batch to its store's `Syncer`, which runs it in a worker thread (`anyio.to_thread.run_sync`,
under the store's own `CapacityLimiter`, so journals never queue behind the default thread
pool's other users) and the loop only awaits an `anyio.Event`. On the loop, `append()` costs
microseconds (docs/topics/performance.md, "The journal store").

Group commit across journals (`Syncer`): the batches of every journal of a store that are due
in the same turn of the event loop share one thread call, which writes each, then syncs each.
A thread call costs the loop a handful of callbacks and a wake-up from the thread: with many
sessions busy, one per session per record was a large part of what a journal cost the loop per
tool call (docs/topics/performance.md, "What a second core buys", has the figures). Up to the
limiter's number of rounds run at once, so one journal's slow sync does not hold every other
journal's; each record is still acknowledged only after its own file's sync, and a sync's failure
is its own journal's.

Durability policies (`Durability`):

- `every`: one write and one fdatasync per record; the record's ticket completes after its own.
- `group(ms)`: records appended within `ms` of a batch's first record share one write and one
  fdatasync (group commit); every ticket of the batch completes together, after that fdatasync,
  and never before. Records appended while a batch is being written start the next batch.

`group(0)` is the one to use: no window, so a lone record is synced at once (latency as `every`),
and records that arrive while a sync runs share the next one: with one record in flight it acks
as fast as `every`, and with many it does several times more appends per second (figures in
docs/topics/performance.md, "The journal store"). A window (`group(1)`, `group(5)`) only adds
itself to the latency when a session has one record in flight.

fdatasync rather than fsync: for an append it flushes the data and the new file size (what a
reader needs) and skips the timestamps; where the OS lacks it, fsync.

A failed write or sync breaks the writer for good: every queued ticket fails with the same
`JournalWriteError`, and a later `append` raises it. Never retried: after a failed fsync the
kernel may already have dropped the dirty pages and marked them clean, so a second fsync could
report success for data that is gone. A partial frame the failure left behind reads back as a
torn tail (never acknowledged) and is dropped; whole records written before the failed sync
may read back after a restart. A failed ticket means "not known to be durable", as a failed
commit does in a database: neither the record nor its absence was acknowledged.
"""

from __future__ import annotations

import contextlib
import os
from collections import deque
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import anyio.to_thread

from areasync.journal.entries import Record
from areasync.journal.errors import JournalRecordError, JournalStateError, JournalWriteError
from areasync.journal.format import Journal, encode_record

__all__ = ["EVERY", "Durability", "JournalWriter", "SyncStats", "Syncer", "Ticket", "sync_file"]


@dataclass(frozen=True)
class Durability:
    """When an appended record is made durable: alone (`every`) or in a group commit."""

    group_ms: float | None = None  # None: every record alone

    @classmethod
    def every(cls) -> Durability:
        return cls(None)

    @classmethod
    def group(cls, ms: float) -> Durability:
        if not ms >= 0:
            raise ValueError(f"a group commit window is a duration in ms >= 0, not {ms!r}")
        return cls(float(ms))

    def __str__(self) -> str:
        return "every" if self.group_ms is None else f"group({self.group_ms:g}ms)"


EVERY = Durability.every()
_STOPPED = "the writer stopped before these records were durable"


def write_all(fd: int, data: bytes) -> None:
    """Write all of `data` (`os.write` may write less than it is given)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def sync_file(fd: int) -> None:
    """Make a file's written data durable (looked up at each call, so a test can make it fail)."""
    if hasattr(os, "fdatasync"):
        os.fdatasync(fd)
    else:  # pragma: no cover - macOS, Windows
        os.fsync(fd)


def sync_directory(path: Path) -> None:
    """Make a directory's entries durable (a file created, renamed or removed in it)."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@dataclass
class SyncStats:
    """What a store's journals have made durable: records, files synced (`syncs`), thread
    hops (`rounds`: syncs per round above 1 is group commit across journals), and the seconds
    records waited from their batch's first append to its sync's end, summed (`wait_s`)."""

    records: int = 0
    syncs: int = 0
    rounds: int = 0
    wait_s: float = 0.0


class _Due:
    """One journal's batch, due to be written and synced in the next round."""

    __slots__ = ("data", "done", "error", "fd", "taken", "wake")

    def __init__(self, fd: int, data: bytes) -> None:
        self.fd = fd
        self.data = data
        self.error: OSError | None = None
        self.taken = False  # in a round (its thread call may be using `fd`)
        self.done = False
        self.wake = anyio.Event()  # its round ended, or it may lead one


class Syncer:
    """Writes and syncs the batches of a store's journals, those due together in one round.

    `sync(fd, data)` returns once `data` is written to `fd` and synced, or raises the OSError
    that stopped it. A caller finding no round gathering and a free slot (at most `limiter`'s
    tokens of rounds at once) leads one: it lets the loop run once, so that every writer due
    in this turn joins, then takes every batch due and runs them in one thread call. Others
    wait for their round to end, or for a slot to lead one."""

    def __init__(self, limiter: anyio.CapacityLimiter, stats: SyncStats) -> None:
        self.limiter = limiter
        self.stats = stats
        self._due: list[_Due] = []
        self._rounds = 0
        self._gathering = False

    async def sync(self, fd: int, data: bytes) -> None:
        due = _Due(fd, data)
        self._due.append(due)
        try:
            while not due.done:
                if not (due.taken or self._gathering) and self._rounds < self.limiter.total_tokens:
                    await self._lead()
                else:
                    await due.wake.wait()
                    due.wake = anyio.Event()
        except BaseException:  # cancelled: never return while a thread may use `fd`
            if not due.taken:
                self._due.remove(due)
                if self._due:
                    self._due[0].wake.set()
            else:
                with anyio.CancelScope(shield=True):
                    while not due.done:
                        await due.wake.wait()
                        due.wake = anyio.Event()
            raise
        if due.error is not None:
            raise due.error

    async def _lead(self) -> None:
        self._rounds += 1
        try:
            self._gathering = True
            try:
                await anyio.lowlevel.checkpoint()  # the writers due in this turn join
            finally:
                self._gathering = False
            batch, self._due = self._due, []
            for due in batch:
                due.taken = True
            try:
                # Not abandoned when cancelled: the thread finishes, and its outcome stands.
                await anyio.to_thread.run_sync(_write_round, batch, limiter=self.limiter)
            finally:
                self.stats.rounds += 1
                self.stats.syncs += len(batch)
                for due in batch:
                    due.done = True
                    due.wake.set()
        finally:
            self._rounds -= 1
            if self._due:  # due meanwhile: the first may lead the next round
                self._due[0].wake.set()


def _write_round(batch: list[_Due]) -> None:
    """In a worker thread: write every batch, then sync each written; an OSError is its
    batch's alone."""
    for due in batch:
        try:
            write_all(due.fd, due.data)
        except OSError as exc:
            due.error = exc
    for due in batch:
        if due.error is None:
            try:
                sync_file(due.fd)
            except OSError as exc:
                due.error = exc


class _Batch:
    """Records made durable together; one event for all their tickets."""

    __slots__ = ("done", "error", "frames", "opened")

    def __init__(self, opened: float) -> None:
        self.frames: list[bytes] = []
        self.done = anyio.Event()
        self.error: JournalWriteError | None = None
        self.opened = opened


class Ticket:
    """One appended record's acknowledgement: `await ticket` returns once it is durable."""

    __slots__ = ("_batch", "index")

    def __init__(self, batch: _Batch, index: int) -> None:
        self._batch = batch
        self.index = index  # the record's position in the journal (0 is `Created`)

    @property
    def done(self) -> bool:
        """True once the record is durable or has failed (`error`)."""
        return self._batch.done.is_set()

    @property
    def error(self) -> JournalWriteError | None:
        return self._batch.error

    async def wait(self) -> None:
        await self._batch.done.wait()
        if self._batch.error is not None:
            raise self._batch.error

    def __await__(self) -> Generator[Any, None, None]:
        return self.wait().__await__()


def encode_or_refuse(path: Path, record: Record) -> bytes:
    """`record`'s frame (`format.encode_record`), or `JournalRecordError` if it has none."""
    try:
        return encode_record(record)
    except Exception as exc:  # pure encoding: whatever it raises, the record has no bytes
        raise JournalRecordError(
            path,
            f"the {type(record).__name__.lower()} record cannot be encoded "
            f"({type(exc).__name__}: {exc})",
        ) from exc


class JournalWriter:
    """Appends to one journal; `run()` must run (in a task group) for tickets to complete."""

    def __init__(
        self,
        path: Path,
        fd: int,
        *,
        offset: int,
        next_index: int,
        durability: Durability,
        syncer: Syncer,
        recovered: Journal | None = None,
    ) -> None:
        self.path = path
        self.durability = durability
        self.recovered = recovered  # what `reopen` read back, for the caller to replay
        self.durable_bytes = offset  # the file's acknowledged length
        self.broken: JournalWriteError | None = None
        self._fd: int | None = fd
        self._next_index = next_index
        self._syncer = syncer
        self._queue: deque[_Batch] = deque()
        self._open: _Batch | None = None  # the batch a group commit is still filling
        self._wake = anyio.Event()
        self._closing = False
        self._finished = anyio.Event()

    def fileno(self) -> int:
        """The journal's file descriptor (-1 once closed)."""
        return -1 if self._fd is None else self._fd

    @property
    def pending(self) -> int:
        """Records appended and not yet durable (nor failed)."""
        return sum(len(batch.frames) for batch in self._queue)

    def append(self, record: Record) -> Ticket:
        """Queue `record` after every earlier one; await the ticket for its durability.
        `JournalRecordError` (nothing queued, the writer unharmed) if it cannot be encoded."""
        return self.append_frame(encode_or_refuse(self.path, record))

    def append_frame(self, frame: bytes) -> Ticket:
        """`append` for a record already encoded (`format.encode_record`)."""
        if self.broken is not None:
            raise self.broken
        if self._closing:
            raise JournalStateError(
                self.path, None, "append after the journal was closed", "open it again to append"
            )
        batch = self._open
        if batch is None:
            batch = _Batch(anyio.current_time())
            self._queue.append(batch)
            if self.durability.group_ms is not None:
                self._open = batch
        batch.frames.append(frame)
        self._wake.set()
        ticket = Ticket(batch, self._next_index)
        self._next_index += 1
        return ticket

    def close(self) -> None:
        """No more appends; `run()` makes the queued records durable, then returns."""
        self._closing = True
        self._wake.set()

    async def aclose(self) -> None:
        """`close()`, then wait until every queued record is durable (or failed)."""
        self.close()
        await self._finished.wait()

    async def run(self) -> None:
        """Write batches in order until closed and drained, or until a write fails. Never
        raises a disk error (that would tear down the caller's task group): it goes to the
        tickets. Cancelled, it fails the records still queued and closes the file."""
        try:
            while self.broken is None:
                if not self._queue:
                    if self._closing:
                        break
                    self._wake = anyio.Event()
                    await self._wake.wait()
                    continue
                await self._wait_window(self._queue[0])
                batch = self._queue.popleft()
                if batch is self._open:
                    self._open = None
                await self._flush(batch)
        finally:
            self.abort()

    def abort(self) -> None:
        """Fail every queued record and close the file (what `run()` does when it stops; for a
        writer whose `run()` was cancelled before it started). Idempotent."""
        self._closing = True
        self._fail_queued()
        self._close_fd()
        self._finished.set()

    async def _wait_window(self, batch: _Batch) -> None:
        window = self.durability.group_ms
        if window is not None and window > 0 and not self._closing:
            await anyio.sleep_until(batch.opened + window / 1000)

    async def _flush(self, batch: _Batch) -> None:
        data = b"".join(batch.frames)
        fd = self._fd
        try:
            if fd is None:
                raise OSError(9, "the journal file is closed")
            await self._syncer.sync(fd, data)
        except OSError as exc:
            self.broken = JournalWriteError(
                self.path,
                self.durable_bytes,
                f"{exc.strerror or exc} (errno {exc.errno}) while making "
                f"{len(batch.frames)} record(s) durable",
            )
            batch.error = self.broken
            batch.done.set()
            return
        except BaseException:  # cancelled: its records are not known to be durable
            batch.error = JournalWriteError(self.path, self.durable_bytes, _STOPPED)
            batch.done.set()
            raise
        self.durable_bytes += len(data)
        stats = self._syncer.stats
        stats.records += len(batch.frames)
        stats.wait_s += len(batch.frames) * (anyio.current_time() - batch.opened)
        batch.done.set()

    def _fail_queued(self) -> None:
        error = self.broken or JournalWriteError(self.path, self.durable_bytes, _STOPPED)
        if self.broken is None and self._queue:
            self.broken = error
        while self._queue:
            batch = self._queue.popleft()
            batch.error = error
            batch.done.set()
        self._open = None

    def _close_fd(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            # Already closed under us (a failed disk): nothing more to release.
            with contextlib.suppress(OSError):
                os.close(fd)
