"""A session is a function of its creation and records: `Simulation.replay` rebuilds it bit for
bit (every stream item encoded the same in msgpack and JSON, the same records, the same state)."""

from __future__ import annotations

import os
import re
import sys
from typing import Any

import anyio
import msgspec
import pytest

from areasync import Simulation
from areasync.conformance.scenario_json import export_scenario_json
from areasync.conformance.scenarios import GAIA2_SHAPED_ID, offline_scenario_ids
from areasync.policies import LagPolicy
from areasync.protocol.codec import Encoding, encode_server_frame
from areasync.protocol.frames import EventItem
from areasync.simulation.errors import ReplayDivergedError
from areasync.simulation.input_records import Abandoned, LeaseBegin, Tick
from areasync.simulation.replay import _check
from tests.scenarios import timeline
from tests.waiting import settled
from tests.walls import JumpingWall

pytestmark = pytest.mark.anyio

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}")


def frames(sim: Simulation) -> list[tuple[bytes, str]]:
    return [
        (encode_server_frame(item, Encoding.MSGPACK), encode_server_frame(item, Encoding.JSON))
        for item in sim.log.items
    ]


def replayed(source: Any, sim: Simulation, **cut: Any) -> Simulation:
    assert sim.creation is not None
    return Simulation.replay(source, sim.creation, list(sim.flush_records()), **cut)


def without_host_paths(state: Any) -> Any:
    """App state less `tmpdir`: the host directory a file-system app lives in (a new one per
    session, named by `tempfile`), which is no part of what the session shows."""
    if isinstance(state, dict):
        return {k: without_host_paths(v) for k, v in state.items() if k != "tmpdir"}
    if isinstance(state, list):
        return [without_host_paths(v) for v in state]
    return state


def assert_same_run(live: Simulation, again: Simulation) -> None:
    assert frames(again) == frames(live)
    assert again.records == live.records
    assert without_host_paths(again.get_state()) == without_host_paths(live.get_state())


@pytest.mark.parametrize("scenario_id", offline_scenario_ids())
async def test_a_fast_oracle_run_replays_to_the_same_frames(scenario_id: str) -> None:
    live = Simulation.load(scenario_id, mode="fast", oracle=True, seed=11)
    await live.run()
    assert_same_run(live, replayed(scenario_id, live))


async def gaia2_session(seed: int = 5) -> tuple[str, Simulation]:
    source = export_scenario_json(GAIA2_SHAPED_ID)
    sim = Simulation.load(source, mode="manual", seed=seed)
    async with sim:
        await sim.send_user_message("hello there")
        await sim.jump(by=3)
        await sim.call_tool("AgentUserInterface__send_message_to_user", {"content": "on it"})
        await sim.next_event()
        await sim.tick(2)
        await sim.send_user_message("and another thing")
        await sim.jump(by=5, inclusive=False)
        await sim.stop()
    return source, sim


async def test_a_multi_turn_session_with_tool_calls_and_user_messages_replays_exactly() -> None:
    source, live = await gaia2_session()
    assert any(isinstance(item, EventItem) for item in live.log.items)
    assert_same_run(live, replayed(source, live))


async def test_the_same_seed_twice_gives_the_same_run_and_another_seed_other_ids() -> None:
    _, first = await gaia2_session(seed=5)
    _, second = await gaia2_session(seed=5)
    _, other = await gaia2_session(seed=6)
    assert frames(first) == frames(second)
    drawn = [e.event_id for e in first.events() if UUID.search(e.event_id)]
    assert drawn and set(drawn).isdisjoint(e.event_id for e in other.events())


async def test_every_manual_control_replays_exactly() -> None:
    scenario = lambda: timeline(1.0, 2.0, 4.0, 8.0, duration=60.0)  # noqa: E731
    live = Simulation.load(scenario(), mode="manual", seed=3, created_at=50.0)
    async with live:
        await live.tick()
        await live.jump(to=2.0, inclusive=False)
        await live.call_tool("TimelineApp__mark", {"label": "at two"})
        await live.next_event()
        await live.pause()
        await live.resume()
        async with live.lane:
            live.set_speed(3.0)
        await live.jump(by=1.5)
        await live.tick(3)
        await live.stop()
    assert_same_run(live, replayed(scenario(), live))


async def test_a_realtime_session_replays_with_no_wall_and_comes_back_paused() -> None:
    wall = JumpingWall()
    scenario = lambda: timeline(1.0, 3.0, duration=30.0)  # noqa: E731
    live = Simulation.load(
        scenario(),
        mode="realtime",
        speed=1000.0,
        lag_policy=LagPolicy.SLIP,
        wall=wall,
        sleep=wall.sleep,
        seed=9,
        created_at=50.0,
    )
    async with live:
        for step in range(6):
            wall.jump(0.0007)
            await settled()  # the driver has run what was due, and waits on the wall
            if step == 2:
                await live.call_tool("TimelineApp__mark", {"label": "mid"})
                await live.pause()
                wall.jump(1.0)  # paused: no simulated time
                await live.resume()
        async with live.lane:
            live.set_mode("manual")
        await live.jump(by=2)
        async with live.lane:
            live.set_mode("realtime")
        wall.jump(0.0013)
        await settled()
        records = list(live.flush_records())
        assert any(r.source == "realtime_tick" for r in records)
        creation = live.creation
        assert creation is not None
        again = Simulation.replay(scenario(), creation, records, wall=JumpingWall())
        assert frames(again) == frames(live)
        assert again.restored and again.clock.paused and again.clock.mode.value == "realtime"
        assert again.clock.now() == live.clock.now()
        await live.stop()


async def test_a_cut_replay_is_the_live_prefix_and_forks_with_other_inputs() -> None:
    source, live = await gaia2_session()
    cut = live.log.seq // 2
    fork = replayed(source, live, until_seq=cut)
    assert cut <= fork.log.seq < live.log.seq
    assert frames(fork) == frames(live)[: fork.log.seq]
    async with fork:
        await fork.send_user_message("a different turn")
        await fork.stop()
    assert frames(fork)[:cut] == frames(live)[:cut]
    assert frames(fork) != frames(live)


async def test_a_cut_by_time_holds_nothing_after_that_time() -> None:
    live = Simulation.load("scenario_tutorial", mode="fast", oracle=True, seed=2)
    await live.run()
    times = sorted({e.time for e in live.events()})
    until = times[len(times) // 2]
    fork = replayed("scenario_tutorial", live, until_time=until)
    assert [e for e in fork.events()] == [e for e in live.events() if e.time <= until]


REPLAY_IN_A_SUBPROCESS = """
import sys, anyio, msgspec
from areasync import Simulation
from areasync.simulation import Creation, InputRecord
from areasync.protocol.codec import Encoding, encode_server_frame
creation = msgspec.json.decode(sys.stdin.buffer.readline(), type=Creation)
records = msgspec.json.decode(sys.stdin.buffer.readline(), type=list[InputRecord])
source = msgspec.json.decode(sys.stdin.buffer.readline(), type=str)
sim = Simulation.replay(source, creation, records)
sys.stdout.buffer.write(b"".join(encode_server_frame(i, Encoding.MSGPACK) for i in sim.log.items))
"""


async def test_a_replay_in_another_process_with_another_hash_seed_gives_the_same_bytes() -> None:
    source, live = await gaia2_session()
    payload = b"\n".join(
        msgspec.json.encode(value) for value in (live.creation, live.flush_records(), source)
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    done = await anyio.run_process(
        [sys.executable, "-c", REPLAY_IN_A_SUBPROCESS], input=payload + b"\n", env=env
    )
    out = done.stdout
    assert out == b"".join(msgpack for msgpack, _ in frames(live))


def test_a_replay_that_logs_a_different_record_before_a_matching_one_is_refused() -> None:
    run = [
        LeaseBegin(time=1.0, seq=1, holder="agent"),
        Tick(time=1.0, seq=2, n=1),
    ]
    again = [
        LeaseBegin(time=1.0, seq=1, holder="other"),
        run[1],
    ]
    with pytest.raises(ReplayDivergedError, match="record 0 replayed as"):
        _check(again, run, 0)
    assert _check(list(run), run, 0) == 2


async def test_a_call_recorded_abandoned_is_logged_again_but_not_run_by_a_replay() -> None:
    # A call that held its worker's loop until the worker was killed: the restore follows its
    # record with `abandoned` (service/durability/restore.py), and no replay runs it again.
    scenario = lambda: timeline(1.0, 5.0, duration=60.0)  # noqa: E731
    live = Simulation.load(scenario(), mode="manual", seed=3, created_at=50.0)
    async with live:
        await live.tick()
        before = len(live.log.items)
        await live.call_tool("TimelineApp__mark", {"label": "never finished"})
        assert len(live.log.items) == before + 1  # its AGENT event
        records = list(live.flush_records())  # as the journal had them when it was killed
    assert records[-1].source == "call_tool"
    call = records[-1]
    records.append(Abandoned(call.time, call.seq, reason="held its loop"))
    assert live.creation is not None
    again = Simulation.replay(scenario(), live.creation, records)
    assert again.records == records
    assert len(again.log.items) == before  # the call did not run: no event of it
    once_more = Simulation.replay(scenario(), live.creation, list(again.records))
    assert once_more.records == records
