"""`RecordedAnswers`: the answers a session got from outside (its judge's LLM), as records.

Why: a judged session (`areasync.bridge.judge.llm`) asks an LLM from inside its ticks and its final
validation, and the model's answers are the one input no other record decides. A live session
logs each answer as a `judge` record (`{"call": digest, "answer": ...}` or a `failure`) at the
moment it comes back - in the tick, on the event loop, its lane held - so the record sits among
the others exactly where the answer took effect, and the durability gate holds everything it
caused (items, replies, the end and its validation) until it is on disk.

A replay (`areasync.simulation.replay`) sets `replaying` to the records it applies; each judge
call then takes the next record instead of asking the model: it must be that call's answer
(same digest), else the replay stops with `ReplayDivergedError`. The agent's lease records that
came while the live call was in flight (the event loop served its connection meanwhile) lie
between the call's start and its answer: they are applied first, where they came. A replay that
asks past its last record (the crash came while a call was in flight, its answer never on disk,
so no client saw what it caused) asks the model again from there (`overrun`), and the answer is
logged as a live one would be.

ARE's judge catches what its calls raise (a failed call is a failed validation), so a
divergence is also kept in `diverged`, which the replay checks after each record.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from areasync.simulation.errors import ReplayDivergedError
from areasync.simulation.input_records import InputRecord, Judge, LeaseBegin, LeaseEnd
from areasync.simulation.record_book import RecordBook

# The records a client may log while a judge call is in flight (outside the session's lane)
# are its leases: `LeaseBegin`, `LeaseEnd`.


class Leasing(Protocol):
    """The session's leases, as a replay begins and ends them (`LeaseKeeper`)."""

    def begin(self, holder: str) -> None: ...

    def end(self, holder: str) -> None: ...


class RecordedAnswers:
    """A session's answers from outside, logged live and given back on replay (module doc),
    in the session's `book`; `leases`, which the records in flight with a call begin and end."""

    def __init__(self, book: RecordBook, leases: Leasing) -> None:
        self._book = book
        self._leases = leases
        self.replaying: Sequence[InputRecord] | None = None
        self.overrun = False  # the replay asked past its records: the model was asked again
        self.diverged: ReplayDivergedError | None = None

    def recorded(self, call: str) -> dict[str, Any] | None:
        """The next record's answer to `call` while replaying; None when live (or past the
        records: ask the model). Raises `ReplayDivergedError` when the run asked otherwise."""
        records = self.replaying
        if records is None:
            return None
        logged = self._book.records
        self._book.flush_steps()  # where the live call logged the steps before it
        while len(logged) < len(records) and isinstance(
            records[len(logged)], LeaseBegin | LeaseEnd
        ):
            self._apply_in_flight(records[len(logged)])
        index = len(logged)
        if index >= len(records):
            self.overrun = True
            return None
        record = records[index]
        if not isinstance(record, Judge) or record.call != call:
            what = (
                "a judge call asking something else"
                if isinstance(record, Judge)
                else f"no judge call ({record.source} at seq {record.seq})"
            )
            self.diverged = ReplayDivergedError(
                f"record {index}: the replay asked the judge (call {call[:12]}), but the run "
                f"logged {what} there: the replay diverged from the run it replays (a different "
                "scenario, judge model or prompt than the session's)"
            )
            raise self.diverged
        payload = _payload(record)
        self.answered(payload)
        return payload

    def answered(self, payload: dict[str, Any]) -> None:
        """Log the answer (or failure) to a call, where it takes effect."""
        self._book.log_answer(payload["call"], payload.get("answer"), payload.get("failure"))

    def _apply_in_flight(self, record: InputRecord) -> None:
        logged = self._book.records
        before = len(logged)
        if isinstance(record, LeaseBegin):
            self._leases.begin(record.holder)
        elif isinstance(record, LeaseEnd):
            self._leases.end(record.holder)
        if len(logged) == before:
            self.diverged = ReplayDivergedError(
                f"record {before} ({record.source} at seq {record.seq}), logged while a judge "
                "call was in flight, logged nothing when replayed: the replay diverged from the "
                "run it replays"
            )
            raise self.diverged


def _payload(record: Judge) -> dict[str, Any]:
    """The judge's answer as `areasync.bridge.judge.llm` takes it: `{"call", "answer"}` or
    `{"call", "failure"}`."""
    if record.failure is not None:
        return {"call": record.call, "failure": record.failure}
    return {"call": record.call, "answer": record.answer}
