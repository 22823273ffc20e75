"""A session's journal as the service keeps it, and the gate that holds back what is not durable.

Rule: nothing leaves the server that a restarted server would not show again. A restart rebuilds
a session by replaying its journal (`Created`, then every record of `Simulation.records` in
order), so what a client saw must follow from records that were durable when it saw it:

- a *reply* is written only once every record appended before it was queued is durable (a tool
  call's record, the lease its turn began, anything of another client's that its result may
  reflect): the outbox keeps the journal's `appended` count with each reply and writes it once
  `durable` has reached it;
- a *stream item* is written only once every record logged before it is durable. A record
  carries the stream's seq when it was logged (`InputRecord.seq`), so the items it may have
  caused are those after that seq: `limit()` is the seq of the oldest record not yet durable,
  and the hub shows subscribers items up to it (`StreamHub.seq`). Items the engine makes on its
  own between records (a fast step, a realtime tick whose record came before) need no wait:
  they follow from durable records. The rule knows no record kinds, so any record the
  simulation logs (inputs, step counts, realtime ticks, leases) gates the same way.

Nothing here blocks the event loop: the writer syncs in a worker thread and `run()` only awaits
tickets; when a batch is durable it pops the records it made durable and asks the hub to hand
out what became visible (`on_release`).

A write that fails (`JournalWriteError`) fails the session, never the server: the gate stays
shut where the journal stopped (nothing past it is ever shown), `on_failure` ends the session
and closes its clients with the reason, and later records are dropped (the writer is broken for
good: see `areasync.journal.writer`). A record the journal cannot encode (`JournalRecordError`:
the simulation validates what its records carry, so a bug) fails the session the same way, at
that record, from `run()`: never from the simulation's own call that logged it, nor out of
`run()` into the server's task group.

A new session's journal file is created with `Created` and every record the session logged
before the file existed (its *history*: a fork's replay up to its cut), in one write and one
sync (`JournalStore.create_writer`). `wait_created()`, which a create's or a fork's reply waits
for, returns once the session and its history are durable: a client told of the session is
welcomed at the end of its stream (a fork's at its cut), every item up to there shown at once,
never held behind a later sync (in manual mode nothing else would move the session); and no
journal on disk holds the session without the history it was made with. Records the session
logs while the file is being created are appended after it, and gate as above.

A session restored after a restart (`service/durability/restore.py`) reopens its journal
(`JournalStore.reopen_writer`, `reopened` = the records it already holds, all durable) rather
than creating it: nothing it holds gates anything, and what the restored session logs from then
on is appended and gated as above.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio
import msgspec

from areasync.journal import (
    Created,
    Durability,
    Ended,
    JournalError,
    JournalRecordError,
    JournalStore,
    JournalWriteError,
    JournalWriter,
    Record,
    Recorded,
    Ticket,
    encode_or_refuse,
)

if TYPE_CHECKING:
    from areasync.simulation.input_records import InputRecord

logger = logging.getLogger("areasync.service")

_encode = msgspec.msgpack.Encoder().encode


@dataclass
class _Entry:
    """A record appended (encoded: `frame`) and not yet known durable; `ticket` is None until
    the writer exists (records logged while the journal file is being created wait for it), and
    for good if the record could not be encoded (`refused`)."""

    seq: int
    frame: bytes
    ticket: Ticket | None = None
    refused: JournalRecordError | None = None

    def queue(self, writer: JournalWriter) -> None:
        """Append the record to `writer`. A writer broken by a sync `run()` has not reported
        yet reports it from the ticket that failed first; a record it cannot encode stays
        without a ticket: either way the entry stays pending, so the gate stays shut before
        it."""
        if self.refused is not None:
            return
        with contextlib.suppress(JournalError):
            self.ticket = writer.append_frame(self.frame)


class SessionJournal:
    """One session's journal: appends its records, gates its output, reports a failure."""

    def __init__(
        self,
        store: JournalStore,
        created: Created,
        durability: Durability,
        *,
        on_failure: Callable[[JournalError], None],
        reopened: int | None = None,
        reopened_bytes: int = 0,
    ) -> None:
        self.store = store
        self.created = created
        self.durability = durability
        self.path = store.path(created.session_id)
        self.on_failure = on_failure
        self.on_release: Callable[[], None] = lambda: None  # the hub's flush, once attached
        self.appended = 1  # records appended, `Created` included
        self.error: JournalError | None = None
        self.writer: JournalWriter | None = None
        self.opened = anyio.Event()  # `Created` and its history are durable, or it failed
        self.finished = anyio.Event()  # `run()` is over: everything durable, or failed
        # `Created` gates everything: no item of a session is shown before it durably exists.
        first = _Entry(0, encode_or_refuse(self.path, created))
        self._entries: collections.deque[_Entry] = collections.deque([first])
        # Bytes of the records appended (`Created` included): what the journal's size bound
        # (`ServiceConfig.max_session_journal_bytes`) counts.
        self.bytes = len(first.frame)
        self.reopened = reopened
        if reopened is not None:  # its records are on disk already, `Created` first
            self._entries.clear()
            self.appended = reopened
            self.bytes = reopened_bytes
        self._wake = anyio.Event()
        self._ending = False

    # -- what the session logs ---------------------------------------------------------------

    def record(self, record: InputRecord) -> None:
        """A record the simulation logged (a `record_listeners` hook): append it, as it is
        typed (`Recorded`: its own msgpack, embedded)."""
        try:
            raw = msgspec.Raw(_encode(record))
        except Exception as exc:  # pure encoding: whatever it raises, the record has no bytes
            refused = JournalRecordError(
                self.path,
                f"the {record.source} record cannot be encoded ({type(exc).__name__}: {exc})",
            )
            self._add_entry(_Entry(record.seq, b"", refused=refused))
            return
        self._add(record.seq, Recorded(raw))

    def end(self, *, reason: str, state: str, seq: int) -> None:
        """The session ended: append `Ended`; `run()` returns once it is durable."""
        self._add(seq, Ended(reason=reason, state=state, seq=seq, wall=time.time()))
        self._ending = True
        self._wake.set()

    def suspend(self, listeners: list[Callable[[InputRecord], None]]) -> None:
        """The session is suspended (a clean shutdown): take no more records (this hook leaves
        `listeners`); `run()` returns once those appended are durable, with no `Ended`, so
        that the next start resumes the session."""
        if self.record in listeners:
            listeners.remove(self.record)
        self._ending = True
        self._wake.set()

    def _entry(self, seq: int, record: Record) -> _Entry:
        """The entry of `record`, encoded; refused (no bytes) if it cannot be encoded."""
        try:
            return _Entry(seq, encode_or_refuse(self.path, record))
        except JournalRecordError as exc:
            return _Entry(seq, b"", refused=exc)

    def _add(self, seq: int, record: Record) -> None:
        self._add_entry(self._entry(seq, record))

    def _add_entry(self, entry: _Entry) -> None:
        if self.error is not None or self._ending:
            return  # the journal failed, or closed: the session takes no input anyway
        if self.writer is not None:
            entry.queue(self.writer)
        self._entries.append(entry)
        self.appended += 1
        self.bytes += len(entry.frame)
        self._wake.set()

    # -- the gate ----------------------------------------------------------------------------

    def limit(self) -> int | None:
        """The last stream seq that may be shown (None: every item so far)."""
        entries = self._entries
        while entries:
            ticket = entries[0].ticket
            if ticket is None or not ticket.done or ticket.error is not None:
                return entries[0].seq
            entries.popleft()
        return None

    @property
    def durable(self) -> int:
        """Records known durable: always a prefix of those appended (the pending ones are the
        rest)."""
        return self.appended - len(self._entries)

    async def wait_created(self) -> None:
        """Return once `Created` and the history it was created with are durable; raise the
        `JournalWriteError` if they cannot be."""
        await self.opened.wait()
        if self.error is not None and self.writer is None:
            raise self.error

    # -- running -----------------------------------------------------------------------------

    async def run(self) -> None:
        """Create the journal file, then append and release until the session's `Ended` is
        durable (or the journal fails). Never raises a disk error."""
        try:
            await self._run()
        finally:
            self.opened.set()
            self.finished.set()

    async def _run(self) -> None:
        history = self._history()
        try:
            if self.reopened is None:
                frames = [entry.frame for entry in history]
                writer = await self.store.create_writer(self.created, self.durability, frames)
            else:
                sid = self.created.session_id
                writer = await self.store.reopen_writer(sid, self.durability)
        except (OSError, JournalError) as exc:
            what = "create" if self.reopened is None else "reopen"
            self._fail(
                JournalWriteError(self.path, None, f"cannot {what} the session's journal: {exc}")
            )
            return
        self.writer = writer
        if self.reopened is None:
            for _ in range(1 + len(history)):  # `Created` and its history, durable with the file
                self._entries.popleft()
        for entry in self._entries:  # logged while the file was being created
            entry.queue(writer)
        self.opened.set()
        self.on_release()
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(writer.run)
                try:
                    await self._release()
                finally:
                    writer.close()
        finally:
            writer.abort()

    def _history(self) -> list[_Entry]:
        """The records logged before a new journal's file exists (a fork's replay up to its
        cut), which the file is created with; none for a reopened journal, and none from the
        first that cannot be encoded on (it stays pending, and fails the session)."""
        if self.reopened is not None:
            return []
        history = list(itertools.islice(self._entries, 1, None))
        refused = (i for i, entry in enumerate(history) if entry.refused is not None)
        return history[: next(refused, len(history))]

    async def _release(self) -> None:
        """Await the oldest pending record; when its batch is durable, let the hub show what
        it held back."""
        writer = self.writer
        assert writer is not None
        while True:
            self.limit()
            entries = self._entries
            if not entries:
                if self._ending:
                    return
                self._wake = anyio.Event()
                await self._wake.wait()
                continue
            ticket = entries[0].ticket
            try:
                if ticket is None:
                    raise (
                        entries[0].refused
                        or writer.broken
                        or JournalWriteError(
                            self.path, writer.durable_bytes, "a record could not be appended"
                        )
                    )
                await ticket
            except (JournalWriteError, JournalRecordError) as exc:
                self._fail(exc)
                return
            self.limit()
            self.on_release()

    def crashed(self, exc: Exception) -> None:
        """`run()` raised (a bug: it handles what a disk or a record does): the journal has
        failed, and so has its session."""
        problem = f"its writer failed ({type(exc).__name__}: {exc})"
        self._fail(JournalError(self.path, None, problem, "see the server log; end the session"))

    def _fail(self, error: JournalError) -> None:
        if self.error is not None:
            return
        self.error = error
        self.opened.set()
        logger.error("session %s: its journal failed: %s", self.created.session_id, error)
        self.on_failure(error)
