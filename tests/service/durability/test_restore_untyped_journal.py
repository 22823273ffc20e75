"""A journal whose inputs were written as a source and an untyped payload (the format's first
form) is restored as ever: each old `Input` is read into its typed record, and the session is
replayed from them, record for record.

The fixture, `fixtures/untyped_inputs.journal`, was written by the code of that form: ARE's
`scenario_tutorial` in manual mode, driven through a user message, jumps (by, to, exclusive,
next event), a tool call under a lease, ticks, pause and resume, speed and mode changes, and
the exit of its `async with` block.
"""

from __future__ import annotations

from pathlib import Path

from areasync.journal import Input, decode_journal
from areasync.service.durability.restore import rebuild

FIXTURE = Path(__file__).parent.parent / "fixtures" / "untyped_inputs.journal"


def test_a_journal_written_with_untyped_inputs_is_restored_by_a_replay() -> None:
    journal = decode_journal(FIXTURE.read_bytes(), FIXTURE.name)
    assert journal.created is not None
    old = [record for record in journal.records if isinstance(record, Input)]
    sim, on_disk = rebuild(journal.created, journal)
    try:
        assert on_disk == len(old) == 16
        assert [(r.time, r.seq, r.source) for r in sim.records] == [
            (r.time, r.seq, r.source) for r in old
        ]
        assert sim.ended
    finally:
        sim.sandbox.remove_directories()
