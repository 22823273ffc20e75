"""The router's negative cache (`cluster/misses.py`), sans-I/O, on an injected clock."""

from __future__ import annotations

import pytest

from areasync.cluster.misses import Misses


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_an_id_that_missed_is_remembered_until_its_ttl_passes() -> None:
    clock = Clock()
    misses = Misses(ttl=5.0, clock=clock)
    misses.add("nope")
    clock.now = 4.9
    assert "nope" in misses
    clock.now = 5.0
    assert "nope" not in misses and len(misses) == 0


def test_the_cache_holds_at_most_its_size_and_drops_the_oldest_first() -> None:
    misses = Misses(size=3, clock=Clock())
    for n in range(5):
        misses.add(f"id-{n}")
    assert len(misses) == 3
    assert "id-0" not in misses and "id-1" not in misses and "id-4" in misses


def test_an_id_the_router_learns_leaves_the_cache() -> None:
    misses = Misses(clock=Clock())
    misses.add("late")
    misses.discard("late")
    assert "late" not in misses


def test_a_miss_again_starts_its_ttl_again() -> None:
    clock = Clock()
    misses = Misses(ttl=5.0, clock=clock)
    misses.add("again")
    clock.now = 4.0
    misses.add("again")
    clock.now = 8.0
    assert "again" in misses


@pytest.mark.parametrize(("size", "ttl"), [(0, 5.0), (10, 0.0)])
def test_a_cache_without_room_or_time_is_refused(size: int, ttl: float) -> None:
    with pytest.raises(ValueError, match="size >= 1 and ttl > 0"):
        Misses(size=size, ttl=ttl)
