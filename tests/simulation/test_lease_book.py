"""`Leases`: who is busy and until when, on wall times passed in (no clock, no simulation)."""

from __future__ import annotations

from areasync.simulation.leases import Leases


def test_a_lease_lasts_its_timeout_from_when_it_began() -> None:
    leases = Leases(timeout=10.0)
    leases.begin("agent", now=100.0)
    assert leases.deadlines() == {"agent": 110.0}


def test_beginning_a_held_lease_again_starts_it_over() -> None:
    leases = Leases(timeout=10.0)
    leases.begin("agent", now=100.0)
    leases.begin("agent", now=105.0)
    assert leases.deadlines() == {"agent": 115.0} and len(leases) == 1


def test_ending_a_lease_says_whether_one_was_held() -> None:
    leases = Leases(timeout=10.0)
    leases.begin("agent", now=0.0)
    assert leases.end("agent") is True
    assert leases.end("agent") is False
    assert not leases


def test_expire_ends_exactly_the_leases_past_their_deadline() -> None:
    leases = Leases(timeout=10.0)
    leases.begin("early", now=0.0)
    leases.begin("late", now=5.0)
    assert leases.expire(now=10.0) == ["early"]
    assert leases.deadlines() == {"late": 15.0}


def test_the_next_deadline_is_the_earliest_one_or_none() -> None:
    leases = Leases(timeout=10.0)
    assert leases.next_deadline() is None
    leases.begin("b", now=3.0)
    leases.begin("a", now=1.0)
    assert leases.next_deadline() == 11.0
