"""Replaying a session from its creation and records, synchronously, with no wall clock.

A session is a pure function of its `Creation` and its `InputRecord`s
(`areasync.simulation.input_records`): ARE's ids, app seeds and wall-clock reads follow its seed and
creation time (`areasync.bridge.determinism`), the clock stands still while a command runs (the
lane holds it), and what the wall decided is logged - how many fast steps ran between two
inputs, each realtime tick's time, lag and clock publication, how far an interrupted control
got. `replay` loads the scenario again and applies the records in order through the same code
the live session ran (each control's synchronous body, each engine step), in one go: no task,
no sleep, no lane. Each record it applies logs itself again; any that differs from the original
stops the replay (`ReplayDivergedError`), so a replay is exact or fails loudly.

A judged session's judge is answered from its `judge` records in order, never asking the
model, and a call that asks something else than the run's did stops the replay; only a call
past the last record (its answer never reached the disk) asks the model
(`areasync.simulation.answers`).

Where a replay stops: after the last record, or at a cut for a fork - before the first record
or step that would start past `until_seq` (the stream has reached it) or run past
`until_time` (simulated seconds). The replayed session is then where the original was at that
point, ready to go on: `restored` is set, a realtime session comes back paused (logged as a
`restore` record, with no stream item: its downtime is no simulated time), leases held are held
again with fresh deadlines.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from areasync.bridge.sandbox.audit import Sandbox
from areasync.engine.clock import VirtualClock, to_us
from areasync.engine.stream import StreamLog
from areasync.engine.ticks import Engine
from areasync.protocol.frames import Mode, StreamItem
from areasync.simulation.answers import RecordedAnswers
from areasync.simulation.errors import ReplayDivergedError
from areasync.simulation.input_records import ABANDONED, InputRecord, LeaseBegin, Steps


class Replayable(Protocol):
    """What a replay needs of the session it replays into (a `Simulation`, which makes its
    replays through this module)."""

    @property
    def log(self) -> StreamLog[StreamItem]: ...
    @property
    def clock(self) -> VirtualClock: ...
    @property
    def engine(self) -> Engine: ...
    @property
    def sandbox(self) -> Sandbox: ...
    @property
    def answers(self) -> RecordedAnswers: ...
    @property
    def ended(self) -> bool: ...
    @property
    def records(self) -> list[InputRecord]: ...
    @property
    def pending_steps(self) -> int: ...

    def flush_records(self) -> list[InputRecord]: ...
    def begin_lease(self, holder: str) -> None: ...
    def replay_fast_step(self) -> None: ...
    def apply_record(self, record: InputRecord, following: InputRecord | None = None) -> None: ...
    def mark_restored(self) -> None: ...


__all__ = ["ABANDONED", "replay_into"]


class _Cut:
    """Where a replay stops early (either bound, both, or neither)."""

    def __init__(self, until_seq: int | None, until_time: float | None) -> None:
        self.until_seq = until_seq
        self.until_us = None if until_time is None else to_us(until_time)

    def reached(self, sim: Replayable, time_us: int) -> bool:
        """Whether something starting at `time_us` now would run past the cut."""
        if self.until_seq is not None and sim.log.seq >= self.until_seq:
            return True
        return self.until_us is not None and time_us > self.until_us


def replay_into(
    sim: Replayable,
    records: Sequence[InputRecord],
    *,
    until_seq: int | None = None,
    until_time: float | None = None,
    start: int = 0,
) -> None:
    """Apply `records` to `sim`, freshly loaded from the same creation (module docstring), or
    from `start` on to a copy of the session taken when it had logged `start` records
    (`areasync.simulation.snapshots`)."""
    cut = _Cut(until_seq, until_time)
    cursor = checked = start
    listener = _turns_taken_on_append(sim, records)
    sim.log.listeners.append(listener)  # the replay's only: removed before it returns
    answers = sim.answers
    answers.replaying = records  # its judge answered from the records (`simulation.answers`)
    try:
        with sim.sandbox.entered():
            while cursor < len(records) and not sim.ended:
                record = records[cursor]
                if isinstance(record, Steps):
                    if not _steps(sim, record.n, cut):
                        break
                    # Logged now, as the run logged them: a stretch of steps is one record,
                    # and the next may be steps too (the run's records were read in between).
                    sim.flush_records()
                    cursor = max(cursor + 1, len(sim.records))
                else:
                    if cut.reached(sim, to_us(record.time)):
                        break
                    following = records[cursor + 1] if cursor + 1 < len(records) else None
                    before = len(sim.records)
                    _position(sim, record)
                    _apply(sim, record, following)
                    if len(sim.records) == before:
                        raise ReplayDivergedError(
                            f"record {cursor} ({record.source} at seq {record.seq}) logged nothing "
                            "when replayed: the replay diverged from the run it replays"
                        )
                    cursor = len(sim.records)
                if answers.diverged is not None:
                    raise answers.diverged
                checked = _check(sim.records, records, checked, past_the_end=answers.overrun)
            # A cut inside a stretch of steps: those run are the fork's own record.
            sim.flush_records()
            _restore(sim)
    finally:
        answers.replaying = None
        sim.log.listeners.remove(listener)


def _turns_taken_on_append(
    sim: Replayable, records: Sequence[InputRecord]
) -> Callable[[int, object], None]:
    """A stream listener that begins, inside the append, the lease an agent began there.

    A live agent takes its turn synchronously when a notification is appended to the stream
    (the service's hub calls it inside the append), so its `lease_begin` can be logged in the
    middle of a jump or a step, at that item's seq and time. The replay has no agent: when the
    stream reaches the seq of the next record still to replay and that record is such a lease,
    at this very time, it is begun here, where the live run began it."""

    def on_append(seq: int, _item: object) -> None:
        index = len(sim.records)
        if index >= len(records):
            return
        record = records[index]
        steps = None
        if isinstance(record, Steps) and index + 1 < len(records):
            # Begun in the middle of fast steps: the live lease's record logged the steps
            # before it first, at this seq.
            steps, record = record, records[index + 1]
        if (
            isinstance(record, LeaseBegin)
            and record.seq == seq
            and to_us(record.time) == sim.clock.now_us()
        ):
            if steps is not None:
                if steps.seq != seq or steps.n != sim.pending_steps:
                    return
                sim.flush_records()
            sim.begin_lease(record.holder)

    return on_append


def _position(sim: Replayable, record: InputRecord) -> None:
    """Set the clock where the record was logged: in realtime the wall had moved it there."""
    t_us, now = to_us(record.time), sim.clock.now_us()
    if t_us == now:
        return
    if sim.clock.mode is Mode.REALTIME and t_us > now and not sim.clock.frozen:
        sim.clock.anchor(t_us, sim.clock.wall())
        return
    raise ReplayDivergedError(
        f"{record.source} was logged at {record.time} s, but the replay is at {now / 1e6} s "
        f"({sim.clock.mode.value} mode): the replay diverged from the run it replays"
    )


def _steps(sim: Replayable, n: int, cut: _Cut) -> bool:
    """Run `n` fast steps (False if the cut came first)."""
    engine = sim.engine
    for _ in range(n):
        due = engine.next_due_us()
        if due is None:
            due = engine.end_us if engine.end_us is not None else sim.clock.now_us()
        if not (engine.finished or engine.stopping) and cut.reached(sim, due):
            return False
        try:
            sim.replay_fast_step()
        except Exception:  # the scenario's code raised: the live driver stopped there too
            continue
    return True


def _check(
    replayed: list[InputRecord],
    records: Sequence[InputRecord],
    start: int,
    *,
    past_the_end: bool = False,
) -> int:
    """Check every record the replay logged since `start` against the run's; the new start.

    One applied record can log several (a lease begun inside an append, a tool call's own
    records, a judge's answers), so each of them is compared, not only the newest.
    `past_the_end`: the replay went on past the run's last record, asking the judge for an
    answer the run never got to disk; what it logged from there is new, not the run's."""
    end = min(len(replayed), len(records)) if past_the_end else len(replayed)
    for index in range(start, end):
        if index >= len(records):
            raise ReplayDivergedError(
                f"the replay logged more records than the run it replays ({replayed[index]})"
            )
        if replayed[index] != records[index]:
            raise ReplayDivergedError(
                f"record {index} replayed as {replayed[index]}, but the run logged "
                f"{records[index]}: the replay diverged from the run it replays"
            )
    return len(replayed)


def _apply(sim: Replayable, record: InputRecord, following: InputRecord | None) -> None:
    """Run what `record` logged (`Simulation.apply_record`); errors it raised live, it raises
    again and they are dropped here, as the live session answered them to their caller."""
    try:
        sim.apply_record(record, following)
    except ReplayDivergedError:
        raise
    except Exception:
        pass


def _restore(sim: Replayable) -> None:
    sim.mark_restored()
