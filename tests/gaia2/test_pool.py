"""`pool.stream_pool`: ARE's `stream_pool` contract with every item a cooperative task."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from areasync.gaia2.cooperative import wait
from areasync.gaia2.pool import run_cooperatively, stream_pool
from tests.waiting import WITHIN_S


def run(fn: Callable[[], Any]) -> Any:
    return anyio.run(run_cooperatively, fn)


class Load:
    """A process_func counting overlap: a run of an item in `stuck` waits until cancelled, the
    others yield once; with `together`, each run first waits until that many have run at once
    (the wait bounded by WITHIN_S: a pool that never runs as many fails, it does not hang)."""

    def __init__(self, stuck: frozenset[int] = frozenset(), *, together: int = 0) -> None:
        self.stuck = stuck
        self.together = together
        self.all_in = anyio.Event()
        self.running = 0
        self.peak = 0
        self.finished: list[int] = []

    def __call__(self, item: int) -> int:
        self.running += 1
        self.peak = max(self.peak, self.running)
        if self.peak >= self.together:
            self.all_in.set()
        try:
            wait(self._run(item))
        finally:
            self.running -= 1
        self.finished.append(item)
        return item * 10

    async def _run(self, item: int) -> None:
        with anyio.fail_after(WITHIN_S):
            await self.all_in.wait()
        if item in self.stuck:
            await anyio.sleep_forever()
        await anyio.lowlevel.checkpoint()


def test_outcomes_come_as_runs_finish_with_their_results() -> None:
    # Runs finish in the order 2, 3, 1, whatever their start order: each opens the next one's
    # gate as it finishes (no timing involved).
    gates = {1: anyio.Event(), 3: anyio.Event()}
    opens = {2: 3, 3: 1}

    def process(item: int) -> int:
        if item in gates:
            wait(gates[item].wait())
        if item in opens:
            gates[opens[item]].set()
        return item * 10

    def main() -> list[Any]:
        with stream_pool(iter([1, 2, 3]), process, max_workers=3) as outcomes:
            return list(outcomes)

    assert run(main) == [(2, 20, None), (3, 30, None), (1, 10, None)]


def test_at_most_max_workers_run_at_once_and_all_run() -> None:
    load = Load(together=3)  # the first three wait for each other

    def main() -> list[Any]:
        with stream_pool(iter(range(10)), load, max_workers=3) as outcomes:
            return list(outcomes)

    outcomes = run(main)
    assert sorted(item for item, _, _ in outcomes) == list(range(10))
    assert load.peak == 3


def test_keyword_arguments_reach_every_run() -> None:
    def process(item: int, *, scale: float) -> float:
        return item * scale

    def main() -> list[Any]:
        with stream_pool(iter([1, 2]), process, max_workers=2, scale=0.5) as outcomes:
            return list(outcomes)

    assert sorted(run(main)) == [(1, 0.5, None), (2, 1.0, None)]


def test_a_failing_run_is_an_outcome_and_the_others_go_on() -> None:
    def process(item: int) -> int:
        wait(anyio.lowlevel.checkpoint())
        if item == 2:
            raise ValueError("item 2 is bad")
        return item

    def main() -> list[Any]:
        with stream_pool(iter([1, 2, 3]), process, max_workers=2) as outcomes:
            return list(outcomes)

    outcomes = {item: (result, error) for item, result, error in run(main)}
    assert outcomes[1] == (1, None) and outcomes[3] == (3, None)
    result, error = outcomes[2]
    assert result is None and isinstance(error, ValueError)


def test_a_run_past_its_timeout_gives_ares_timeout_error_and_is_stopped() -> None:
    load = Load(frozenset({1}))

    def main() -> list[Any]:
        with stream_pool(iter([1, 2]), load, max_workers=2, timeout_seconds=0.05) as outcomes:
            return list(outcomes)

    outcomes = {item: (result, error) for item, result, error in run(main)}
    assert outcomes[2] == (20, None)
    result, error = outcomes[1]
    assert result is None and isinstance(error, TimeoutError)
    assert str(error) == "Operation timed out after 0.05 seconds"
    assert load.finished == [2] and load.running == 0


def test_a_runs_own_timeout_error_is_its_own_outcome() -> None:
    """Only the pool's deadline reads as the pool's timeout; a run's own is left as it is."""

    def process(item: int) -> int:
        wait(anyio.lowlevel.checkpoint())
        raise TimeoutError("the run's socket read timed out")

    def main() -> list[Any]:
        with stream_pool(iter([1]), process, max_workers=1, timeout_seconds=60) as outcomes:
            return list(outcomes)

    [(item, result, error)] = run(main)
    assert (item, result, str(error)) == (1, None, "the run's socket read timed out")


def test_leaving_early_cancels_the_runs_still_going_and_waits_for_them() -> None:
    load = Load(frozenset({2, 3}))
    started: list[int] = []

    def items() -> Iterator[int]:
        for item in (1, 2, 3, 4):
            started.append(item)
            yield item

    def main() -> Any:
        with stream_pool(items(), load, max_workers=3) as outcomes:
            first = next(outcomes)
        return first, load.running

    first, running_after = run(main)
    assert first == (1, 10, None)
    # The freed slot was refilled before the outcome was handed out (as ARE's pool does);
    # leaving cancelled 2, 3 and 4 and waited until they unwound.
    assert started == [1, 2, 3, 4]
    assert running_after == 0 and load.finished == [1]


def test_outside_run_cooperatively_is_a_clear_error() -> None:
    with (
        pytest.raises(RuntimeError, match="run_cooperatively"),
        stream_pool(iter([1]), Load(), max_workers=1),
    ):
        pass


def test_max_workers_below_one_is_refused() -> None:
    def main() -> None:
        with stream_pool(iter([1]), Load(), max_workers=0):
            pass

    with pytest.raises(ValueError, match="at least 1"):
        run(main)
