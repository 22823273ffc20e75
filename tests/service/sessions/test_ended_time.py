"""Over a real socket: `/api/sessions` reports an ended realtime session at the time it ended.

The sessions run on a wall the test moves (`tests/walls.py`): after the end, the wall jumps on,
and a clock still flowing would have moved by that jump times the speed.
"""

from __future__ import annotations

from typing import Any

from areasync.protocol import Role, StopSession
from tests.service.support import ADMIN, TUTORIAL, attach, http_get, json_body, serving
from tests.walls import JumpingWall

LATER_S = 10.0  # wall seconds the wall jumps on after the end


async def listed_clock(service: Any) -> dict[str, Any]:
    _, _, body = await http_get(service, f"/api/sessions?token={ADMIN}")
    (session,) = json_body(body)["sessions"]
    assert session["ended"], f"the session has not ended: {session['state']}"
    clock: dict[str, Any] = session["clock"]
    return clock


async def test_a_stopped_realtime_session_is_listed_at_the_time_it_stopped() -> None:
    wall = JumpingWall()
    async with (
        serving(mode="realtime", speed=100.0, wall=wall.wall) as service,
        attach(service, Role.ADMIN) as admin,
    ):
        sim = service.registry.get(TUTORIAL).sim
        start = sim.clock_state(peek=True).start_time
        wall.jump(0.5)  # 50 simulated seconds
        assert sim.clock_state(peek=True).time > start  # time flows first
        await admin.call(StopSession, session_id=TUTORIAL)
        await admin.until_ended()
        first = await listed_clock(service)
        wall.jump(LATER_S)
        second = await listed_clock(service)
    assert first["state"] == "stopped"
    assert first["time"] > first["start_time"]  # time did flow before the stop
    assert second["time"] == first["time"]


async def test_a_realtime_session_that_ran_its_duration_is_listed_at_its_end() -> None:
    # The wall runs with the real one too: the session runs its duration (at speed 1000).
    wall = JumpingWall(follows=True)
    async with (
        serving(mode="realtime", speed=1000.0, oracle=True, wall=wall.wall) as service,
        attach(service, Role.OBSERVER, since=0) as peer,
    ):
        await peer.until_ended()
        first = await listed_clock(service)
        wall.jump(LATER_S)
        second = await listed_clock(service)
    assert second["time"] == first["time"]
    assert first["duration"] is not None
    # Where it ended depends on the machine, as in ARE: the tutorial's last event (18 s) on a
    # quiet machine, or past its 20 s duration when the loop is late; the rule under test is
    # that the clock stands still from then on.
    assert first["start_time"] < first["time"]
