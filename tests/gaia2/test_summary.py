"""A sweep's per-scenario figures: pass@k and pass^k as the unbiased estimates from n runs,
scenarios ordered failures first, k the fewest judged runs of any scenario."""

from __future__ import annotations

from dataclasses import dataclass
from math import comb

import pytest

from areasync.gaia2.summary import pass_at_k, pass_hat_k, summarize


@dataclass(frozen=True)
class Run:
    split: str | None
    scenario_id: str
    run_number: int | None
    success: bool | None


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        (8, 0, 8, 0.0),
        (8, 1, 8, 1.0),
        (8, 8, 1, 1.0),
        (4, 2, 2, 1 - 1 / comb(4, 2)),
        (8, 3, 9, None),
    ],
)
def test_pass_at_k_is_the_chance_that_one_of_k_runs_passes(
    n: int, c: int, k: int, expected: float | None
) -> None:
    assert pass_at_k(n, c, k) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [(8, 8, 8, 1.0), (8, 7, 8, 0.0), (8, 4, 2, comb(4, 2) / comb(8, 2)), (8, 3, 9, None)],
)
def test_pass_hat_k_is_the_chance_that_all_k_runs_pass(
    n: int, c: int, k: int, expected: float | None
) -> None:
    assert pass_hat_k(n, c, k) == pytest.approx(expected)


def test_scenarios_come_failures_first_measured_at_the_fewest_judged_runs() -> None:
    runs = [Run("a", "good", i, True) for i in range(3)]
    runs += [Run("a", "half", i, i % 2 == 0) for i in range(4)]
    runs += [Run("b", "bad", i, False) for i in range(3)] + [Run("b", "bad", 9, None)]
    summary = summarize(runs)
    assert summary.k == 3
    assert [(s.scenario_id, s.verdict) for s in summary.scenarios] == [
        ("bad", "failed"),
        ("half", "mixed"),
        ("good", "passed"),
    ]
    assert [(s.name, s.runs, s.passed, s.judged) for s in summary.splits] == [
        ("a", 7, 5, 7),
        ("b", 4, 0, 3),
    ]
    assert summary.overall.rate == pytest.approx(100 * 5 / 10)
