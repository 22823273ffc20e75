"""`simulation/snapshots.py`'s policy on its own: when a session is due a snapshot, how long it
waits for one, which snapshots it keeps, and which one serves a fork's cut.

Snapshots built by hand, a session's stand-in, a simulation of its own; no server. The forks a
server makes from them: `tests/service/durability/test_fork_snapshots.py`.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import anyio

from areasync import Simulation
from areasync.simulation.lane import CommandLane
from areasync.simulation.snapshots import Snapshot, SnapshotPolicy, Snapshots, keep_taking

TUTORIAL = "scenario_tutorial"


def snapshot(records: int) -> Snapshot:
    return Snapshot(records=records, seq=records * 10, time=float(records), data=b"x", cost_s=0.1)


def test_a_snapshot_is_spaced_by_half_the_fork_aim_of_lane_work() -> None:
    kept = Snapshots(SnapshotPolicy(fork_within_s=1.0))
    assert not kept.spaced(0.49) and kept.spaced(0.5)


def test_the_first_snapshot_waits_for_no_wall_time() -> None:
    assert Snapshots(SnapshotPolicy()).wait_s(0.0) == 0.0


def test_a_snapshot_waits_until_the_newest_is_paid_for_by_its_cost_over_the_overhead() -> None:
    kept = Snapshots(SnapshotPolicy(overhead=0.1))
    kept.add(snapshot(1))  # cost 0.1 s: paid for after 1 s of wall time
    assert math.isclose(kept.wait_s(0.25), 0.75) and kept.wait_s(1.0) == 0.0


def test_no_overhead_allowed_means_no_snapshot_as_the_session_runs() -> None:
    kept = Snapshots(SnapshotPolicy(overhead=0.0))
    assert kept.wait_s(1e9) == math.inf
    kept.add(snapshot(1))  # a fork's, with no cut
    assert kept.wait_s(1e9) == math.inf


def at_work(work_s: float) -> Snapshot:
    return Snapshot(records=int(work_s * 10), seq=0, time=0.0, data=b"x", cost_s=0.1, work_s=work_s)


def test_thinning_drops_the_snapshot_whose_loss_adds_the_least_replay() -> None:
    kept = Snapshots(SnapshotPolicy(max_count=3))
    for work_s in (1.0, 2.0, 2.2, 4.0):
        kept.add(at_work(work_s))
    assert [s.work_s for s in kept.kept] == [1.0, 2.2, 4.0]  # 2.0 leaves 1.0 -> 2.2
    kept.add(at_work(4.1))
    assert kept.kept[-1].work_s == 4.1  # the newest always stays


def test_thinning_keeps_the_first_snapshot_of_a_session_long_to_make() -> None:
    # Without the first (taken at the start), a fork before the second would redo the 2 s
    # making and replay 0.5 s; without the second, it replays at most 1 s from the first.
    kept = Snapshots(SnapshotPolicy(max_count=3), rebuild_s=2.0)
    for work_s in (0.0, 0.5, 1.0, 1.5):
        kept.add(at_work(work_s))
    assert [s.work_s for s in kept.kept] == [0.0, 1.0, 1.5]


def test_a_cut_is_served_by_the_newest_snapshot_strictly_before_its_seq_and_by_its_time() -> None:
    kept = Snapshots(SnapshotPolicy())
    for records in (1, 2, 3):
        kept.add(snapshot(records))
    assert kept.serving(30, None) == snapshot(2)
    assert kept.serving(None, 1.5) == snapshot(1)
    assert kept.serving(10, None) is None


def test_a_fork_with_no_cut_starts_from_the_newest_snapshot_while_the_work_since_costs_less() -> (
    None
):
    kept = Snapshots(SnapshotPolicy())
    kept.add(Snapshot(records=1, seq=10, time=1.0, data=b"x", cost_s=0.4, work_s=2.0))
    source = SimpleNamespace(lane=CommandLane())
    source.lane.work_s = 2.3  # 0.3 s of work to replay: less than a 0.4 s copy
    assert kept.current(source) is kept.kept[-1]  # type: ignore[arg-type]
    source.lane.work_s = 2.5
    assert kept.current(source) is None  # type: ignore[arg-type]


def test_a_session_that_took_half_the_fork_aim_to_make_is_due_a_snapshot_as_it_starts() -> None:
    assert Snapshots(SnapshotPolicy(fork_within_s=1.0), rebuild_s=0.5).spaced(0.0)
    assert not Snapshots(SnapshotPolicy(fork_within_s=1.0), rebuild_s=0.4).spaced(0.0)


async def test_a_realtime_sessions_snapshot_loop_waits_for_work_and_never_spins() -> None:
    sim = Simulation.load(TUTORIAL, mode="realtime", seed=1, created_at=0.0)
    # Long to make: a first snapshot would be due at once, were it taken.
    kept = Snapshots(SnapshotPolicy(), rebuild_s=10.0)
    async with anyio.create_task_group() as tg:
        tg.start_soon(keep_taking, sim, kept)
        for _ in range(2):  # parked at first, and parked again after a turn on the lane
            # A loop that spins never blocks, so this wait would run out.
            with anyio.fail_after(30):
                await anyio.wait_all_tasks_blocked()
            assert sim.lane.on_release is not None and kept.kept == []
            async with sim.lane:
                pass
        tg.cancel_scope.cancel()
    assert kept.kept == []
