"""A sweep's figures per scenario and per split: what the HTML index and `bench report`'s
terminal summary both show, computed once from the report's rows (no I/O, no HTML).

Per scenario, over its runs with a verdict (`n` of them, `c` passed), at `k` the sweep's
smallest `n` (so every scenario is measured at the same k):

* `pass@k`: the chance that at least one of k runs drawn from the n passes,
  `1 - C(n-c, k) / C(n, k)` (the unbiased estimator of Chen et al., 2021);
* `pass^k`: the chance that all k pass, `C(c, k) / C(n, k)` (tau-bench's reliability figure).

A split's (and the sweep's) pass@k and pass^k are the means over its scenarios; its pass rate
is ARE's `success_rate`, passed over runs with a verdict. Runs without a verdict count in
`runs` only. Scenarios are ordered failures first: the lowest share passed, then by split and
id, which is the order people read a sweep in (what broke, then what held).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from math import comb
from statistics import median
from typing import Protocol


class RunFigures(Protocol):
    """What the summary needs of one run (the report's `Row`)."""

    @property
    def split(self) -> str | None: ...
    @property
    def scenario_id(self) -> str: ...
    @property
    def run_number(self) -> int | None: ...
    @property
    def success(self) -> bool | None: ...


NO_SPLIT = "(no split)"


def pass_at_k(n: int, c: int, k: int) -> float | None:
    """The chance that at least one of `k` of `n` runs (`c` passed) passes; None when k > n."""
    if k < 1 or k > n:
        return None
    return 1.0 - comb(n - c, k) / comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float | None:
    """The chance that all `k` of `n` runs (`c` passed) pass; None when k > n."""
    if k < 1 or k > n:
        return None
    return comb(c, k) / comb(n, k)


@dataclass
class ScenarioFigures:
    """One scenario's runs and what they add up to."""

    split: str
    scenario_id: str
    runs: list[RunFigures] = field(default_factory=list)

    @property
    def passed(self) -> int:
        return sum(1 for run in self.runs if run.success is True)

    @property
    def judged(self) -> int:
        return sum(1 for run in self.runs if run.success is not None)

    @property
    def verdict(self) -> str:
        """passed (every judged run), failed (none), mixed (some), none (no verdict)."""
        if self.judged == 0:
            return "none"
        if self.passed == self.judged:
            return "passed"
        return "failed" if self.passed == 0 else "mixed"

    def pass_at(self, k: int) -> float | None:
        return pass_at_k(self.judged, self.passed, k)

    def pass_hat(self, k: int) -> float | None:
        return pass_hat_k(self.judged, self.passed, k)


@dataclass
class SplitFigures:
    """One split's scenarios (or the whole sweep's, `name` "Overall")."""

    name: str
    scenarios: list[ScenarioFigures]
    k: int

    @property
    def runs(self) -> int:
        return sum(len(s.runs) for s in self.scenarios)

    @property
    def passed(self) -> int:
        return sum(s.passed for s in self.scenarios)

    @property
    def judged(self) -> int:
        return sum(s.judged for s in self.scenarios)

    @property
    def rate(self) -> float | None:
        """Percent passed of the runs with a verdict (ARE's `success_rate`)."""
        return None if self.judged == 0 else 100.0 * self.passed / self.judged

    @property
    def pass_at(self) -> float | None:
        return _mean(s.pass_at(self.k) for s in self.scenarios)

    @property
    def pass_hat(self) -> float | None:
        return _mean(s.pass_hat(self.k) for s in self.scenarios)


@dataclass
class Summary:
    """A sweep: its scenarios failures first, its splits by name, and the overall figures."""

    scenarios: list[ScenarioFigures]
    splits: list[SplitFigures]
    overall: SplitFigures
    k: int


def summarize(rows: Iterable[RunFigures]) -> Summary:
    """Group `rows` by scenario (and split), measured at the smallest judged run count."""
    groups: dict[tuple[str, str], ScenarioFigures] = {}
    for row in rows:
        split = row.split or NO_SPLIT
        groups.setdefault((split, row.scenario_id), ScenarioFigures(split, row.scenario_id))
        groups[(split, row.scenario_id)].runs.append(row)
    for group in groups.values():
        group.runs.sort(key=lambda run: run.run_number or 0)
    judged = [g.judged for g in groups.values() if g.judged]
    k = min(judged) if judged else 1
    scenarios = sorted(groups.values(), key=failures_first)
    names = sorted({g.split for g in scenarios})
    splits = [SplitFigures(name, [s for s in scenarios if s.split == name], k) for name in names]
    return Summary(scenarios, splits, SplitFigures("Overall", scenarios, k), k)


def failures_first(scenario: ScenarioFigures) -> tuple[float, str, str]:
    share = scenario.passed / scenario.judged if scenario.judged else 2.0  # no verdict: last
    return (share, scenario.split, scenario.scenario_id)


def _mean(values: Iterable[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def percent(value: float | None) -> str:
    """A share (0..1) or a percentage already scaled, as text: "n/a" when there is none."""
    return "n/a" if value is None else f"{value:.1f}%"


def share(value: float | None) -> str:
    """A probability (0..1) as a percentage."""
    return "n/a" if value is None else f"{100.0 * value:.1f}%"


def middle(values: Sequence[float]) -> float | None:
    return median(values) if values else None


def terminal_text(summary: Summary, *, failing: int = 10) -> str:
    """The sweep in a terminal: per split and overall (runs, passed, pass rate, pass@k,
    pass^k), then up to `failing` scenarios that did not pass every run, worst first."""
    k = summary.k
    header = f"{'split':<20} {'scenarios':>9} {'runs':>6} {'passed':>7} {'rate':>7}"
    header += f" {f'pass@{k}':>8} {f'pass^{k}':>8}"
    lines = [header]
    for figures in [*summary.splits, summary.overall]:
        lines.append(
            f"{figures.name[:20]:<20} {len(figures.scenarios):>9} {figures.runs:>6} "
            f"{figures.passed:>7} {percent(figures.rate):>7} {share(figures.pass_at):>8} "
            f"{share(figures.pass_hat):>8}"
        )
    broken = [s for s in summary.scenarios if s.verdict in ("failed", "mixed")]
    if broken:
        lines.append("")
        lines.append(f"Not passed every run ({len(broken)} scenarios, worst first):")
        for scenario in broken[:failing]:
            lines.append(
                f"  {scenario.passed}/{scenario.judged} passed  {scenario.split}/"
                f"{scenario.scenario_id}"
            )
        if len(broken) > failing:
            lines.append(f"  ... and {len(broken) - failing} more (see the report)")
    return "\n".join(lines)
