"""Appending to one session's journal: ordered, acknowledged only once durable, off the loop.

`JournalWriter.append(record)` encodes and queues the record on the event loop (microseconds, no
I/O) and returns a `Ticket`; awaiting the ticket returns once the record is on disk (written and
fdatasync'ed), or raises `JournalWriteError`. The writer's `run()` task does the I/O: it hands
each batch to a worker thread (`anyio.to_thread.run_sync`, under the store's own
`CapacityLimiter`, so journals never queue behind the default thread pool's other users, and
fsyncs of different sessions overlap) and the loop only awaits an `anyio.Event`. A dedicated
writer thread fed by a queue was measured against it (`bench/journal.py`, "threads";
docs/topics/performance.md, "The journal store"): the difference is noise next to the sync, and
a single thread would serialize every session's sync. On the loop, `append()` costs
microseconds.

Durability policies (`Durability`):

- `every`: one write and one fdatasync per record; the record's ticket completes after its own.
- `group(ms)`: records appended within `ms` of a batch's first record share one write and one
  fdatasync (group commit); every ticket of the batch completes together, after that fdatasync,
  and never before. Records appended while a batch is being written start the next batch.

`group(0)` is the one to use: no window, so a lone record is synced at once (latency as `every`),
and records that arrive while a sync runs share the next one: with one record in flight per
session (an agent's tool calls) it acks as fast as `every`, and under bursts it appends many
times more (`bench/journal.py`; docs/topics/performance.md, "The journal store"). A window
(`group(1)`, `group(5)`) only adds itself to the latency when a session has one record in
flight.

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
import anyio.to_thread

from areasync.journal.errors import JournalRecordError, JournalStateError, JournalWriteError
from areasync.journal.format import Journal, encode_record
from areasync.journal.records import Record

__all__ = ["EVERY", "Durability", "JournalWriter", "Ticket", "sync_file"]


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
        limiter: anyio.CapacityLimiter,
        recovered: Journal | None = None,
    ) -> None:
        self.path = path
        self.durability = durability
        self.recovered = recovered  # what `reopen` read back, for the caller to replay
        self.durable_bytes = offset  # the file's acknowledged length
        self.broken: JournalWriteError | None = None
        self._fd: int | None = fd
        self._next_index = next_index
        self._limiter = limiter
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
        try:
            await anyio.to_thread.run_sync(self._write, data, limiter=self._limiter)
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
        self.durable_bytes += len(data)
        batch.done.set()

    def _write(self, data: bytes) -> None:
        """In a worker thread: the whole batch, then one sync."""
        fd = self._fd
        if fd is None:
            raise OSError(9, "the journal file is closed")
        write_all(fd, data)
        sync_file(fd)

    def _fail_queued(self) -> None:
        error = self.broken or JournalWriteError(
            self.path, self.durable_bytes, "the writer stopped before these records were durable"
        )
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
