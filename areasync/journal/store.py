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
offer. Ended sessions are removed whole by `remove_ended_older_than`; the service bounds each
journal's size (`ServiceConfig.max_session_journal_bytes`).

What the store reads. `sessions/` is the operator's directory too: files get copied, renamed,
left behind. Only a regular file named `<session id>.journal` (`is_session_id`) is read, opened
without following a symbolic link and without blocking (a FIFO under a journal's name must not
hang a start-up), and it must hold that very session (a journal copied under another name is
refused, not restored as a second owner of the session in it). Every other entry is a `Stray`:
listed with why and what to do, never read, never removed. Nothing in the directory stops the
store: a start-up or a retention sweep skips what it cannot use and goes on.
"""

from __future__ import annotations

import os
import re
import stat
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import anyio
import anyio.to_thread

from areasync.journal.entries import Created, Header
from areasync.journal.errors import JournalError, JournalStateError
from areasync.journal.format import Journal, decode_journal, encode_preamble, encode_record
from areasync.journal.writer import (
    EVERY,
    Durability,
    JournalWriter,
    Syncer,
    SyncStats,
    sync_directory,
    sync_file,
    write_all,
)

__all__ = [
    "MAX_SESSION_ID_CHARS",
    "SESSION_ID_RULE",
    "SUFFIX",
    "JournalStore",
    "StoreScan",
    "Stray",
    "Swept",
    "is_session_id",
]

SUFFIX = ".journal"
MAX_SESSION_ID_CHARS = 128
"""The longest session id a journal file may be named for."""
SESSION_ID_RULE = (
    f"1 to {MAX_SESSION_ID_CHARS} letters, digits, '_', '-' or '.', starting with a letter or digit"
)
_SESSION_ID = re.compile(rf"[A-Za-z0-9][A-Za-z0-9_.-]{{0,{MAX_SESSION_ID_CHARS - 1}}}")


def is_session_id(text: str) -> bool:
    """Whether `text` may name a session's journal (`SESSION_ID_RULE`)."""
    return _SESSION_ID.fullmatch(text) is not None


@dataclass(frozen=True)
class Stray:
    """An entry of `sessions/` the store does not read (module docstring): its path, and why."""

    path: Path
    why: str

    def __str__(self) -> str:
        return (
            f"skipped {self.path}: {self.why}; areasync neither reads nor removes it: move it "
            f"out of {self.path.parent} to silence this"
        )


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
    strays: list[Stray] = field(default_factory=list)

    @property
    def live(self) -> dict[str, Journal]:
        """Journals of sessions to restore: created, acknowledged, not ended."""
        return {
            sid: journal
            for sid, journal in self.journals.items()
            if journal.created is not None and journal.ended is None
        }


@dataclass
class Swept:
    """What a retention sweep did: the ids of the journals it removed, and what it skipped."""

    removed: list[str] = field(default_factory=list)
    skipped: list[Stray | JournalError] = field(default_factory=list)


class JournalStore:
    """Session journals under `directory/sessions/<session_id>.journal`."""

    def __init__(self, directory: str | Path, *, threads: int = 4) -> None:
        self.directory = Path(directory)
        self.sessions = self.directory / "sessions"
        self.threads = threads  # journals synced at once (each sync holds a worker thread)
        self._limiter: anyio.CapacityLimiter | None = None
        self._syncer: Syncer | None = None
        self.stats = SyncStats()  # what its journals made durable (`/metrics` shows it)
        self.sessions.mkdir(parents=True, exist_ok=True)

    def path(self, session_id: str) -> Path:
        if not is_session_id(session_id):
            raise ValueError(
                f"session id {session_id!r} cannot name a journal file: use {SESSION_ID_RULE}"
            )
        return self.sessions / f"{session_id}{SUFFIX}"

    def session_ids(self) -> list[str]:
        """Every journal's session id, sorted (whether or not it reads back; strays left out)."""
        return self.entries()[0]

    def strays(self) -> list[Stray]:
        """Every entry of `sessions/` that is not a journal the store reads, and why."""
        return self.entries()[1]

    def entries(self) -> tuple[list[str], list[Stray]]:
        """The session ids of the journals in `sessions/` (regular files named
        `<session id>.journal`), sorted, and every other entry as a `Stray`."""
        ids: list[str] = []
        strays: list[Stray] = []
        with os.scandir(self.sessions) as found:
            for entry in found:
                why = _stray_reason(entry)
                if why is None:
                    ids.append(entry.name[: -len(SUFFIX)])
                else:
                    strays.append(Stray(self.sessions / entry.name, why))
        return sorted(ids), sorted(strays, key=lambda stray: stray.path.name)

    def read(self, session_id: str) -> Journal:
        """Every acknowledged record of a session's journal, or a `JournalError`: also for a
        file that is not a regular one, cannot be read, or holds another session."""
        path = self.path(session_id)
        journal = decode_journal(_read_regular(path), str(path))
        created = journal.created
        if created is not None and created.session_id != session_id:
            raise JournalStateError(
                path,
                0,
                f"it holds session {created.session_id!r}, not {session_id!r} (a copy, or a "
                "renamed journal)",
                f"rename it back to {created.session_id}{SUFFIX} if that session's own journal "
                f"is gone, or move it out of {self.sessions}",
            )
        return journal

    def scan(self) -> StoreScan:
        """Read every journal; a refused one is reported and never stops the others, and every
        stray entry is listed."""
        ids, strays = self.entries()
        scan = StoreScan(strays=strays)
        for session_id in ids:
            try:
                scan.journals[session_id] = self.read(session_id)
            except JournalError as exc:
                scan.refused[session_id] = exc
        return scan

    def remove(self, session_id: str) -> None:
        self.path(session_id).unlink(missing_ok=True)
        self._sync_directory()

    def remove_ended_older_than(self, seconds: float, *, now: float | None = None) -> list[str]:
        """`sweep`'s removed ids."""
        return self.sweep(seconds, now=now).removed

    def sweep(self, seconds: float, *, now: float | None = None) -> Swept:
        """Remove the journals of sessions that ended more than `seconds` ago (wall clock), and
        of sessions whose creation was never acknowledged, older than that. A journal that does
        not read back, and any stray entry, is never removed (the operator decides): it is
        listed in `skipped`."""
        cutoff = (time.time() if now is None else now) - seconds
        ids, strays = self.entries()
        swept = Swept(skipped=list(strays))
        for session_id in ids:
            path = self.sessions / f"{session_id}{SUFFIX}"
            try:
                if path.stat(follow_symlinks=False).st_mtime >= cutoff:
                    continue  # its last write is recent, so it cannot have ended before cutoff
                journal = self.read(session_id)
            except FileNotFoundError:
                continue  # removed meanwhile
            except JournalError as exc:
                swept.skipped.append(exc)
                continue
            except OSError as exc:
                swept.skipped.append(Stray(path, f"cannot be examined ({exc.strerror or exc})"))
                continue
            ended = journal.ended
            if (ended is not None and ended.wall < cutoff) or journal.created is None:
                path.unlink(missing_ok=True)
                swept.removed.append(session_id)
        if swept.removed:
            self._sync_directory()
        return swept

    async def create_writer(
        self, created: Created, durability: Durability = EVERY, history: Sequence[bytes] = ()
    ) -> JournalWriter:
        """A new journal holding `created`, then `history` (records already encoded,
        `format.encode_record`: what the session logged before its journal existed, a fork's
        replay up to its cut), all durable when this returns: one write and one sync, so the
        file never holds the session without its history. The caller runs the writer's
        `run()` in a task group and `aclose()`s it; `create` does both."""
        path = self.path(created.session_id)
        data = encode_preamble(Header(areasync_version=_areasync_version(), created=time.time()))
        data += encode_record(created) + b"".join(history)
        fd = await anyio.to_thread.run_sync(self._create_file, path, data, limiter=self.limiter)
        return JournalWriter(
            path,
            fd,
            offset=len(data),
            next_index=1 + len(history),
            durability=durability,
            syncer=self.syncer,
        )

    async def reopen_writer(self, session_id: str, durability: Durability = EVERY) -> JournalWriter:
        """Append to an existing live journal after a restart: reads it (`writer.recovered`),
        drops a torn tail, and continues after the last acknowledged record."""
        return await anyio.to_thread.run_sync(
            self._reopen_file, session_id, durability, self.syncer, limiter=self.limiter
        )

    @asynccontextmanager
    async def create(
        self, created: Created, durability: Durability = EVERY, history: Sequence[bytes] = ()
    ) -> AsyncIterator[JournalWriter]:
        """`create_writer` with its `run()` in a task group; leaving drains and closes it."""
        writer = await self.create_writer(created, durability, history)
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

    @property
    def syncer(self) -> Syncer:
        """What syncs this store's journals, the batches due together in one round."""
        if self._syncer is None:
            self._syncer = Syncer(self.limiter, self.stats)
        return self._syncer

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
        self, session_id: str, durability: Durability, syncer: Syncer
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
            syncer=syncer,
            recovered=journal,
        )

    def _sync_directory(self) -> None:
        sync_directory(self.sessions)


def _stray_reason(entry: os.DirEntry[str]) -> str | None:
    """Why `entry` of `sessions/` is not a journal the store reads (None: it is one)."""
    name = entry.name
    if not name.endswith(SUFFIX):
        return f"not a journal: journals are named <session id>{SUFFIX}"
    if not is_session_id(name[: -len(SUFFIX)]):
        return (
            f"its name is not a session id ({SESSION_ID_RULE}), so no session of areasync's "
            "wrote it (a copy, or a renamed journal)"
        )
    try:
        if entry.is_symlink():
            return "a symbolic link: journals are regular files, read without following links"
        if entry.is_dir(follow_symlinks=False):
            return "a directory: journals are regular files"
        if not entry.is_file(follow_symlinks=False):
            return "not a regular file (a FIFO, socket or device): journals are regular files"
    except OSError as exc:  # gone meanwhile, or unreadable metadata
        return f"cannot be examined ({exc.strerror or exc})"
    return None


def _read_regular(path: Path) -> bytes:
    """The bytes of the regular file at `path`, opened without following a symbolic link and
    without blocking; a `JournalStateError` for anything else."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise JournalStateError(
            path, None, "no such journal", "check the session id and the --state-dir"
        ) from None
    except OSError as exc:
        raise JournalStateError(
            path,
            None,
            f"cannot be opened ({exc.strerror or exc}; a symbolic link is never followed)",
            "make it a regular file this user may read, or move it aside",
        ) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise JournalStateError(
                path, None, "not a regular file", "journals are regular files: move it aside"
            )
        with os.fdopen(fd, "rb", closefd=False) as file:
            return file.read()
    except OSError as exc:
        raise JournalStateError(
            path,
            None,
            f"cannot be read ({exc.strerror or exc})",
            "check the disk, or move it aside",
        ) from None
    finally:
        os.close(fd)
