"""A replayed session goes on logging exactly as the run it replays would have: its records,
continued, replay again to the same run (a journal restored, continued and restored again).

The fast steps here are run one by one through the same methods the driver and a replay run
(`replay_fast_step`, `apply_record`), with no driver: how many ran before a record is the
point, and a driver's batches follow the wall."""

from __future__ import annotations

from collections.abc import Sequence

from areasync import Simulation
from areasync.simulation.input_records import CallTool, InputRecord
from tests.scenarios import timeline
from tests.simulation.test_replay import frames

TIMES = (1.0, 2.0, 4.0, 8.0)


def fast_steps(sim: Simulation, n: int) -> None:
    with sim.sandbox.entered():
        for _ in range(n):
            sim.replay_fast_step()


def mark(sim: Simulation, label: str) -> None:
    with sim.sandbox.entered():
        sim.apply_record(
            CallTool(sim.now, sim.log.seq, tool="TimelineApp__mark", args={"label": label})
        )


def loaded() -> Simulation:
    return Simulation.load(timeline(*TIMES, duration=60.0), mode="fast", seed=4, created_at=50.0)


def restored(journal: Sequence[InputRecord]) -> tuple[Simulation, list[InputRecord]]:
    """`journal` replayed, and the journal as a restart goes on writing it (what the replay
    logged past the records on disk, then every record as it comes; `Journals.reattach`)."""
    creation = loaded().creation
    assert creation is not None
    sim = Simulation.replay(timeline(*TIMES, duration=60.0), creation, journal)
    written = list(journal) + sim.records[len(journal) :]
    sim.record_listeners.append(written.append)
    return sim, written


def test_a_replay_whose_last_record_is_fast_steps_has_logged_them_when_it_returns() -> None:
    live = loaded()
    fast_steps(live, 2)
    records = list(live.flush_records())
    assert records[-1].source == "steps"
    again, _ = restored(records)
    assert again.records == records


def test_a_restored_session_continued_restores_again_to_the_uninterrupted_run() -> None:
    live = loaded()
    fast_steps(live, 2)
    first, journal = restored(live.flush_records())
    fast_steps(live, 2)
    fast_steps(first, 2)
    mark(live, "after")
    mark(first, "after")
    second, _ = restored(journal)
    assert journal == live.flush_records()
    assert frames(second) == frames(live)
    assert second.records == live.records
