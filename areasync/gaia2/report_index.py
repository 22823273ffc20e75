"""The report's index page (`index.html`): what people share of a sweep.

One row per scenario, failures first (`summary.py`): its verdict over its runs, k/n passed,
pass@k and pass^k, medians of simulated time and tool calls; a row opens (a `<details>`, so
it works with scripts off) onto the reasons its runs failed, each said once with the runs it
covers, and its runs, each linking to its trace page. Above them, the pass rate per split as
a table and a chart, and the distributions of simulated time, tool calls and tokens over runs
(`report_charts.py`). Filters by split, verdict and scenario id and a sort are the page's one
script (`SCRIPT`, allowed by its hash): it only hides and reorders rows the page already
holds; without it, every row shows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from areasync.gaia2.report_charts import Rate, histogram_svg, pass_rate_svg
from areasync.gaia2.report_html import (
    duration_text,
    h,
    href,
    page,
    pre,
    verdict_badge,
)
from areasync.gaia2.summary import (
    NO_SPLIT,
    ScenarioFigures,
    Summary,
    middle,
    percent,
    share,
    summarize,
)

INDEX_HTML = "index.html"


@dataclass(frozen=True)
class Row:
    """What the index shows of one run."""

    split: str | None
    scenario_id: str
    run_number: int | None
    success: bool | None
    status: str
    llm_calls: int | None
    tool_calls: int | None
    tokens: int | None
    duration: float | None
    rationale: str | None
    page: Path
    model: str | None


VERDICTS = {
    "failed": ("FAILED ALL", "fail", "every run with a verdict failed"),
    "mixed": ("MIXED", "mixed", "some runs passed, some failed"),
    "passed": ("PASSED ALL", "pass", "every run with a verdict passed"),
    "none": ("NO VERDICT", "none", "no run got a verdict"),
}

SCRIPT = """(() => {
  const $ = (id) => document.getElementById(id);
  const list = $("scenarios");
  const items = [...list.querySelectorAll("details.scenario")];
  const apply = () => {
    const split = $("f-split").value;
    const verdict = $("f-verdict").value;
    const text = $("f-scenario").value.trim().toLowerCase();
    let shown = 0;
    for (const item of items) {
      const d = item.dataset;
      const notPassed = verdict === "not-passed" && d.verdict !== "passed";
      const ok = (!split || d.split === split) &&
        (!verdict || d.verdict === verdict || notPassed) &&
        (!text || d.scenario.toLowerCase().includes(text));
      item.hidden = !ok;
      if (ok) shown += 1;
    }
    $("f-count").textContent = `${shown} of ${items.length} scenarios`;
  };
  const sort = () => {
    const key = $("f-sort").value;
    const rank = (a, b) => Number(a.dataset.rank) - Number(b.dataset.rank);
    const byKey = (a, b) => a.dataset[key].localeCompare(b.dataset[key]) || rank(a, b);
    const by = key === "failures" ? rank : byKey;
    list.append(...[...items].sort(by));
  };
  for (const id of ["f-split", "f-verdict", "f-scenario"]) $(id).addEventListener("input", apply);
  $("f-sort").addEventListener("input", sort);
  const target = decodeURIComponent(location.hash.slice(1));
  const opened = target && document.getElementById(target);
  if (opened && opened.matches("details.scenario")) opened.open = true;
  apply();
})();"""


def scenario_anchor(split: str | None, scenario_id: str) -> str:
    """The id of a scenario's row: trace pages link back to it (`index.html#...`)."""
    return f"s-{split or NO_SPLIT}-{scenario_id}"


def _whole(value: float) -> str:
    return f"{value:,.0f}"


def _number(value: float | int | None) -> str:
    return "" if value is None else f"{value:,.0f}"


def render_index(
    output_dir: Path,
    rows: Sequence[Row],
    stats: dict[str, Any] | None,
    skipped: Sequence[str] = (),
) -> tuple[str, Summary]:
    """The index page, and the summary whose order (failures first) the trace pages follow."""
    summary = summarize(rows)
    k = summary.k
    models = sorted({row.model for row in rows if row.model})
    overall = summary.overall
    body = [
        f"<h1>Gaia2 results: {h(output_dir.resolve().name)}</h1>",
        f'<p class="meta">{len(rows)} runs of {len(summary.scenarios)} scenarios'
        + (f" · model {h(', '.join(models))}" if models else "")
        + f" · pass rate {h(percent(overall.rate))} · pass@{k} {h(share(overall.pass_at))}"
        f" · pass^{k} {h(share(overall.pass_hat))}</p>",
    ]
    body += _notices(rows, stats, skipped)
    body.append("<h2>Pass rate</h2>")
    rates = [Rate(s.name, s.passed, s.judged) for s in summary.splits]
    body.append(f'<div class="charts">{pass_rate_svg("chart-pass-rate", rates)}</div>')
    body.append(_rates_table(summary))
    body.append('<h2>Distributions over runs</h2><div class="charts">')
    durations = [r.duration for r in rows if r.duration is not None]
    body.append(histogram_svg("dist-sim-time", "Simulated time", durations, duration_text))
    calls = [float(r.tool_calls) for r in rows if r.tool_calls is not None]
    body.append(histogram_svg("dist-tool-calls", "Tool calls", calls, _whole, whole=True))
    tokens = [float(r.tokens) for r in rows if r.tokens is not None]
    body.append(histogram_svg("dist-tokens", "LLM tokens", tokens, _whole, whole=True))
    body.append("</div>")
    body.append("<h2>Scenarios</h2>")
    body.append(_filters(summary))
    body.append(
        f'<div class="scn-head"><span>Verdict</span><span>Split</span><span>Scenario</span>'
        f'<span class="num">Passed</span><span class="num">pass@{k}</span>'
        f'<span class="num">pass^{k}</span><span class="num">Sim. time</span>'
        '<span class="num">Tool calls</span></div><div id="scenarios">'
    )
    for rank, scenario in enumerate(summary.scenarios):
        body.append(_scenario(output_dir, scenario, k, rank))
    body.append(
        '</div><p class="meta">Passed: runs passed of runs with a verdict. pass@k: the chance '
        "that at least one of k runs passes; pass^k: that all k pass (unbiased estimates from "
        f"the scenario's runs, k = {k}, the fewest runs with a verdict of any scenario). Sim. "
        "time and tool calls: medians over its runs.</p>"
    )
    return page(f"Gaia2 results: {output_dir.resolve().name}", body, SCRIPT), summary


def _notices(
    rows: Sequence[Row], stats: dict[str, Any] | None, skipped: Sequence[str]
) -> list[str]:
    body = []
    if skipped:
        body.append(
            f'<p class="notice">{len(skipped)} line(s) of output.jsonl are not result rows of '
            "ARE's and were skipped:</p><ul>"
            + "".join(f"<li>{pre(why)}</li>" for why in skipped)
            + "</ul>"
        )
    counted = ((stats or {}).get("statistics") or {}).get("global", {}).get("total_runs")
    if isinstance(counted, int) and counted != len(rows):
        body.append(
            f'<p class="notice">ARE\'s benchmark_stats.json counts {counted} runs, this directory '
            f"holds {len(rows)}: traces of an earlier run in the same --output_dir, or runs whose "
            "trace was not written.</p>"
        )
    return body


def _rates_table(summary: Summary) -> str:
    k = summary.k
    parts = [
        '<table id="pass-rates"><thead><tr><th>Split</th><th class="num">Scenarios</th>'
        '<th class="num">Runs</th><th class="num">Passed</th><th class="num">Failed</th>'
        '<th class="num">No verdict</th><th class="num">Pass rate</th>'
        f'<th class="num">pass@{k}</th><th class="num">pass^{k}</th></tr></thead><tbody>'
    ]
    for figures in [*summary.splits, summary.overall]:
        css = ' class="overall"' if figures is summary.overall else ""
        failed = figures.judged - figures.passed
        parts.append(
            f'<tr{css}><td>{h(figures.name)}</td><td class="num">{len(figures.scenarios)}</td>'
            f'<td class="num">{figures.runs}</td><td class="num">{figures.passed}</td>'
            f'<td class="num">{failed}</td><td class="num">{figures.runs - figures.judged}</td>'
            f'<td class="num">{h(percent(figures.rate))}</td>'
            f'<td class="num">{h(share(figures.pass_at))}</td>'
            f'<td class="num">{h(share(figures.pass_hat))}</td></tr>'
        )
    parts.append("</tbody></table>")
    return "".join(parts)


def _filters(summary: Summary) -> str:
    splits = "".join(f'<option value="{h(s.name)}">{h(s.name)}</option>' for s in summary.splits)
    verdicts = "".join(
        f'<option value="{key}" title="{h(why)}">{h(label.lower())}</option>'
        for key, (label, _, why) in VERDICTS.items()
    )
    return (
        '<div class="filters" id="filters"><label>Split <select id="f-split">'
        f'<option value="">all splits</option>{splits}</select></label>'
        '<label>Verdict <select id="f-verdict"><option value="">all verdicts</option>'
        '<option value="not-passed">not passed every run</option>'
        f"{verdicts}</select></label>"
        '<label>Scenario <input id="f-scenario" type="search" placeholder="id contains…">'
        '</label><label>Sort <select id="f-sort"><option value="failures">failures first'
        '</option><option value="scenario">scenario id</option><option value="split">split'
        f'</option></select></label><span id="f-count" class="meta">{len(summary.scenarios)} '
        "scenarios</span></div>"
    )


def _scenario(output_dir: Path, scenario: ScenarioFigures, k: int, rank: int) -> str:
    label, css, why = VERDICTS[scenario.verdict]
    runs: list[Row] = [run for run in scenario.runs if isinstance(run, Row)]
    durations = [r.duration for r in runs if r.duration is not None]
    calls = [float(r.tool_calls) for r in runs if r.tool_calls is not None]
    anchor = scenario_anchor(scenario.split, scenario.scenario_id)
    parts = [
        f'<details class="scenario" id="{h(anchor)}" data-split="{h(scenario.split)}" '
        f'data-verdict="{scenario.verdict}" data-scenario="{h(scenario.scenario_id)}" '
        f'data-rank="{rank}"><summary><span><span class="verdict {css}" title="{h(why)}">'
        f"{label}</span></span><span>{h(scenario.split)}</span>"
        f'<span class="sid">{h(scenario.scenario_id)}</span>'
        f'<span class="num passed">{scenario.passed}/{scenario.judged}</span>'
        f'<span class="num">{h(share(scenario.pass_at(k)))}</span>'
        f'<span class="num">{h(share(scenario.pass_hat(k)))}</span>'
        f'<span class="num">{h(duration_text(middle(durations)))}</span>'
        f'<span class="num">{h(_number(middle(calls)))}</span></summary><div class="scn-body">'
    ]
    parts.append(_reasons(runs))
    parts.append(
        '<table class="runs"><thead><tr><th class="num">Run</th><th>Verdict</th>'
        '<th class="num">LLM calls</th><th class="num">Tool calls</th><th class="num">Tokens'
        '</th><th class="num">Sim. time</th><th>Trace</th></tr></thead><tbody>'
    )
    for run in runs:
        number = "" if run.run_number is None else run.run_number
        parts.append(
            f'<tr><td class="num">{h(number)}</td><td>{verdict_badge(run.success)}</td>'
            f'<td class="num">{h(_number(run.llm_calls))}</td>'
            f'<td class="num">{h(_number(run.tool_calls))}</td>'
            f'<td class="num">{h(_number(run.tokens))}</td>'
            f'<td class="num">{h(duration_text(run.duration))}</td>'
            f'<td><a href="{href(run.page, output_dir)}">{h(scenario.scenario_id)} run '
            f"{h(number)}</a></td></tr>"
        )
    parts.append("</tbody></table></div></details>")
    return "".join(parts)


def _reasons(runs: Sequence[Row]) -> str:
    """Why its runs did not pass, each reason once, with the runs it covers."""
    reasons: dict[str, list[str]] = {}
    for run in runs:
        if run.success is True:
            continue
        text = run.rationale or run.status
        reasons.setdefault(text, []).append("?" if run.run_number is None else str(run.run_number))
    if not reasons:
        return ""
    items = [
        f'<li><span class="count">{len(numbers)} run{"" if len(numbers) == 1 else "s"} '
        f"({h(', '.join(numbers))})</span>{pre(text)}</li>"
        for text, numbers in sorted(reasons.items(), key=lambda item: -len(item[1]))
    ]
    return f'<div class="reasons"><h4>Why runs did not pass</h4><ul>{"".join(items)}</ul></div>'
