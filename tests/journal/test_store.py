"""The store: one journal file per session; a bad one never hides the others; retention."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from areasync.journal import (
    Durability,
    JournalCorruptError,
    JournalStateError,
    JournalStore,
)
from areasync.journal.format import encode_record
from tests.journal.support import created, ended, tool_call


async def test_a_created_journal_reads_back_its_records(tmp_path: Path) -> None:
    store = JournalStore(tmp_path)
    async with store.create(created("s1")) as writer:
        for seq in range(3):
            await writer.append(tool_call(seq))
    journal = store.read("s1")
    assert journal.records == [created("s1"), tool_call(0), tool_call(1), tool_call(2)]
    assert store.path("s1") == tmp_path / "sessions" / "s1.journal"


async def test_a_journal_created_with_a_history_holds_it_and_appends_after_it(
    tmp_path: Path,
) -> None:
    store = JournalStore(tmp_path)
    history = [encode_record(tool_call(0)), encode_record(tool_call(1))]
    async with store.create(created("s1"), Durability.group(0), history) as writer:
        assert store.read("s1").inputs == [tool_call(0), tool_call(1)]  # durable with the file
        ticket = writer.append(tool_call(2))
        await ticket
    assert ticket.index == 3
    assert store.read("s1").inputs == [tool_call(0), tool_call(1), tool_call(2)]


async def test_tickets_number_records_in_append_order(tmp_path: Path) -> None:
    async with JournalStore(tmp_path).create(created(), Durability.group(0)) as writer:
        tickets = [writer.append(tool_call(seq)) for seq in range(5)]
        for ticket in tickets:
            await ticket
    assert [ticket.index for ticket in tickets] == [1, 2, 3, 4, 5]


async def test_the_token_is_checked_against_its_salted_hash(tmp_path: Path) -> None:
    store = JournalStore(tmp_path)
    async with store.create(created("s1")):
        pass
    record = store.read("s1").created
    assert record is not None
    assert record.token_matches("agent", "agent-token")
    assert not record.token_matches("agent", "agent-tokeN")
    assert not record.token_matches("user", "agent-token")


async def test_creating_an_existing_journal_is_refused(tmp_path: Path) -> None:
    store = JournalStore(tmp_path)
    async with store.create(created("s1")):
        pass
    with pytest.raises(JournalStateError, match="a journal for this session id exists"):
        await store.create_writer(created("s1"))


def test_a_session_id_that_cannot_be_a_file_name_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cannot name a journal file"):
        JournalStore(tmp_path).path("../escape")


async def test_reopening_continues_after_the_last_record(tmp_path: Path) -> None:
    store = JournalStore(tmp_path)
    async with store.create(created("s1")) as writer:
        await writer.append(tool_call(0))
    async with store.reopen("s1") as writer:
        assert writer.recovered is not None and writer.recovered.inputs == [tool_call(0)]
        ticket = writer.append(tool_call(1))
        await ticket
    assert ticket.index == 2
    assert store.read("s1").inputs == [tool_call(0), tool_call(1)]


async def test_reopening_drops_a_torn_tail_before_appending(tmp_path: Path) -> None:
    store = JournalStore(tmp_path)
    async with store.create(created("s1")) as writer:
        await writer.append(tool_call(0))
    whole = store.path("s1").stat().st_size
    with store.path("s1").open("ab") as file:
        file.write(b"\x00\x00\x01\x00\x12")  # the start of a frame a crash cut short
    async with store.reopen("s1") as writer:
        assert writer.recovered is not None and writer.recovered.torn_bytes == 5
        await writer.append(tool_call(1))
    journal = store.read("s1")
    assert journal.inputs == [tool_call(0), tool_call(1)]
    assert journal.torn_bytes == 0 and journal.valid_bytes > whole


async def test_reopening_an_ended_journal_is_refused(tmp_path: Path) -> None:
    store = JournalStore(tmp_path)
    async with store.create(created("s1")) as writer:
        await writer.append(ended(0))
    with pytest.raises(JournalStateError, match="the session has ended"):
        await store.reopen_writer("s1")


async def test_a_store_with_one_bad_journal_still_reads_the_others(tmp_path: Path) -> None:
    store = JournalStore(tmp_path)
    for sid in ("a", "b", "c"):
        async with store.create(created(sid)) as writer:
            await writer.append(tool_call(0))
    damaged = bytearray(store.path("b").read_bytes())
    damaged[-3] ^= 0x01
    store.path("b").write_bytes(bytes(damaged))
    scan = store.scan()
    assert store.session_ids() == ["a", "b", "c"]
    assert sorted(scan.live) == ["a", "c"]
    assert isinstance(scan.refused["b"], JournalCorruptError)
    assert str(store.path("b")) in str(scan.refused["b"])
    assert store.read("c").inputs == [tool_call(0)]


async def test_retention_removes_only_sessions_that_ended_long_enough_ago(
    tmp_path: Path,
) -> None:
    store = JournalStore(tmp_path)
    now = time.time() + 7200  # every file's mtime is an hour before the cutoff
    for sid, end in (("old", ended(0, wall=now - 5000)), ("recent", ended(0, wall=now - 60))):
        async with store.create(created(sid)) as writer:
            await writer.append(end)
    async with store.create(created("live")) as writer:
        await writer.append(tool_call(0))
    store.path("bad").write_bytes(b"garbage")
    os.utime(store.path("bad"), (0, 0))
    assert store.remove_ended_older_than(3600, now=now) == ["old"]
    assert store.session_ids() == ["bad", "live", "recent"]


async def test_retention_skips_a_journal_written_since_the_cutoff(tmp_path: Path) -> None:
    store = JournalStore(tmp_path)
    async with store.create(created("s1")) as writer:
        await writer.append(ended(0, wall=0.0))
    assert store.remove_ended_older_than(3600) == []


async def test_removing_a_journal_unlists_it(tmp_path: Path) -> None:
    store = JournalStore(tmp_path)
    async with store.create(created("s1")):
        pass
    store.remove("s1")
    assert store.session_ids() == []


def test_reading_a_missing_journal_says_so(tmp_path: Path) -> None:
    with pytest.raises(JournalStateError, match="no such journal; check the session id"):
        JournalStore(tmp_path).read("nope")
