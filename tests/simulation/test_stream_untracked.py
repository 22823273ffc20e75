"""A session keeps one stream item per event for its whole life; the garbage collector does not
walk them.

Records and their stream items hold JSON values only (no cycles), so they are not tracked by the
collector: a full collection in a process of long sessions does not walk every session's stream.
"""

from __future__ import annotations

import gc

from areasync import Simulation
from areasync.protocol.frames import EventItem, NotificationItem
from bench.synthetic import synthetic_scenario


async def test_a_sessions_event_items_and_records_are_not_tracked_by_the_collector() -> None:
    sim = Simulation.load(synthetic_scenario(20), mode="fast", oracle=True)
    await sim.run()
    items = [item for item in sim.log.items if isinstance(item, EventItem)]
    assert len(items) == 20
    assert not any(gc.is_tracked(item) or gc.is_tracked(item.event) for item in items)


async def test_a_sessions_notification_items_are_not_tracked_by_the_collector() -> None:
    sim = Simulation.load("scenario_tutorial", mode="manual")
    await sim.call_tool("AgentUserInterface__send_message_to_user", {"content": "hello"})
    await sim.stop()
    items = [item for item in sim.log.items if isinstance(item, NotificationItem)]
    assert items
    assert not any(gc.is_tracked(item) or gc.is_tracked(item.notification) for item in items)
