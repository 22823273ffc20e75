"""`simulation/snapshots.py`: a fork from a snapshot is the fork a replay from the scenario's
load makes, byte for byte, and shares nothing with its source."""

from __future__ import annotations

import os
from typing import Any

import pytest
from are.simulation.apps.sandbox_file_system import SandboxLocalFileSystem

from areasync import Simulation
from areasync.conformance.scenario_json import export_scenario_json
from areasync.conformance.scenarios import GAIA2_SHAPED_ID
from areasync.simulation.snapshots import Snapshot, take, thawed
from tests.simulation.test_replay import frames, without_host_paths

pytestmark = pytest.mark.anyio


async def first_half(sim: Simulation) -> None:
    await sim.send_user_message("hello there")
    await sim.jump(by=3)
    await sim.call_tool("AgentUserInterface__send_message_to_user", {"content": "on it"})


async def second_half(sim: Simulation) -> None:
    await sim.next_event()
    await sim.tick(2)
    await sim.send_user_message("and another thing")
    await sim.jump(by=5, inclusive=False)


async def snapshot_session() -> tuple[str, Simulation, Snapshot]:
    """A Gaia2-shaped session with a snapshot taken between its two halves, and its source."""
    source = export_scenario_json(GAIA2_SHAPED_ID)
    sim = Simulation.load(source, mode="manual", seed=5, created_at=0.0)
    async with sim:
        await first_half(sim)
        snapshot = await take(sim)
        assert snapshot is not None
        await second_half(sim)
    return source, sim, snapshot


def forks(source: str, live: Simulation, snapshot: Snapshot, **cut: Any) -> list[Simulation]:
    """The same fork twice: from `snapshot`, and replayed from the scenario's load."""
    assert live.creation is not None
    records = list(live.flush_records())
    return [
        thawed(snapshot, records, **cut),
        Simulation.replay(source, live.creation, records, **cut),
    ]


def same(one: Simulation, other: Simulation) -> None:
    assert frames(one) == frames(other)
    assert one.records == other.records
    assert without_host_paths(one.get_state()) == without_host_paths(other.get_state())


async def test_a_fork_from_a_snapshot_to_the_end_of_the_run_is_the_replayed_one() -> None:
    source, live, snapshot = await snapshot_session()
    copy, replayed = forks(source, live, snapshot)
    assert copy.ended
    same(copy, replayed)


async def test_a_fork_from_a_snapshot_is_the_replayed_fork_and_goes_on_the_same() -> None:
    source, live, snapshot = await snapshot_session()
    for cut in ({"until_seq": live.log.seq - 6}, {"until_time": live.clock.now() - 1}):
        copy, replayed = forks(source, live, snapshot, **cut)
        same(copy, replayed)
        for fork in (copy, replayed):
            async with fork:
                await fork.send_user_message("a different turn")
                await fork.call_tool("AgentUserInterface__send_message_to_user", {"content": "ok"})
                await fork.stop()
        same(copy, replayed)


async def test_taking_a_snapshot_changes_nothing_of_the_session() -> None:
    source, live, _ = await snapshot_session()
    plain = Simulation.load(source, mode="manual", seed=5, created_at=0.0)
    async with plain:
        await first_half(plain)
        await second_half(plain)
    same(live, plain)


def file_system(sim: Simulation) -> SandboxLocalFileSystem:
    return next(a for a in sim.scenario.apps or [] if isinstance(a, SandboxLocalFileSystem))


def write_note(directory: str, text: str) -> None:
    with open(os.path.join(directory, "note.txt"), "w") as file:
        file.write(text)


def read_note(directory: str) -> str:
    with open(os.path.join(directory, "note.txt")) as file:
        return file.read()


def exists(path: str) -> bool:
    return os.path.exists(path)


async def test_a_forks_sandbox_is_its_own_directory() -> None:
    sim = Simulation.load("scenario_tutorial", mode="manual", seed=3, created_at=0.0)
    async with sim:
        original = file_system(sim)
        write_note(original.tmpdir, "kept")
        snapshot = await take(sim)
        assert snapshot is not None
        fork = thawed(snapshot, sim.flush_records())
        copy = file_system(fork)
        assert copy.tmpdir != original.tmpdir
        assert fork.sandbox.roots and fork.sandbox.roots != sim.sandbox.roots
        assert read_note(copy.tmpdir) == "kept"
        write_note(copy.tmpdir, "the fork's")
        assert read_note(original.tmpdir) == "kept"
        fork.sandbox.remove_directories()
        assert not exists(copy.tmpdir)
        assert read_note(original.tmpdir) == "kept"


async def test_a_snapshot_holds_nothing_of_another_session_of_the_same_apps() -> None:
    ours = Simulation.load("scenario_tutorial", mode="manual", seed=3, created_at=0.0)
    # Loaded last, its apps' tools are the ones ARE parks on the app classes (module
    # `bridge/state_copy.py`, `_foreign_tool`): our session's actions point at them.
    other = Simulation.load("scenario_tutorial", mode="manual", seed=4, created_at=0.0)
    async with other, ours:
        await other.send_user_message("only-in-the-other-session")
        await ours.call_tool(INBOX_TOOL, {"folder_name": "INBOX"})
        snapshot, control = await take(ours), await take(other)
        assert snapshot is not None and control is not None
        assert b"only-in-the-other-session" not in snapshot.data
        assert b"only-in-the-other-session" in control.data


INBOX_TOOL = "EmailClientApp__list_emails"
