"""Which sessions have a tool call under way in this worker, kept where the front can read it
after the worker is killed.

A worker killed because its event loop stopped answering (`front/supervisor.py`) was most
likely held by a tool call its watchdog could not stop (C code holding the interpreter). Its
sessions are restored from their journals, which replay every call: that one would hold the
restoring worker in turn. So before each tool call the worker writes, for each session with a
call under way, its id and how many records its simulation had logged before the call into
`<state dir>/busy/<pid>` (one `pwrite`, padded over what was there before). After killing it,
the front has those calls recorded abandoned by the restore (`service/durability/restore.py`: the
journal's `call_tool` from that count on is followed by an `abandoned` record, which no replay
runs), and their agents are told on their next hello.
"""

from __future__ import annotations

import collections
import os
from pathlib import Path

__all__ = ["BUSY_DIR", "Busy", "read_busy"]

BUSY_DIR = "busy"


class Busy:
    """The sessions with a call under way, mirrored in a file (module docstring)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.path = path
        self._fd = os.open(path, os.O_CREAT | os.O_RDWR | os.O_TRUNC, 0o600)
        self._calls: collections.Counter[str] = collections.Counter()
        self._first: dict[str, int] = {}  # records before the session's earliest call under way
        self._written = 0

    def enter(self, session_id: str, records: int) -> None:
        self._calls[session_id] += 1
        self._first.setdefault(session_id, records)
        self._write()

    def leave(self, session_id: str) -> None:
        self._calls[session_id] -= 1
        if self._calls[session_id] <= 0:
            del self._calls[session_id]
            del self._first[session_id]
        self._write()

    def _write(self) -> None:
        data = "\n".join(f"{sid} {self._first[sid]}" for sid in sorted(self._calls)).encode()
        padded = data + b"\0" * max(0, self._written - len(data))
        os.pwrite(self._fd, padded, 0)
        self._written = len(data)


def read_busy(path: Path) -> dict[str, int]:
    """The sessions a worker's busy file names, each with the records its simulation had
    logged before its call under way (none if it has no file)."""
    try:
        data = path.read_bytes()
    except OSError:
        return {}
    busy = {}
    for line in data.split(b"\0", 1)[0].decode(errors="replace").split("\n"):
        session_id, _, records = line.rpartition(" ")
        if session_id and records.isdigit():
            busy[session_id] = int(records)
    return busy
