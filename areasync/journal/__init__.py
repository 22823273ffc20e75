"""Session journals: the durable record a session writes and a restarted server reads.

A storage layer with no knowledge of ARE or of the service (it imports nothing else from
areasync): it stores typed records (`Created`, `Recorded`, `Ended`) and gets them back in order, or
refuses the whole journal with a `JournalError` that names the file, the byte offset, the problem
and what to do. `format.py` is the bytes (sans-I/O), `writer.py` the durable appends,
`store.py` the directory.

Why one append-only file per session (`DIR/sessions/<session_id>.journal`) rather than SQLite in
WAL mode. Both give a durable append in one sync, and both are fast enough: measured side by
side (`bench/journal.py`, "store_choice", same directory, same thread; the figures are in
docs/topics/performance.md, "The journal store"), the file is the faster of the two. What
decides is everything around the append:

- Crash semantics are ours to state and test: the only possible damage is a torn last frame,
  which was never acknowledged; the decoder drops it and refuses anything else. With SQLite
  they are SQLite's (good, but a corrupt page loses the whole database, every session at once).
- One journal per session isolates damage: a bad file refuses one session, and the others
  restore (`JournalStore.scan`). One database shares one fate and one writer lock, so group
  commit across sessions is SQLite's single-writer queue rather than independent fsyncs.
- Retention is `unlink`; SQLite needs DELETE plus VACUUM (or a growing file) for the same.
- A session's journal is one file that can be copied, inspected, moved aside or shipped to
  another machine; a shared directory serves a cluster later, where SQLite's locking over a
  network filesystem is documented as unsafe.
- No new dependency and no schema: msgspec already frames the protocol.

What SQLite would give for free, queries across sessions, is not needed: a restart reads every
live journal whole, in order.
"""

from __future__ import annotations

from areasync.journal.entries import (
    Created,
    Ended,
    Header,
    Input,
    Record,
    Recorded,
    hash_token,
    new_salt,
)
from areasync.journal.errors import (
    JournalCorruptError,
    JournalError,
    JournalRecordError,
    JournalStateError,
    JournalVersionError,
    JournalWriteError,
)
from areasync.journal.format import (
    FORMAT_VERSION,
    Journal,
    JournalDecoder,
    decode_journal,
    encode_record,
)
from areasync.journal.sources import (
    DatasetTask,
    InlineScenario,
    RegisteredScenario,
    ResolvedScenario,
    ScenarioFile,
    ScenarioSource,
)
from areasync.journal.store import (
    MAX_SESSION_ID_CHARS,
    SESSION_ID_RULE,
    JournalStore,
    StoreScan,
    Stray,
    is_session_id,
)
from areasync.journal.writer import (
    EVERY,
    Durability,
    JournalWriter,
    SyncStats,
    Ticket,
    encode_or_refuse,
)

__all__ = [
    "EVERY",
    "FORMAT_VERSION",
    "MAX_SESSION_ID_CHARS",
    "SESSION_ID_RULE",
    "Created",
    "DatasetTask",
    "Durability",
    "Ended",
    "Header",
    "InlineScenario",
    "Input",
    "Journal",
    "JournalCorruptError",
    "JournalDecoder",
    "JournalError",
    "JournalRecordError",
    "JournalStateError",
    "JournalStore",
    "JournalVersionError",
    "JournalWriteError",
    "JournalWriter",
    "Record",
    "Recorded",
    "RegisteredScenario",
    "ResolvedScenario",
    "ScenarioFile",
    "ScenarioSource",
    "StoreScan",
    "Stray",
    "SyncStats",
    "Ticket",
    "decode_journal",
    "encode_or_refuse",
    "encode_record",
    "hash_token",
    "is_session_id",
    "new_salt",
]
