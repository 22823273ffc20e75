"""`StopAnnouncements`, the part of a session that counts the stops on their way
(`areasync.simulation.stops`): a session holds one, and its long controls ask it."""

from __future__ import annotations

from areasync import Simulation
from areasync.simulation.stops import StopAnnouncements
from tests.scenarios import timeline


def test_an_announcement_withdrawn_twice_is_withdrawn_once() -> None:
    stops = StopAnnouncements()
    first, second = stops.announce(), stops.announce()
    first()
    first()
    assert stops  # the second is still on its way
    second()
    assert not stops


def test_a_session_announces_its_stops_to_the_part_it_holds_for_them() -> None:
    sim = Simulation.load(timeline(1.0, duration=10.0), mode="manual")
    withdraw = sim.announce_stop()
    assert sim.stops and sim.stop_announced
    withdraw()
    assert not sim.stops and not sim.stop_announced
