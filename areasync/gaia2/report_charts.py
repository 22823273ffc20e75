"""The report's charts as inline SVG, drawn when the report is written: pass rate per split
(bars) and the distribution of a figure over runs (a histogram). Drawn here rather than by a
charting library in the page so that the shared file stays one file that needs no script to
show them; each bar carries its numbers in `data-` attributes and a `<title>` tooltip, which is
what a reader hovers and what the tests read.

Bins are "nice" (1, 2 or 5 times a power of ten wide, at most `MAX_BINS` of them, whole
numbers for counts) so that their edges read as round figures.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from areasync.gaia2.report_html import h

MAX_BINS = 12
WIDTH = 360
BAR_HEIGHT = 18


@dataclass(frozen=True)
class Bin:
    """Values in [lo, hi) (the last bin includes hi) and how many runs had them."""

    lo: float
    hi: float
    count: int


def nice_step(span: float, bins: int, whole: bool) -> float:
    """The smallest 1/2/5 x 10^n step that covers `span` in at most `bins` bins."""
    if span <= 0:
        return 1.0
    raw = span / bins
    power = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 5, 10):
        step = factor * power
        if step >= raw:
            break
    return max(step, 1.0) if whole else step


def histogram(values: Sequence[float], *, whole: bool = False) -> list[Bin]:
    """`values` counted in nice bins from a round floor to past the largest value."""
    if not values:
        return []
    low, high = min(values), max(values)
    step = nice_step(high - low, MAX_BINS, whole)
    start = math.floor(low / step) * step
    count = max(1, math.floor((high - start) / step) + 1)
    counts = [0] * count
    for value in values:
        counts[min(count - 1, int((value - start) // step))] += 1
    return [Bin(start + i * step, start + (i + 1) * step, n) for i, n in enumerate(counts)]


def histogram_svg(
    figure_id: str,
    title: str,
    values: Sequence[float],
    label: Callable[[float], str],
    *,
    whole: bool = False,
) -> str:
    """A figure with a histogram of `values` (a run each), its edges shown by `label`."""
    bins = histogram(values, whole=whole)
    caption = f"{h(title)}: {len(values)} runs"
    if not bins:
        return f'<figure id="{h(figure_id)}"><figcaption>{caption}: no data</figcaption></figure>'
    height, top, bottom = 130, 14, 22
    plot = height - top - bottom
    tallest = max(b.count for b in bins)
    width = (WIDTH - 20) / len(bins)
    parts = [
        f'<figure id="{h(figure_id)}" class="histogram"><svg width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" role="img" aria-label="{h(title)}">',
        f'<line class="axis" x1="10" y1="{top + plot}" x2="{WIDTH - 10}" y2="{top + plot}"/>',
    ]
    for i, b in enumerate(bins):
        bar = plot * b.count / tallest
        x = 10 + i * width
        what = f"{b.count} run{'' if b.count == 1 else 's'}: {label(b.lo)} to {label(b.hi)}"
        parts.append(
            f'<rect class="bar" x="{x + 1:.1f}" y="{top + plot - bar:.1f}" width="{width - 2:.1f}"'
            f' height="{bar:.1f}" data-lo="{b.lo:g}" data-hi="{b.hi:g}" data-count="{b.count}">'
            f"<title>{h(what)}</title></rect>"
        )
        if b.count:
            parts.append(
                f'<text x="{x + width / 2:.1f}" y="{top + plot - bar - 3:.1f}" '
                f'text-anchor="middle">{b.count}</text>'
            )
    parts.append(
        f'<text x="10" y="{height - 6}">{h(label(bins[0].lo))}</text>'
        f'<text x="{WIDTH - 10}" y="{height - 6}" text-anchor="end">{h(label(bins[-1].hi))}'
        "</text></svg>"
    )
    parts.append(f"<figcaption>{caption}</figcaption></figure>")
    return "".join(parts)


@dataclass(frozen=True)
class Rate:
    """One bar of the pass-rate chart."""

    name: str
    passed: int
    judged: int

    @property
    def rate(self) -> float | None:
        return None if self.judged == 0 else 100.0 * self.passed / self.judged


def pass_rate_svg(figure_id: str, rates: Sequence[Rate]) -> str:
    """Horizontal bars, one per split: the share of its judged runs that passed."""
    label_width, bar_width = 130, WIDTH - 130 - 90
    height = 8 + len(rates) * (BAR_HEIGHT + 8)
    parts = [
        f'<figure id="{h(figure_id)}"><svg width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" role="img" aria-label="Pass rate per split">'
    ]
    for i, r in enumerate(rates):
        y = 6 + i * (BAR_HEIGHT + 8)
        share = (r.rate or 0.0) / 100.0
        text = "n/a" if r.rate is None else f"{r.rate:.1f}% ({r.passed}/{r.judged})"
        parts.append(
            f'<text x="{label_width - 6}" y="{y + 13}" text-anchor="end">{h(r.name[:20])}</text>'
            f'<rect class="track" x="{label_width}" y="{y}" width="{bar_width}" '
            f'height="{BAR_HEIGHT}"/><rect class="bar pass" x="{label_width}" y="{y}" '
            f'width="{bar_width * share:.1f}" height="{BAR_HEIGHT}" data-split="{h(r.name)}" '
            f'data-rate="{"" if r.rate is None else f"{r.rate:.1f}"}" data-passed="{r.passed}" '
            f'data-judged="{r.judged}"><title>{h(r.name)}: {h(text)}</title></rect>'
            f'<text x="{label_width + bar_width + 6}" y="{y + 13}">{h(text)}</text>'
        )
    parts.append(
        "</svg><figcaption>Pass rate per split: passed over runs with a verdict (ARE's "
        "success_rate)</figcaption></figure>"
    )
    return "".join(parts)
