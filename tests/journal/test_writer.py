"""Durable appends: a ticket completes only after the sync that covers its record; a failing
disk fails every pending ticket with a clear error and breaks the writer for good."""

from __future__ import annotations

import errno
import os
import threading
from collections.abc import Callable
from pathlib import Path

import anyio
import anyio.abc
import anyio.to_thread
import pytest

from areasync.journal import (
    Durability,
    JournalStateError,
    JournalStore,
    JournalWriteError,
    JournalWriter,
)
from areasync.journal import writer as journal_writer
from tests.journal.support import created, tool_call


class GatedSync:
    """`os.fdatasync` that waits for the test's go-ahead, counting calls."""

    def __init__(self, real: Callable[[int], None]) -> None:
        self.real = real
        self.entered = threading.Event()
        self.release = threading.Event()
        self.calls = 0

    def __call__(self, fd: int) -> None:
        self.calls += 1
        self.entered.set()
        self.release.wait(30)
        self.real(fd)


@pytest.fixture
def gated(monkeypatch: pytest.MonkeyPatch) -> GatedSync:
    gate = GatedSync(os.fdatasync)
    monkeypatch.setattr(os, "fdatasync", gate)
    return gate


async def test_group_commit_acknowledges_nothing_before_its_fsync(
    tmp_path: Path, gated: GatedSync
) -> None:
    async with JournalStore(tmp_path).create(created(), Durability.group(5)) as writer:
        tickets = [writer.append(tool_call(seq)) for seq in range(5)]
        await anyio.to_thread.run_sync(gated.entered.wait, 30)
        assert [ticket.done for ticket in tickets] == [False] * 5
        gated.release.set()
        for ticket in tickets:
            await ticket
    assert gated.calls == 1


async def test_every_syncs_each_record_before_acknowledging_it(
    tmp_path: Path, gated: GatedSync
) -> None:
    async with JournalStore(tmp_path).create(created(), Durability.every()) as writer:
        tickets = [writer.append(tool_call(seq)) for seq in range(3)]
        await anyio.to_thread.run_sync(gated.entered.wait, 30)
        assert not any(ticket.done for ticket in tickets)
        gated.release.set()
        for ticket in tickets:
            await ticket
    assert gated.calls == 3


async def test_records_appended_during_a_sync_go_in_the_next_group(
    tmp_path: Path, gated: GatedSync
) -> None:
    async with JournalStore(tmp_path).create(created(), Durability.group(0)) as writer:
        first = writer.append(tool_call(0))
        await anyio.to_thread.run_sync(gated.entered.wait, 30)
        later = [writer.append(tool_call(seq)) for seq in (1, 2)]
        gated.release.set()
        await first
        for ticket in later:
            await ticket
    assert gated.calls == 2


def _eio(fd: int) -> None:
    raise OSError(errno.EIO, os.strerror(errno.EIO))


async def test_a_failing_sync_fails_every_pending_ticket_clearly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = JournalStore(tmp_path)
    monkeypatch.setattr(os, "fdatasync", _eio)
    async with store.create(created(), Durability.every()) as writer:
        tickets = [writer.append(tool_call(seq)) for seq in range(3)]
        for ticket in tickets:
            with pytest.raises(JournalWriteError) as caught:
                await ticket
            message = str(caught.value)
            assert str(store.path("s1")) in message
            assert "Input/output error (errno 5)" in message
            assert "end it, free or fix the disk, and restart the server" in message


async def test_no_record_is_acknowledged_after_a_failed_sync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = os.fdatasync
    monkeypatch.setattr(os, "fdatasync", _eio)
    async with JournalStore(tmp_path).create(created()) as writer:
        with pytest.raises(JournalWriteError):
            await writer.append(tool_call(0))
        monkeypatch.setattr(os, "fdatasync", real)  # the disk "recovers": too late
        with pytest.raises(JournalWriteError):
            writer.append(tool_call(1))
        assert writer.broken is not None


async def test_a_full_disk_fails_the_pending_tickets(tmp_path: Path) -> None:
    async with JournalStore(tmp_path).create(created()) as writer:
        full = os.open("/dev/full", os.O_WRONLY)
        os.dup2(full, writer.fileno())  # the journal's fd now writes to a full device
        os.close(full)
        ticket = writer.append(tool_call(0))
        with pytest.raises(JournalWriteError, match=r"No space left on device \(errno 28\)"):
            await ticket


async def test_leaving_the_writer_makes_queued_records_durable(tmp_path: Path) -> None:
    store = JournalStore(tmp_path)
    async with store.create(created(), Durability.group(50)) as writer:
        tickets = [writer.append(tool_call(seq)) for seq in range(4)]
    assert all(ticket.done and ticket.error is None for ticket in tickets)
    assert len(store.read("s1").inputs) == 4


async def test_appending_after_close_is_refused(tmp_path: Path) -> None:
    async with JournalStore(tmp_path).create(created()) as writer:
        writer.close()
        with pytest.raises(JournalStateError, match="append after the journal was closed"):
            writer.append(tool_call(0))


async def test_a_cancelled_writer_fails_its_queued_records(tmp_path: Path) -> None:
    writer = await JournalStore(tmp_path).create_writer(created(), Durability.group(10_000))
    ticket = writer.append(tool_call(0))
    async with anyio.create_task_group() as tg:
        tg.start_soon(writer.run)
        await anyio.wait_all_tasks_blocked()  # the writer waits out its window
        tg.cancel_scope.cancel()
    with pytest.raises(JournalWriteError, match="the writer stopped before these records"):
        await ticket
    assert writer.fileno() == -1


def test_a_negative_group_window_is_refused() -> None:
    with pytest.raises(ValueError, match="a duration in ms >= 0"):
        Durability.group(-1)


# -- group commit across journals (`Syncer`) ---------------------------------------------------


async def _writers(store: JournalStore, n: int, tg: anyio.abc.TaskGroup) -> list[JournalWriter]:
    """`n` journals of `store`, their `run()` in `tg`."""
    writers = [await store.create_writer(created(f"s{i}"), Durability.group(0)) for i in range(n)]
    for writer in writers:
        tg.start_soon(writer.run)
    return writers


async def test_journals_due_in_the_same_turn_share_one_thread_round(tmp_path: Path) -> None:
    store = JournalStore(tmp_path)
    async with anyio.create_task_group() as tg:
        writers = await _writers(store, 8, tg)
        await anyio.wait_all_tasks_blocked()
        tickets = [writer.append(tool_call(0)) for writer in writers]
        for ticket in tickets:
            await ticket
        assert (store.stats.records, store.stats.syncs, store.stats.rounds) == (8, 8, 1)
        for writer in writers:
            writer.close()


async def test_a_shared_round_acknowledges_each_record_only_after_its_own_file_is_synced(
    tmp_path: Path, gated: GatedSync, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[int] = []
    monkeypatch.setattr(os, "fdatasync", lambda fd: (gated(fd), synced.append(fd)))
    store = JournalStore(tmp_path)
    async with anyio.create_task_group() as tg:
        writers = await _writers(store, 3, tg)
        await anyio.wait_all_tasks_blocked()
        tickets = [writer.append(tool_call(0)) for writer in writers]
        await anyio.to_thread.run_sync(gated.entered.wait, 30)
        assert [ticket.done for ticket in tickets] == [False] * 3
        gated.release.set()
        for writer, ticket in zip(writers, tickets, strict=True):
            await ticket
            assert writer.fileno() in synced
        for writer in writers:
            writer.close()
    assert [len(store.read(f"s{i}").inputs) for i in range(3)] == [1, 1, 1]


async def test_a_failed_sync_in_a_shared_round_fails_only_its_own_journal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    failing: set[int] = set()

    def sync(fd: int) -> None:
        if fd in failing:
            raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(journal_writer, "sync_file", sync)
    store = JournalStore(tmp_path)
    async with anyio.create_task_group() as tg:
        writers = await _writers(store, 3, tg)
        failing.add(writers[1].fileno())
        await anyio.wait_all_tasks_blocked()
        tickets = [writer.append(tool_call(0)) for writer in writers]
        await tickets[0]
        with pytest.raises(JournalWriteError, match=r"Input/output error \(errno 5\)"):
            await tickets[1]
        await tickets[2]
        assert store.stats.rounds == 1
        for writer in writers:
            writer.close()


async def test_a_writer_cancelled_during_a_shared_round_keeps_its_file_until_the_round_ends(
    tmp_path: Path, gated: GatedSync
) -> None:
    store = JournalStore(tmp_path)
    async with anyio.create_task_group() as tg:
        writers = await _writers(store, 2, tg)
        cancelled = await store.create_writer(created("cancelled"), Durability.group(0))
        scope = anyio.CancelScope()
        tg.start_soon(_cancellable, cancelled, scope)
        await anyio.wait_all_tasks_blocked()
        tickets = [w.append(tool_call(0)) for w in (*writers, cancelled)]
        await anyio.to_thread.run_sync(gated.entered.wait, 30)
        scope.cancel()
        await anyio.wait_all_tasks_blocked()
        assert cancelled.fileno() != -1  # the round's thread may still write to it
        gated.release.set()
        await tickets[0]
        await tickets[1]
        await anyio.wait_all_tasks_blocked()
        assert cancelled.fileno() == -1
        assert tickets[2].done  # durable, or "the writer stopped": not known to be durable
        for writer in writers:
            writer.close()


async def _cancellable(writer: JournalWriter, scope: anyio.CancelScope) -> None:
    with scope:
        await writer.run()
