"""Snapshots of a session: a fork that starts from a copy of the run instead of its start.

Why: a fork (`fork_session`) replays the source's records from the scenario's load
(`areasync.simulation.replay`), which costs what the run cost: seconds for 10,000 events. A
snapshot is the whole session copied at a point of its run (`areasync.bridge.state_copy`);
a fork at a cut thaws the newest snapshot before the cut and replays only the records logged
after it, through the same `replay_into` (so it is checked record by record as any replay).

Where a snapshot stands is a boundary between records: it is taken holding the session's lane,
after its pending fast steps are logged (`flush_records`, as a fork or a suspension does: the
replay takes two `steps` records in a row as two). It serves a cut if the replay from the
scenario's load would pass through it on the way to the cut: its seq below `until_seq`, its
time not past `until_time`; every boundary before it was then at or below both.

When: `SnapshotPolicy` - once the session's lane has done half of `fork_within_s` (1 s) of
work since the newest snapshot, so that a fork from it (a thaw, then a replay of that work)
takes about `fork_within_s` (before the first, a fork makes the session again, then replays:
one that took that long to make, a 10,000-event import say, takes its first as it starts);
and not before the newest has been paid for by `1 / overhead` (10) times its cost in wall
time, so that a session never gives more than a tenth of its time to snapshots. A fast run
computes without a pause and is held to the overhead: its snapshots are sparse, and a fork
at a cut far from one replays longer. A session that waits between its commands (for its
agent's turn, for a client's controls) takes them as densely as the fork aim asks, while it
waits. A session keeps a bounded number and bytes (`Snapshots.add` drops the one whose loss
adds the least replay, never the newest), and keeps them once it has ended. Realtime sessions
take none: their records are what the wall decided, and a fork of one replays them all.

A fork with no cut thaws the newest snapshot and replays what the session did since, if that
costs less than a new copy (`Snapshots.current`: a session parked at a point to reset an
episode to has done nothing since); else it takes a snapshot then, and replays nothing.

What it costs (bench/replay.py, bench/fork.py; the figures are in docs/topics/performance.md,
"Replay and fork"): megabytes a copy and a share of the session's lane (taken back out of its
work: a copy is no work of the session's); the copy runs in a worker thread, but pickle holds
the GIL, so the event loop goes unserved for a while meanwhile. A fork thaws one instead of
loading the scenario again.

A thawed copy is made a session of its own (`thawed`): a new lane, fresh wake-up and end
events, the clock held once as after a load (the driver lets it go), lease deadlines counted
from now, waits whose callers are gone counted as unawaited (as a replay counts them), its
sandbox's roots the new directories its file systems were written into.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import anyio
import anyio.to_thread

from areasync.bridge.state_copy import StateCopyError, freeze, thaw
from areasync.protocol.frames import Mode
from areasync.simulation.input_records import InputRecord
from areasync.simulation.lane import CommandLane
from areasync.simulation.replay import replay_into
from areasync.simulation.simulation import Simulation

__all__ = [
    "Snapshot",
    "SnapshotPolicy",
    "Snapshots",
    "StateCopyError",
    "forks_from_snapshots",
    "keep_taking",
    "take",
    "takes_snapshots",
    "thawed",
]


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A session copied after its first `records` records, at stream seq `seq` and simulated
    time `time`; `cost_s`: the wall time its copy held the session's lane; `work_s`: the
    lane's work (`CommandLane.work_s`) once it was taken (for one a fork starts from, less
    what the fork took to replay from it); `taken_at`: when (`time.perf_counter`)."""

    records: int
    seq: int
    time: float
    data: bytes
    cost_s: float
    work_s: float = 0.0
    taken_at: float = 0.0

    def serves(self, until_seq: int | None, until_time: float | None) -> bool:
        """Whether a replay to this cut passes through this snapshot (module docstring)."""
        return (until_seq is None or self.seq < until_seq) and (
            until_time is None or self.time <= until_time
        )


@dataclass(frozen=True, slots=True)
class SnapshotPolicy:
    """When a session takes a snapshot, and how many it keeps (module docstring).

    `fork_within_s`: what a fork from the newest snapshot should take at most. A fork thaws
    the snapshot, then replays the work done since, which costs about what the run spent on
    it: half the aim goes to each, so a snapshot is taken once the lane has done
    `fork_within_s / 2` of work since the newest. `overhead`: the most of the session's wall
    time its snapshots may take; a snapshot waits until that much wall time has passed since
    the newest (`its cost / overhead`). A session that computes without pause (a fast run) is
    held to the overhead, so its snapshots are sparse; one that mostly waits (for its agent,
    for a client's control) takes them as densely as the fork aim asks, while it waits."""

    fork_within_s: float = 1.0
    overhead: float = 0.1
    max_count: int = 8
    max_bytes: int = 64 * 1024 * 1024


class Snapshots:
    """A session's snapshots, oldest first."""

    def __init__(self, policy: SnapshotPolicy, rebuild_s: float = 0.0) -> None:
        self.policy = policy
        self.kept: list[Snapshot] = []
        # What making the session cost (its import, its fork, its restore): what a fork at a
        # cut before its first snapshot does again, before replaying the work since.
        self.rebuild_s = rebuild_s

    def work_since(self, lane_work_s: float) -> float:
        """The lane work done since the newest snapshot, given the lane's (`work_s`) now."""
        return lane_work_s - self.kept[-1].work_s if self.kept else lane_work_s

    def spaced(self, work_s: float) -> bool:
        """Whether a fork from the newest snapshot (from the session's making, before the
        first), `work_s` of lane work later, would replay more than half the fork aim: a
        session that took long to make takes its first snapshot as it starts."""
        if self.kept:
            return work_s > 0 and work_s >= self.policy.fork_within_s / 2
        return self.rebuild_s + work_s >= self.policy.fork_within_s / 2

    def wait_s(self, now: float) -> float:
        """How long, at `now` (`time.perf_counter`), the next snapshot must still wait to keep
        within the overhead (0: it may be taken now; never, with no overhead allowed)."""
        if self.policy.overhead <= 0:
            return math.inf
        if not self.kept:
            return 0.0
        newest = self.kept[-1]
        return max(0.0, newest.taken_at + newest.cost_s / self.policy.overhead - now)

    def add(self, snapshot: Snapshot) -> None:
        """Keep `snapshot`, then thin the kept ones to the policy's bounds, one at a time:
        the one whose loss leaves the shortest replay (in lane work) from the one before it,
        or from the session's making before the first, to the one after (the newest always
        stays). The forks it served then replay the least more."""
        kept = self.kept
        kept.append(snapshot)
        while len(kept) > 1 and (
            len(kept) > self.policy.max_count
            or sum(len(s.data) for s in kept) > self.policy.max_bytes
        ):
            before = [-self.rebuild_s] + [s.work_s for s in kept[:-2]]
            spans = [after.work_s - b for b, after in zip(before, kept[1:], strict=True)]
            del kept[spans.index(min(spans))]

    def inherit(self, snapshot: Snapshot, replay_s: float) -> None:
        """Start from `snapshot`, the source's a fork was thawed from (it holds the fork's
        state too, at the same point of the same records): `replay_s`, what the fork took to
        make from it (the thaw, the replay to its start), counts as work done since. A fork
        of the fork then starts from it, and the fork's first own snapshot waits its turn."""
        self.kept = [replace(snapshot, work_s=-replay_s, taken_at=time.perf_counter())]

    def current(self, sim: Simulation) -> Snapshot | None:
        """The newest snapshot, if a fork of `sim` as it is now costs less from it (a thaw,
        then a replay of the work done since) than from a new one (a copy, then a thaw): if
        the work since is less than the newest copy cost. A session parked at a point (an
        episode reset again and again to it) has done none."""
        newest = self.kept[-1] if self.kept else None
        if newest is None or self.work_since(sim.lane.work_s) >= newest.cost_s:
            return None
        return newest

    def serving(self, until_seq: int | None, until_time: float | None) -> Snapshot | None:
        """The newest snapshot a fork at this cut can start from, if any."""
        return next((s for s in reversed(self.kept) if s.serves(until_seq, until_time)), None)


async def take(sim: Simulation) -> Snapshot | None:
    """A snapshot of `sim` as it is now (between two commands): it holds the session's lane
    while the copy runs in a worker thread (the loop only awaits it). None if the session
    logged something meanwhile (below); raises `StateCopyError`."""
    async with sim.lane:
        started = time.perf_counter()
        count = len(sim.flush_records())
        seq, now = sim.log.seq, sim.clock.now()
        # What the copy must not take along: the service's listeners (its hub, its journal),
        # the driver's task group and the lane's waiters; `thawed` gives the copy its own.
        replaced = sim.copy_reductions()
        apps = list(sim.env.apps.values())
        try:
            data = await anyio.to_thread.run_sync(freeze, sim, replaced, apps)
        except StateCopyError:
            if (len(sim.records), sim.log.seq) != (count, seq):
                return None  # torn by a change made meanwhile (below): try again later
            raise
        # The lane orders commands, but a few things touch a session outside it (an agent's
        # lease taken as a notification arrives, the hold kept for a missing agent): a copy
        # made while one of them logged something is not a state the run was ever in.
        if (len(sim.records), sim.log.seq) != (count, seq):
            return None
        done = time.perf_counter()
    # The copy is no work of the session's (a fork replays none of it): its time in the lane
    # is taken back out, and the lane's work once left is where the next spacing counts from.
    sim.lane.work_s -= done - started
    return Snapshot(count, seq, now, data, done - started, sim.lane.work_s, done)


async def keep_taking(sim: Simulation, snapshots: Snapshots) -> None:
    """Take snapshots of `sim` into `snapshots` as its policy calls for them, in turn with its
    commands, none in realtime, until the run ends. Raises `StateCopyError`."""
    lane = sim.lane

    def spaced() -> bool:
        # Counted from the newest snapshot, whoever took it (a fork with no cut takes one).
        return snapshots.spaced(snapshots.work_since(lane.work_s))

    while not sim.ended:
        if not (takes_snapshots(sim) and spaced()):
            await _released_when(lane, spaced)
            continue
        wait = snapshots.wait_s(time.perf_counter())
        if wait > 0:
            # Never, with no overhead allowed: the session's task ends it. Then looked at
            # again: a fork may have taken one meanwhile.
            await anyio.sleep(wait)
            continue
        snapshot = await take(sim)
        if snapshot is not None:
            snapshots.add(snapshot)


async def _released_when(lane: CommandLane, ready: Callable[[], bool]) -> None:
    """Return once the lane is left with `ready()` true (checked at each release only)."""
    done = anyio.Event()

    def on_release() -> None:
        if ready():
            done.set()

    lane.on_release = on_release
    try:
        await done.wait()
    finally:
        lane.on_release = None


def forks_from_snapshots(sim: Simulation) -> bool:
    """Whether a fork of `sim` may start from a snapshot (not realtime: module docstring)."""
    return sim.clock.mode is not Mode.REALTIME


def takes_snapshots(sim: Simulation) -> bool:
    """Whether `sim`, running, still takes snapshots as its policy calls for them."""
    return forks_from_snapshots(sim) and not sim.ended


def thawed(
    snapshot: Snapshot,
    records: Sequence[InputRecord],
    *,
    until_seq: int | None = None,
    until_time: float | None = None,
) -> Simulation:
    """A new session from `snapshot`, replayed on to the cut through the source's `records`
    (those past the snapshot's), as `Simulation.replay` from the scenario's load would have
    made it. Runs on any thread; raises `ReplayDivergedError` as a replay does."""
    sim: Simulation = thaw(snapshot.data)
    try:
        sim.revive()
        replay_into(
            sim, records, until_seq=until_seq, until_time=until_time, start=snapshot.records
        )
    except BaseException:
        sim.sandbox.remove_directories()  # the thaw made them for this fork alone
        raise
    return sim
