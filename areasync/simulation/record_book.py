"""`RecordBook`: a session's records as it logs them, and who hears of each.

What a replay consumes (`areasync.simulation.replay`) is the session's `InputRecord`s in order:
its inputs, with the engine steps the driver ran between them (fast steps counted, one record
for a stretch; realtime ticks one by one). Each part of a simulation logs what it does here,
stamped with the clock's time and the stream's seq at that moment; a journal listens
(`listeners`) and persists each record as it comes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import msgspec

from areasync.engine.clock import VirtualClock
from areasync.engine.stream import StreamLog
from areasync.protocol.frames import StreamItem
from areasync.simulation.input_records import InputRecord, Judge, Steps

_Kind = TypeVar("_Kind", bound=InputRecord)


class RecordBook:
    """The records of one session (module docstring), stamped from its clock and stream."""

    def __init__(self, clock: VirtualClock, log: StreamLog[StreamItem]) -> None:
        self._clock = clock
        self._log = log
        # Everything a replay needs, in order (inputs, leases, steps, realtime ticks).
        self.records: list[InputRecord] = []
        # The external inputs alone (what the session was asked to do).
        self.inputs: list[InputRecord] = []
        # Called with each record as it joins `records` (a journal persists them as they come).
        self.listeners: list[Callable[[InputRecord], None]] = []
        # Fast steps run since the last record, not logged yet (the driver counts them).
        self.pending_steps = 0

    def record(self, kind: type[_Kind], *, internal: bool = False, **fields: Any) -> None:
        """Log an input of this kind, now (`internal`: for the replay only, not in `inputs`)."""
        self.flush_steps()
        record = kind(self._clock.now(), self._log.seq, **fields)
        self._add(record)
        if not internal:
            self.inputs.append(record)

    def record_again(self, record: InputRecord, *, internal: bool = False) -> None:
        """Log `record` again as it was, now (a replay's copy of what the run logged)."""
        self.flush_steps()
        again = msgspec.structs.replace(record, time=self._clock.now(), seq=self._log.seq)
        self._add(again)
        if not internal:
            self.inputs.append(again)

    def log_answer(self, call: str, answer: Any = None, failure: str | None = None) -> None:
        """Log an answer the session got from outside (its judge's: `RecordedAnswers`)."""
        self.record(Judge, call=call, answer=answer, failure=failure)

    def flush_steps(self) -> None:
        """Log the count of fast steps run since the last record, if any (one record for a
        whole stretch: which steps they were follows from the state, not how many)."""
        if self.pending_steps:
            n, self.pending_steps = self.pending_steps, 0
            self._add(Steps(self._clock.now(), self._log.seq, n=n))

    def _add(self, record: InputRecord) -> None:
        self.records.append(record)
        for listener in self.listeners:
            listener(record)
