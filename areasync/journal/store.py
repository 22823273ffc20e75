"""The store: one append-only journal file per session under `DIR/sessions/`.

`JournalStore(directory)` creates, reopens, reads, lists and removes session journals. Reading
is synchronous (a restarting server reads every journal before it serves; call it through
`anyio.to_thread.run_sync` from a running loop); creating and reopening are async because they
hand back a `JournalWriter` whose I/O runs off the loop.

Bounds. A live session's journal grows by one frame per external input: 12 bytes of frame head
plus the msgpack record (250 bytes for a typical `send_email` tool call whose arguments are 205
bytes of JSON; `bench/journal.py` measures it), and by nothing else: stream items are not
journaled, they are recomputed by replay. A session with 10,000 tool calls is 2.5 MB, and
reading it back decodes about 165,000 records/s (0.06 s). No compaction now: a session's inputs are
its whole state (replay from `Created` is the only restore there is), so nothing in a live
journal is obsolete; compaction would need a snapshot of the simulation, which ARE does not
offer. Ended sessions are removed whole by `remove_ended_older_than`.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import anyio
import anyio.to_thread

from areasync.journal.errors import JournalError, JournalStateError
from areasync.journal.format import Journal, decode_journal, encode_preamble, encode_record
from areasync.journal.records import Created, Header
from areasync.journal.writer import (
    EVERY,
    Durability,
    JournalWriter,
    sync_directory,
    sync_file,
    write_all,
)

__all__ = ["SUFFIX", "JournalStore", "StoreScan"]

SUFFIX = ".journal"
_SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")


def _areasync_version() -> str:
    try:
        return version("areasync")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "unknown"


@dataclass
class StoreScan:
    """Every journal in a store: those that read back, and those refused with their error."""

    journals: dict[str, Journal] = field(default_factory=dict)
    refused: dict[str, JournalError] = field(default_factory=dict)

    @property
    def live(self) -> dict[str, Journal]:
        """Journals of sessions to restore: created, acknowledged, not ended."""
        return {
            sid: journal
            for sid, journal in self.journals.items()
            if journal.created is not None and journal.ended is None
        }


class JournalStore:
    """Session journals under `directory/sessions/<session_id>.journal`."""

    def __init__(self, directory: str | Path, *, threads: int = 4) -> None:
        self.directory = Path(directory)
        self.sessions = self.directory / "sessions"
        self.threads = threads  # journals synced at once (each sync holds a worker thread)
        self._limiter: anyio.CapacityLimiter | None = None
        self.sessions.mkdir(parents=True, exist_ok=True)

    def path(self, session_id: str) -> Path:
        if not _SESSION_ID.fullmatch(session_id):
            raise ValueError(
                f"session id {session_id!r} cannot name a journal file: use 1 to 128 letters, "
                "digits, '_', '-' or '.', starting with a letter or digit"
            )
        return self.sessions / f"{session_id}{SUFFIX}"

    def session_ids(self) -> list[str]:
        """Every journal's session id, sorted (whether or not it reads back)."""
        return sorted(p.name[: -len(SUFFIX)] for p in self.sessions.glob(f"*{SUFFIX}"))

    def read(self, session_id: str) -> Journal:
        """Every acknowledged record of a session's journal, or a `JournalError`."""
        path = self.path(session_id)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise JournalStateError(
                path, None, "no such journal", "check the session id and the --state-dir"
            ) from None
        return decode_journal(data, str(path))

    def scan(self) -> StoreScan:
        """Read every journal; a refused one is reported and never stops the others."""
        scan = StoreScan()
        for session_id in self.session_ids():
            try:
                scan.journals[session_id] = self.read(session_id)
            except JournalError as exc:
                scan.refused[session_id] = exc
        return scan

    def remove(self, session_id: str) -> None:
        self.path(session_id).unlink(missing_ok=True)
        self._sync_directory()

    def remove_ended_older_than(self, seconds: float, *, now: float | None = None) -> list[str]:
        """Remove the journals of sessions that ended more than `seconds` ago (wall clock), and
        of sessions whose creation was never acknowledged, older than that; return their ids.
        A journal that does not read back is never removed: the operator decides."""
        cutoff = (time.time() if now is None else now) - seconds
        removed = []
        for session_id in self.session_ids():
            path = self.path(session_id)
            try:
                if path.stat().st_mtime >= cutoff:
                    continue  # its last write is recent, so it cannot have ended before cutoff
                journal = self.read(session_id)
            except (OSError, JournalError):
                continue
            ended = journal.ended
            if (ended is not None and ended.wall < cutoff) or journal.created is None:
                path.unlink(missing_ok=True)
                removed.append(session_id)
        if removed:
            self._sync_directory()
        return removed

    async def create_writer(
        self, created: Created, durability: Durability = EVERY
    ) -> JournalWriter:
        """A new journal holding `created`, durable when this returns. The caller runs the
        writer's `run()` in a task group and `aclose()`s it; `create` does both."""
        path = self.path(created.session_id)
        data = encode_preamble(Header(areasync_version=_areasync_version(), created=time.time()))
        data += encode_record(created)
        fd = await anyio.to_thread.run_sync(self._create_file, path, data, limiter=self.limiter)
        return JournalWriter(
            path, fd, offset=len(data), next_index=1, durability=durability, limiter=self.limiter
        )

    async def reopen_writer(self, session_id: str, durability: Durability = EVERY) -> JournalWriter:
        """Append to an existing live journal after a restart: reads it (`writer.recovered`),
        drops a torn tail, and continues after the last acknowledged record."""
        return await anyio.to_thread.run_sync(
            self._reopen_file, session_id, durability, self.limiter, limiter=self.limiter
        )

    @asynccontextmanager
    async def create(
        self, created: Created, durability: Durability = EVERY
    ) -> AsyncIterator[JournalWriter]:
        """`create_writer` with its `run()` in a task group; leaving drains and closes it."""
        writer = await self.create_writer(created, durability)
        async with self._running(writer) as running:
            yield running

    @asynccontextmanager
    async def reopen(
        self, session_id: str, durability: Durability = EVERY
    ) -> AsyncIterator[JournalWriter]:
        """`reopen_writer` with its `run()` in a task group; leaving drains and closes it."""
        writer = await self.reopen_writer(session_id, durability)
        async with self._running(writer) as running:
            yield running

    @property
    def limiter(self) -> anyio.CapacityLimiter:
        # Created on first use: an anyio primitive needs the running event loop.
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(self.threads)
        return self._limiter

    @asynccontextmanager
    async def _running(self, writer: JournalWriter) -> AsyncIterator[JournalWriter]:
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(writer.run)
                try:
                    yield writer
                finally:
                    writer.close()
        finally:
            writer.abort()  # a no-op after run(); closes the file if run() never started

    def _create_file(self, path: Path, data: bytes) -> int:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
        except FileExistsError:
            raise JournalStateError(
                path, None, "a journal for this session id exists", "choose another session id"
            ) from None
        try:
            write_all(fd, data)
            os.fsync(fd)
            self._sync_directory()  # the new name must survive a crash too
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _reopen_file(
        self, session_id: str, durability: Durability, limiter: anyio.CapacityLimiter
    ) -> JournalWriter:
        journal = self.read(session_id)
        path = self.path(session_id)
        if journal.created is None:
            raise JournalStateError(
                path, 0, "the session's creation was never acknowledged", "remove the journal"
            )
        if journal.ended is not None:
            raise JournalStateError(
                path, journal.valid_bytes, "the session has ended", "nothing may be appended"
            )
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        try:
            if journal.torn_bytes:
                os.ftruncate(fd, journal.valid_bytes)
                sync_file(fd)
        except BaseException:
            os.close(fd)
            raise
        return JournalWriter(
            path,
            fd,
            offset=journal.valid_bytes,
            next_index=len(journal.records),
            durability=durability,
            limiter=limiter,
            recovered=journal,
        )

    def _sync_directory(self) -> None:
        sync_directory(self.sessions)
