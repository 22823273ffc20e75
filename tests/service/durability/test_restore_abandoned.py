"""A call under way when its worker was killed is recorded abandoned by the restore
(`service/durability/restore.py`, `abandoned_call`), only when the journal ends with it."""

from __future__ import annotations

from areasync.service.durability.restore import abandoned_call
from areasync.simulation.input_records import ABANDONED, CallTool, InputRecord, Steps, Tick


def _record(source: str, seq: int = 3) -> InputRecord:
    if source == "call_tool":
        return CallTool(1.0, seq, tool="T", args={})
    return Tick(1.0, seq, n=1) if source == "tick" else Steps(1.0, seq, n=1)


def test_a_journal_ending_with_the_call_under_way_gets_it_recorded_abandoned() -> None:
    records = [_record("tick"), _record("steps"), _record("call_tool")]
    [abandoned] = abandoned_call(records, 1)
    assert abandoned.source == ABANDONED
    assert (abandoned.time, abandoned.seq) == (records[-1].time, records[-1].seq)


def test_a_call_that_never_reached_the_journal_abandons_nothing() -> None:
    # The call before the one under way ended the journal: it was answered, so it stays.
    records = [_record("tick"), _record("call_tool")]
    assert abandoned_call(records, 2) == []


def test_a_journal_ending_with_another_record_abandons_nothing() -> None:
    assert abandoned_call([_record("call_tool"), _record("tick")], 0) == []
