"""Forks that start from a snapshot of their source (`simulation/snapshots.py`) instead of
replaying it from its load: taken when the fork has no cut, or by the session as it works.

The snapshots' policy on its own (when one is due, which are kept, which serves a cut):
`tests/simulation/test_snapshot_policy.py`."""

from __future__ import annotations

import math
from typing import Any

import pytest

from areasync.protocol import CallTool, Role
from areasync.protocol.frames import ForkSession, StopSession
from areasync.service.config import ServiceConfig
from areasync.service.durability.restore import fork_snapshot
from areasync.service.server import Service
from areasync.simulation.snapshots import Snapshot, SnapshotPolicy, Snapshots
from tests.service.durability.test_fork import INBOX, agent_calls, stream
from tests.service.support import TUTORIAL, attach, serving
from tests.waiting import eventually, settled

# A snapshot after every command; none after the first.
EVERY_COMMAND = SnapshotPolicy(fork_within_s=0.0, overhead=math.inf)
NONE_MORE = SnapshotPolicy(fork_within_s=math.inf)


def snapshots(service: Service, session_id: str = TUTORIAL) -> Snapshots:
    session = service.registry.get(session_id)
    assert session is not None and session.snapshots is not None
    return session.snapshots


async def until_kept(kept: Snapshots, count: int = 1) -> None:
    """Wait until `kept` holds `count` snapshots (no hook to await: polled)."""
    await eventually(lambda: len(kept.kept) >= count)


async def snapshot_after_a_call(service: Service, agent: Any) -> Snapshots:
    """The session's snapshots once it took one after the agent's first tool call."""
    kept = snapshots(service)
    kept.policy = EVERY_COMMAND
    await agent.call(CallTool, **INBOX)
    await until_kept(kept)
    return kept


async def a_cut_past_the_snapshot(service: Service, agent: Any) -> tuple[Snapshots, int]:
    """A snapshot after the agent's first call, no more, then a second call (to SENT): the
    session's snapshots and the cut after that call."""
    kept = await snapshot_after_a_call(service, agent)
    kept.policy = NONE_MORE
    await agent.call(CallTool, tool=INBOX["tool"], args={"folder_name": "SENT"})
    return kept, len(stream(service, TUTORIAL))


def forked_at_the_cut(service: Service, fork: str, cut: int) -> None:
    """`fork` is the source up to `cut`: its stream, and the calls made before it."""
    assert stream(service, fork) == stream(service, TUTORIAL)[:cut]
    assert agent_calls(service, fork)[1:] == ["SENT"]


async def test_a_fork_with_no_cut_starts_from_a_snapshot_of_the_source_as_it_is() -> None:
    async with (
        serving() as service,
        attach(service, Role.AGENT) as agent,
        attach(service, Role.ADMIN) as admin,
    ):
        await agent.call(CallTool, **INBOX)
        created = await admin.call(ForkSession, session_id=TUTORIAL)
        fork = created["session_id"]
        [taken] = snapshots(service).kept
        assert taken.seq == len(stream(service, TUTORIAL)) == len(stream(service, fork))
        assert stream(service, fork) == stream(service, TUTORIAL)
        async with attach(
            service, Role.AGENT, session=fork, token=created["tokens"]["agent"]
        ) as other:
            await other.call(CallTool, tool=INBOX["tool"], args={"folder_name": "DRAFT"})
        assert agent_calls(service, fork)[1:] == ["DRAFT"]
        assert agent_calls(service, TUTORIAL)[1:] == []


async def test_a_session_forked_again_with_nothing_new_is_not_copied_again() -> None:
    async with serving() as service, attach(service, Role.ADMIN) as admin:
        first = await admin.call(ForkSession, session_id=TUTORIAL)
        second = await admin.call(ForkSession, session_id=TUTORIAL)
        assert len(snapshots(service).kept) == 1
        assert stream(service, first["session_id"]) == stream(service, second["session_id"])


async def test_a_session_takes_snapshots_as_its_work_calls_for_them() -> None:
    async with serving() as service, attach(service, Role.AGENT) as agent:
        kept = await snapshot_after_a_call(service, agent)
        assert kept.kept[-1].records >= 1


async def test_a_fork_at_a_cut_starts_from_the_newest_snapshot_before_it() -> None:
    async with (
        serving() as service,
        attach(service, Role.AGENT) as agent,
        attach(service, Role.ADMIN) as admin,
    ):
        kept, cut = await a_cut_past_the_snapshot(service, agent)
        served = kept.serving(cut, None)
        assert isinstance(served, Snapshot) and served.seq < cut
        await agent.call(CallTool, tool=INBOX["tool"], args={"folder_name": "TRASH"})
        created = await admin.call(ForkSession, session_id=TUTORIAL, at_seq=cut)
        forked_at_the_cut(service, created["session_id"], cut)


async def test_a_session_waiting_between_commands_takes_its_snapshot_while_it_waits() -> None:
    async with serving() as service, attach(service, Role.AGENT) as agent:
        kept = await snapshot_after_a_call(service, agent)
        # Allowed half the session's time: the next waits twice the first's cost, idle.
        kept.policy = SnapshotPolicy(fork_within_s=0.0, overhead=0.5)
        await agent.call(CallTool, tool=INBOX["tool"], args={"folder_name": "SENT"})
        records = len(service.registry.sessions[TUTORIAL].sim.records)
        await until_kept(kept, 2)  # no command runs meanwhile
        assert kept.kept[-1].records == records


async def test_an_ended_session_is_forked_at_a_cut_from_the_snapshots_its_run_took() -> None:
    async with (
        serving() as service,
        attach(service, Role.AGENT) as agent,
        attach(service, Role.ADMIN) as admin,
    ):
        kept, cut = await a_cut_past_the_snapshot(service, agent)
        await admin.call(StopSession, session_id=TUTORIAL)
        session = service.registry.sessions[TUTORIAL]
        assert session.ended
        assert await fork_snapshot(session, cut, None) is kept.kept[-1]
        created = await admin.call(ForkSession, session_id=TUTORIAL, at_seq=cut)
        forked_at_the_cut(service, created["session_id"], cut)


async def test_a_realtime_session_is_forked_by_a_replay_and_takes_no_snapshot() -> None:
    async with (
        serving(mode="realtime") as service,
        attach(service, Role.AGENT) as agent,
        attach(service, Role.ADMIN) as admin,
    ):
        snapshots(service).policy = EVERY_COMMAND
        await agent.call(CallTool, **INBOX)
        created = await admin.call(ForkSession, session_id=TUTORIAL)
        assert snapshots(service).kept == []
        assert agent_calls(service, created["session_id"]) == ["INBOX"]


async def test_sessions_take_snapshots_by_the_servers_fork_aim_and_overhead() -> None:
    async with serving(fork_within=2.0, snapshot_overhead=0.25) as service:
        assert snapshots(service).policy == SnapshotPolicy(fork_within_s=2.0, overhead=0.25)


@pytest.mark.parametrize("fork_within", [0.0, -1.0, math.inf])
def test_a_service_config_refuses_a_fork_aim_that_is_not_a_positive_time(
    fork_within: float,
) -> None:
    with pytest.raises(ValueError, match="fork_within must be a number of seconds > 0"):
        ServiceConfig(fork_within=fork_within)


@pytest.mark.parametrize("overhead", [-0.1, 1.5])
def test_a_service_config_refuses_a_snapshot_overhead_outside_0_to_1(overhead: float) -> None:
    with pytest.raises(ValueError, match="snapshot_overhead must be from 0"):
        ServiceConfig(snapshot_overhead=overhead)


async def test_a_session_long_to_make_takes_its_first_snapshot_before_any_command() -> None:
    # Any making takes longer than half of a microsecond's aim.
    async with serving(fork_within=1e-6) as service:
        kept = snapshots(service)
        assert kept.rebuild_s > 0
        await until_kept(kept)
        assert kept.kept[0].records == 0


async def test_a_snapshot_a_fork_took_is_not_taken_again_by_its_session() -> None:
    async with serving() as service, attach(service, Role.ADMIN) as admin:
        kept = snapshots(service)
        kept.policy = EVERY_COMMAND
        await admin.call(ForkSession, session_id=TUTORIAL)  # with no cut: a copy taken now
        await until_idle(service.registry.sessions[TUTORIAL].sim)
        assert len(kept.kept) == 1


async def until_idle(sim: Any) -> None:
    """Return once `sim`'s snapshot loop has done what it does with no more work: the loop is
    settled and its lane free (a copy runs in a thread holding the lane, and is then kept)."""
    while True:
        await settled()
        if not sim.lane.locked():
            return
        await eventually(lambda: not sim.lane.locked())


async def test_a_fork_keeps_the_snapshot_it_started_from_for_its_own_forks() -> None:
    async with (
        serving() as service,
        attach(service, Role.AGENT) as agent,
        attach(service, Role.ADMIN) as admin,
    ):
        kept, cut = await a_cut_past_the_snapshot(service, agent)
        fork = (await admin.call(ForkSession, session_id=TUTORIAL, at_seq=cut))["session_id"]
        [inherited] = snapshots(service, fork).kept
        assert inherited.data is kept.kept[-1].data and inherited.seq == kept.kept[-1].seq
        again = await admin.call(ForkSession, session_id=fork, at_seq=cut)
        assert stream(service, again["session_id"]) == stream(service, TUTORIAL)[:cut]
