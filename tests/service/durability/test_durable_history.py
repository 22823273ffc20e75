"""A session's history is durable with its `Created`: nothing of it waits for a later sync.

A session that has logged records before its journal file exists (a fork: its replay up to
the cut) starts its journal with them. Once `SessionJournal.wait_created()` returns (what a
fork's reply waits for), the gate must let every item up to the end of that history through,
whatever a later sync does: in manual mode nothing else moves the session, so an item held
behind a sync the client never causes is held for as long as that sync takes.

Every later sync (`areasync.journal.writer.sync_file`) is held on a threading event until the
test ends: the order of things is forced, never timed.
"""

from __future__ import annotations

import threading
from pathlib import Path

import anyio
import pytest

from areasync.journal import Durability, JournalError, JournalStore
from areasync.service.durability.journal import SessionJournal
from areasync.service.durability.restore import inputs_of
from areasync.simulation.input_records import CallTool
from tests.journal.support import created
from tests.service.support import WAIT, replace_sync

CALL = {"tool": "SystemApp__get_current_time", "args": {}}


async def test_a_journals_history_is_durable_and_shown_once_it_is_created_with_later_syncs_held(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    released = threading.Event()
    replace_sync(monkeypatch, lambda fd: released.wait(WAIT))
    failures: list[JournalError] = []
    store = JournalStore(tmp_path)
    journal = SessionJournal(
        store, created("fork"), Durability.group(0), on_failure=failures.append
    )
    # The fork's replay up to its cut (seq 4): records logged at seqs 1 and 3.
    journal.record(CallTool(0.0, 1, **CALL))
    journal.record(CallTool(1.0, 3, **CALL))
    async with anyio.create_task_group() as tg:
        tg.start_soon(journal.run)
        try:
            with anyio.fail_after(WAIT):
                await journal.wait_created()
            assert journal.limit() is None  # every item so far may be shown
            assert journal.durable == journal.appended == 3
            on_disk = await anyio.to_thread.run_sync(store.read, "fork")
            assert inputs_of(on_disk) == [CallTool(0.0, 1, **CALL), CallTool(1.0, 3, **CALL)]
            # What the session logs from now on gates as ever: behind its own sync.
            journal.record(CallTool(2.0, 4, **CALL))
            assert journal.limit() == 4
        finally:
            released.set()
            journal.end(reason="done", state="ended", seq=5)
    assert not failures
    assert len((await anyio.to_thread.run_sync(store.read, "fork")).inputs) == 3
