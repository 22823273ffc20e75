"""The journal's bytes: every record reads back as written; a torn last record (the write in
flight at a crash, never acknowledged) is dropped; any other damage refuses the whole journal
with its file and byte offset."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from areasync.journal import (
    JournalCorruptError,
    JournalError,
    JournalVersionError,
    decode_journal,
)
from areasync.journal.format import frame
from tests.journal.support import created, ended, journal_bytes, records, tool_call

NAME = "/state/sessions/s1.journal"


def test_every_record_type_reads_back_equal() -> None:
    items = [created(inline=True), tool_call(0), tool_call(1), ended(1)]
    journal = decode_journal(journal_bytes(items)[0], NAME)
    assert journal.records == items
    assert journal.header is not None and journal.header.areasync_version == "0.1.0"


def test_a_registered_scenario_reads_back_equal() -> None:
    items = [created(inline=False)]
    assert decode_journal(journal_bytes(items)[0], NAME).records == items


def test_an_input_time_reads_back_bit_for_bit() -> None:
    odd = tool_call(0).__class__(time=0.1 + 0.2, seq=0, source="tick", payload={"n": 1})
    journal = decode_journal(journal_bytes([created(), odd])[0], NAME)
    assert journal.inputs[0].time.hex() == (0.1 + 0.2).hex()


def test_a_whole_journal_has_no_torn_bytes() -> None:
    data, _ = journal_bytes(records())
    journal = decode_journal(data, NAME)
    assert (journal.valid_bytes, journal.torn_bytes) == (len(data), 0)


def test_a_torn_last_record_is_dropped_at_every_cut() -> None:
    items = records(3, with_end=True)
    data, offsets = journal_bytes(items)
    start = offsets[-2]
    for cut in range(start, len(data)):
        journal = decode_journal(data[:cut], NAME)
        assert journal.records == items[:-1], cut
        assert (journal.valid_bytes, journal.torn_bytes) == (start, cut - start), cut


def test_a_zero_filled_tail_is_dropped_as_never_written() -> None:
    items = records(2, with_end=False)
    data, _ = journal_bytes(items)
    journal = decode_journal(data + bytes(100), NAME)
    assert journal.records == items
    assert journal.torn_bytes == 100


def test_a_torn_header_leaves_an_empty_journal() -> None:
    data, offsets = journal_bytes([created()])
    for cut in range(1, offsets[3]):
        journal = decode_journal(data[:cut], NAME)
        assert (journal.header, journal.records, journal.torn_bytes) == (None, [], cut), cut


def _expected_offset(offsets: list[int], flipped: int) -> int:
    return max(start for start in offsets if start <= flipped)


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_a_flipped_byte_anywhere_refuses_the_journal_at_its_frame(data: st.DataObject) -> None:
    raw, offsets = journal_bytes(records(3))
    where = data.draw(st.integers(0, len(raw) - 1), label="offset")
    xor = data.draw(st.integers(1, 255), label="xor")
    damaged = bytearray(raw)
    damaged[where] ^= xor
    with pytest.raises(JournalError) as caught:
        decode_journal(bytes(damaged), NAME)
    assert caught.value.offset == _expected_offset(offsets, where)
    assert f"journal {NAME} at byte {caught.value.offset}:" in str(caught.value)


def test_a_corrupt_middle_record_says_where_and_what_to_do() -> None:
    raw, offsets = journal_bytes(records(3))
    damaged = bytearray(raw)
    damaged[offsets[5] + 20] ^= 0xFF  # inside the second input's payload
    with pytest.raises(JournalCorruptError) as caught:
        decode_journal(bytes(damaged), NAME)
    assert str(caught.value) == (
        f"journal {NAME} at byte {offsets[5]}: a record fails its CRC; move the file aside to "
        "start the server without that session (keep it for inspection; it is never changed "
        "or deleted automatically)"
    )


def test_a_corrupt_length_is_refused_not_taken_for_a_torn_tail() -> None:
    raw, offsets = journal_bytes(records(3))
    damaged = bytearray(raw)
    damaged[offsets[4]] = 0x7F  # the first input claims ~2 GB, past the end of the file
    with pytest.raises(JournalCorruptError, match="a frame head fails its CRC"):
        decode_journal(bytes(damaged), NAME)


def test_another_format_version_is_refused_naming_both_versions() -> None:
    raw, _ = journal_bytes(records(1))
    other = raw[:8] + struct.pack(">H", 2) + raw[10:]
    with pytest.raises(JournalVersionError) as caught:
        decode_journal(other, NAME)
    assert caught.value.offset == 8
    assert "format version 2; this areasync reads version 1 only" in str(caught.value)
    assert "with the areasync version that wrote it" in str(caught.value)


def test_a_file_that_is_not_a_journal_is_refused() -> None:
    with pytest.raises(JournalVersionError, match="not an areasync journal"):
        decode_journal(b'{"json": "not a journal"}', NAME)


def test_an_empty_file_is_an_empty_journal() -> None:
    journal = decode_journal(b"", NAME)
    assert (journal.header, journal.records) == (None, [])


def _with_payloads(*payloads: bytes) -> bytes:
    data, _ = journal_bytes([])
    return data + b"".join(frame(payload) for payload in payloads)


def test_a_record_that_passes_its_crc_but_does_not_decode_is_refused() -> None:
    with pytest.raises(JournalCorruptError, match="passes its CRC but does not decode"):
        decode_journal(_with_payloads(b"\xc1"), NAME)


def test_an_inline_scenario_whose_hash_does_not_match_is_refused() -> None:
    data, offsets = journal_bytes([created(inline=True)])
    tampered = data.replace(b'"x"', b'"y"')  # the JSON text changes, its sha256 does not
    payload = tampered[offsets[3] + 12 :]
    with pytest.raises(JournalCorruptError, match="does not match its sha256"):
        decode_journal(data[: offsets[3]] + frame(payload), NAME)


def test_a_journal_that_does_not_start_with_created_is_refused() -> None:
    data, _ = journal_bytes([tool_call(0)])
    with pytest.raises(JournalCorruptError, match="the first record is Input, not Created"):
        decode_journal(data, NAME)


def test_a_record_after_ended_is_refused() -> None:
    data, offsets = journal_bytes([created(), ended(0), tool_call(1)])
    with pytest.raises(JournalCorruptError) as caught:
        decode_journal(data, NAME)
    assert caught.value.offset == offsets[5]
    assert "a record (Input) after Ended" in str(caught.value)
