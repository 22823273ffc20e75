"""Over a real socket: `/api/sessions` reports an ended realtime session at the time it ended.

Real time passes between the two reads (an outcome check, not a timing assertion): at speed 100
a clock still flowing would have moved by whole simulated seconds.
"""

from __future__ import annotations

from typing import Any

import anyio

from areasync.protocol import Role, StopSession
from tests.service.support import ADMIN, TUTORIAL, attach, http_get, json_body, serving
from tests.waiting import eventually


async def listed_clock(service: Any) -> dict[str, Any]:
    _, _, body = await http_get(service, f"/api/sessions?token={ADMIN}")
    (session,) = json_body(body)["sessions"]
    assert session["ended"], f"the session has not ended: {session['state']}"
    clock: dict[str, Any] = session["clock"]
    return clock


async def test_a_stopped_realtime_session_is_listed_at_the_time_it_stopped() -> None:
    async with (
        serving(mode="realtime", speed=100.0) as service,
        attach(service, Role.ADMIN) as admin,
    ):
        sim = service.registry.get(TUTORIAL).sim
        start = sim.clock_state(peek=True).start_time
        await eventually(lambda: sim.clock_state(peek=True).time > start)  # time flows first
        await admin.call(StopSession, session_id=TUTORIAL)
        await admin.until_ended()
        first = await listed_clock(service)
        await anyio.sleep(0.2)  # 20 simulated seconds, were the clock still running
        second = await listed_clock(service)
    assert first["state"] == "stopped"
    assert first["time"] > first["start_time"]  # time did flow before the stop
    assert second["time"] == first["time"]


async def test_a_realtime_session_that_ran_its_duration_is_listed_at_its_end() -> None:
    async with (
        serving(mode="realtime", speed=1000.0, oracle=True) as service,
        attach(service, Role.OBSERVER, since=0) as peer,
    ):
        await peer.until_ended()
        first = await listed_clock(service)
        await anyio.sleep(0.2)  # 200 simulated seconds, were the clock still running
        second = await listed_clock(service)
    assert second["time"] == first["time"]
    assert first["duration"] is not None
    assert first["start_time"] < first["time"] <= first["start_time"] + first["duration"]
