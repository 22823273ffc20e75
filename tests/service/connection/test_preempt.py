"""`preempt.announce_stop`: a stop read ahead is announced to the simulation it stops, given
only that simulation and a way to find another by id (never the whole registry)."""

from __future__ import annotations

from areasync import Simulation
from areasync.protocol.codec import Encoding, encode_client_frame
from areasync.protocol.frames import Stop, StopSession
from areasync.service.connection import preempt

ALLOWED = frozenset({Stop, StopSession})


def test_a_stop_read_ahead_is_announced_to_the_connections_own_simulation() -> None:
    own = Simulation.load("scenario_tutorial", mode="manual")
    data = encode_client_frame(Stop(id=1), Encoding.JSON)
    withdraw = preempt.announce_stop(
        data, max_bytes=1 << 16, allowed=ALLOWED, own=own, by_id=lambda _id: None
    )
    assert withdraw is not None and own.stop_announced
    withdraw()
    assert not own.stop_announced


def test_a_stop_session_read_ahead_is_announced_to_the_simulation_found_by_its_id() -> None:
    own = Simulation.load("scenario_tutorial", mode="manual")
    other = Simulation.load("scenario_tutorial", mode="manual")
    data = encode_client_frame(StopSession(id=1, session_id="other"), Encoding.JSON)
    withdraw = preempt.announce_stop(
        data, max_bytes=1 << 16, allowed=ALLOWED, own=own, by_id={"other": other}.get
    )
    assert withdraw is not None and other.stop_announced and not own.stop_announced
    withdraw()


def test_a_stop_session_of_an_unknown_id_announces_nothing() -> None:
    own = Simulation.load("scenario_tutorial", mode="manual")
    data = encode_client_frame(StopSession(id=1, session_id="nobody"), Encoding.JSON)
    assert (
        preempt.announce_stop(data, max_bytes=1 << 16, allowed=ALLOWED, own=own, by_id={}.get)
        is None
    )
    assert not own.stop_announced
