"""The journal's errors: each says which file, at which byte, what was wrong and what to do.

A journal is refused whole or not at all (a session is never half-restored), so every way a
journal can be unreadable is an exception here rather than a partial result. The message is for
an operator reading a server's start-up log: the path, the byte offset, the problem, and the
action that gets the server going again.
"""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "JournalCorruptError",
    "JournalError",
    "JournalStateError",
    "JournalVersionError",
    "JournalWriteError",
]

MOVE_ASIDE = (
    "move the file aside to start the server without that session "
    "(keep it for inspection; it is never changed or deleted automatically)"
)


class JournalError(Exception):
    """A journal that cannot be read or written; `str()` is the operator's message."""

    def __init__(self, path: str | Path, offset: int | None, problem: str, remedy: str) -> None:
        self.path = str(path)
        self.offset = offset
        self.problem = problem
        self.remedy = remedy
        where = f" at byte {offset}" if offset is not None else ""
        super().__init__(f"journal {self.path}{where}: {problem}; {remedy}")


class JournalCorruptError(JournalError):
    """Bytes that were acknowledged as durable no longer read back: a CRC mismatch, a frame
    head that fails its own check, an undecodable record, records out of their order."""

    def __init__(self, path: str | Path, offset: int, problem: str) -> None:
        super().__init__(path, offset, problem, MOVE_ASIDE)


class JournalVersionError(JournalError):
    """Not a journal at all, or one in a format version this areasync does not read."""

    def __init__(self, path: str | Path, offset: int, problem: str, remedy: str = "") -> None:
        super().__init__(path, offset, problem, remedy or MOVE_ASIDE)


class JournalWriteError(JournalError):
    """The disk refused a write or an fsync: the records not yet durable are lost, and the
    writer is broken (no later record may be acknowledged, because after a failed fsync the
    kernel may have dropped the dirty pages and a retry would report success falsely)."""

    def __init__(self, path: str | Path, offset: int | None, problem: str) -> None:
        super().__init__(
            path,
            offset,
            problem,
            "the session can no longer be made durable: end it, free or fix the disk, and "
            "restart the server (the journal keeps every record acknowledged before the failure)",
        )


class JournalRecordError(JournalError):
    """A record the journal's format cannot hold (msgpack refused to encode it): nothing was
    appended, and the writer goes on. The service validates what its records carry, so this
    is a bug, reported where it happened rather than a broken server."""

    def __init__(self, path: str | Path, problem: str) -> None:
        super().__init__(
            path,
            None,
            problem,
            "the session cannot be journaled past this record: end it, and report the request "
            "that made the record",
        )


class JournalStateError(JournalError):
    """A request that does not fit the journal's state: appending to a closed or ended journal,
    creating one that exists, reopening one that does not."""
