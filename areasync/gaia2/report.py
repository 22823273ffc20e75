"""A static HTML report of a Gaia2 benchmark output directory, to open from disk or share.

`write_report(output_dir)` reads what ARE wrote there (`areasync.gaia2.runs`: `output.jsonl`
and the exporter's traces; so `are-benchmark run`'s output too) and writes

* `OUTPUT_DIR/index.html` (`report_index.py`): the pass rate per split and overall (as ARE's
  `success_rate`: passed over runs with a verdict; runs without one are counted apart) with
  pass@k and pass^k (`summary.py`), a chart of it and the distributions of simulated time,
  tool calls and tokens, and a row per scenario, failures first, opening onto its runs and
  the reasons they failed, with filters by split, verdict and scenario;
* `trace.html` in each run's artifact folder (`artifacts.run_dir`: gaia2-cli's place for it):
  links to the previous and next run (in the index's order) and to its scenario's other runs;
  the judge's verdict and rationale, and for a failed run the calls the judge named, the
  oracle's expected call beside what the agent sent, argument by argument; the agent's steps
  from its conversation (lite trace) - user and environment messages, each LLM call's thought
  and tool call with its arguments, and the tool's result or error; and the run's events from
  the hf trace (user messages, tool calls, environment events with simulated times,
  arguments, return values and errors), linking to the run's `result.json`, `events.jsonl`,
  `trace.jsonl` and ARE's own traces.

The pages need no server, network or font: plain HTML with one inline style sheet and, on the
index, one inline script of ours (filters and sort), each allowed by its hash in a
Content-Security-Policy that allows nothing else (`report_html.py`), so no script of the run's
can run even if something slipped through. Every text from the run (scenario texts, LLM
outputs, tool results: all untrusted) is HTML-escaped.

The directory is read as untrusted input (`runs.py`): a row of `output.jsonl` that is not one of
ARE's is skipped and listed at the top of the index, and no trace outside the directory is
opened.

`python -m areasync.gaia2.report OUTPUT_DIR` (`areasync bench report`) writes gaia2-cli's
artifacts (`areasync.gaia2.artifacts`) and this report in one pass over the traces, prints the
sweep's summary and then the report's file URL; `--no-artifacts` writes the report alone.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from areasync.gaia2.artifacts import (
    EVENTS_JSONL,
    RESULT_JSON,
    TRACE_JSONL,
    agent_response,
    run_dir,
    run_root,
    sim_time,
    write_results,
    write_run,
)
from areasync.gaia2.report_html import duration_text as _duration
from areasync.gaia2.report_html import h, href, json_text, pre, verdict_badge
from areasync.gaia2.report_html import page as html_page
from areasync.gaia2.report_index import INDEX_HTML, Row, render_index, scenario_anchor
from areasync.gaia2.runs import Event, Message, OutputDirError, Run, Usage, iter_runs, read_stats
from areasync.gaia2.summary import ScenarioFigures, Summary, terminal_text

# Where a trace page's links to the other runs go, filled in once the index's order is known.
RUN_NAV = "<!-- run-nav -->"
TRACE_HTML = "trace.html"
NO_SPLIT = "(no split)"


def _offset(t: float | None, start: float | None) -> str:
    """A simulated time as its offset from the scenario's start (+H:MM:SS)."""
    if t is None:
        return ""
    return sim_time(t) if start is None else f"+{_duration(t - start)}"


# -- the agent's conversation, as steps ---------------------------------------------------------


@dataclass(frozen=True)
class Output:
    """An LLM output of ARE's default agent: `Thought: ...` then `Action:` and a JSON blob."""

    thought: str
    tool: str | None
    args: Any
    raw: str


_ACTION = re.compile(r"(?:^|\n)\s*Action:\s*", re.IGNORECASE)


def parse_output(text: str) -> Output:
    """The thought and tool call of an LLM output (tool None when it names none readably)."""
    match = _ACTION.search(text)
    head = text if match is None else text[: match.start()]
    thought = re.sub(r"^\s*Thought:\s*", "", head.strip(), flags=re.IGNORECASE)
    if match is None:
        return Output(thought, None, None, text)
    blob = text[match.end() :].replace("<end_action>", "")
    start, end = blob.find("{"), blob.rfind("}")
    try:
        action = json.loads(blob[start : end + 1]) if 0 <= start < end else None
    except ValueError:
        action = None
    if not isinstance(action, dict) or not isinstance(action.get("action"), str):
        return Output(thought, None, None, text)
    return Output(thought, action["action"], action.get("action_input", {}), text)


_OBSERVATION = re.compile(
    r"^\[OUTPUT OF STEP \d+\] (Observation|ERROR):\s*\n\*\*\*\n(.*?)\n\*\*\*", re.S
)
_USER_KINDS = (
    ("[TASK]:", "user", "User"),
    ("User messages updates:", "user", "User"),
    ("Environment notifications updates:", "environment", "Environment"),
    ("[FACTS LIST]:", "note", "Agent's facts"),
    ("[PLAN]:", "note", "Agent's plan"),
)


def _observation(message: Message) -> tuple[bool, str]:
    """(is an error, text) of a tool response."""
    match = _OBSERVATION.match(message.content)
    if match is None:
        return False, message.content.strip()
    return match.group(1) == "ERROR", match.group(2)


def _usage_text(usage: Usage | None) -> str:
    if usage is None or not (usage.prompt_tokens or usage.completion_tokens):
        return ""
    return f" · {usage.prompt_tokens:,} in / {usage.completion_tokens:,} out tokens"


def render_conversation(
    messages: Sequence[Message], usage: Sequence[Usage], start: float | None
) -> str:
    calls = sum(1 for m in messages if m.role == "assistant")
    per_call = list(usage) if len(usage) == calls else []
    parts = ['<ol class="steps">']
    step = 0
    i = 0
    while i < len(messages):
        message = messages[i]
        when = _offset(message.time, start)
        if message.role == "system":
            parts.append(
                f'<li class="system"><details><summary>System prompt ({len(message.content):,} '
                f"characters)</summary><pre>{h(message.content)}</pre></details></li>"
            )
        elif message.role == "assistant":
            output = parse_output(message.content)
            cost = _usage_text(per_call[step] if per_call else None)
            step += 1
            parts.append(
                f'<li class="step"><div class="label">Step {step} · {h(when)}{h(cost)}</div>'
            )
            if output.thought:
                parts.append(f'<div class="thought">{h(output.thought)}</div>')
            if output.tool is not None:
                args = pre(json_text(output.args), "args")
                parts.append(
                    f'<div class="call"><span class="label">Tool call</span> '
                    f'<span class="tool">{h(output.tool)}</span>{args}</div>'
                )
            elif not output.thought or output.thought != output.raw.strip():
                parts.append(pre(output.raw))
            if i + 1 < len(messages) and messages[i + 1].role == "tool-response":
                i += 1
                error, text = _observation(messages[i])
                parts.append(
                    f'<div class="result{" error" if error else ""}"><span class="label">'
                    f"{'Error' if error else 'Result'}</span>{pre(text)}</div>"
                )
            parts.append("</li>")
        elif message.role == "tool-response":
            error, text = _observation(message)
            parts.append(
                f'<li class="note"><div class="label">{"Error" if error else "Result"} · {h(when)}'
                f"</div>{pre(text)}</li>"
            )
        else:
            css, label = "user", message.role.capitalize() or "Message"
            for prefix, kind, name in _USER_KINDS:
                if message.content.startswith(prefix):
                    css, label = kind, name
                    break
            parts.append(
                f'<li class="{css}"><div class="label">{h(label)} · {h(when)}</div>'
                f"{pre(message.content.strip())}</li>"
            )
        i += 1
    parts.append("</ol>")
    return "".join(parts)


def render_events(events: Sequence[Event], start: float | None) -> str:
    rows = [
        '<table class="events"><thead><tr><th>Time</th><th>Type</th><th>Tool</th><th>Arguments</th>'
        "<th>Result</th></tr></thead><tbody>"
    ]
    css = {"USER": "user", "ENV": "env", "AGENT": "agent"}
    for event in events:
        result = (
            f'<td class="error">{pre("Error: " + event.error)}</td>'
            if event.error
            else f"<td>{'' if event.result is None else pre(_text_or_json(event.result))}</td>"
        )
        rows.append(
            f'<tr class="{css.get(event.event_type, "agent")}"><td>{h(_offset(event.time, start))}'
            f"<br><small>{h(sim_time(event.time))}</small></td><td>{h(event.event_type)}</td>"
            f'<td class="tool">{h(event.tool)}</td><td>{pre(json_text(event.args))}</td>'
            f"{result}</tr>"
        )
    rows.append("</tbody></table>")
    return "".join(rows)


def _text_or_json(value: Any) -> str:
    return value if isinstance(value, str) else json_text(value)


# -- pages --------------------------------------------------------------------------------------


def _title(run: Run) -> str:
    number = f" · run {run.run_number}" if run.run_number is not None else ""
    return f"{run.scenario_id}{number}"


def render_trace_page(output_dir: Path, run: Run, folder: Path) -> str:
    index = output_dir / INDEX_HTML
    start = run.start_time
    if start is None and run.events:
        start = run.events[0].time
    tool_calls = (
        None if run.events is None else sum(1 for e in run.events if e.event_type == "AGENT")
    )
    facts = [
        ("Split", run.split or NO_SPLIT),
        ("Model", run.model),
        ("Agent", run.agent),
        ("Simulated duration", _duration(run.duration)),
        ("Tool calls", tool_calls),
    ]
    body = [
        f'<nav class="runs-nav"><a href="{href(index, folder)}">← All runs</a>{RUN_NAV}</nav>',
        f"<h1>{h(_title(run))} {verdict_badge(run.success)}</h1>",
        '<p class="meta">'
        + " · ".join(f"{h(name)}: {h(value)}" for name, value in facts if value not in (None, ""))
        + "</p>",
        '<h2 id="judge">Judge</h2><table class="judge"><tbody>',
        f"<tr><th>Verdict</th><td>{verdict_badge(run.success)} (ARE: {h(run.status)}, "
        f"score {h('none' if run.score is None else run.score)})</td></tr>",
    ]
    if run.rationale:
        body.append(f"<tr><th>Rationale</th><td>{pre(run.rationale)}</td></tr>")
    if run.exception:
        body.append(f'<tr><th>Error</th><td class="error">{pre(run.exception)}</td></tr>')
    response = agent_response(run)
    if response is not None:
        body.append(f"<tr><th>Agent's last message</th><td>{pre(response)}</td></tr>")
    for problem in run.problems:
        body.append(f'<tr><th>Unreadable trace</th><td class="error">{pre(problem)}</td></tr>')
    if not run.listed:
        body.append(
            "<tr><th>Source</th><td>Not in output.jsonl (ARE rewrites it per dataset config): "
            "the verdict is the trace's.</td></tr>"
        )
    body.append("</tbody></table>")
    body.append(render_expected(run))
    body.append('<h2 id="steps">Agent steps</h2>')
    if run.conversations:
        several = len(run.conversations) > 1
        for agent, messages in run.conversations.items():
            if several:
                body.append(f"<h3>{h(agent)}</h3>")
            body.append(render_conversation(messages, (run.usage or {}).get(agent) or [], start))
    else:
        body.append(
            '<p class="notice">No agent conversation: ARE wrote no lite trace for this run '
            "(<code>--trace_dump_format hf</code>), or no agent ran (<code>--oracle</code>).</p>"
        )
    body.append('<h2 id="events">Events</h2>')
    if run.events is not None:
        body.append(render_events(run.events, start))
    else:
        body.append(
            '<p class="notice">No events: ARE wrote no hf trace for this run '
            "(<code>--trace_dump_format lite</code>).</p>"
        )
    links = [
        (name, folder / name)
        for name in (RESULT_JSON, EVENTS_JSONL, TRACE_JSONL)
        if (folder / name).is_file()
    ] + [
        (f"ARE trace ({kind})", path)
        for kind, path in (("hf", run.hf_trace), ("lite", run.lite_trace))
        if path
    ]
    if links:
        body.append('<h2 id="files">Files</h2><ul>')
        body += [f'<li><a href="{href(path, folder)}">{h(name)}</a></li>' for name, path in links]
        body.append("</ul>")
    return html_page(f"{_title(run)} - Gaia2 trace", body)


# -- what the judge expected, beside what the agent sent ----------------------------------------

_REJECTED = re.compile(
    r"Failure matching agent event \(ID: (?P<agent>[^)]*)\) with oracle event "
    r"\(ID: (?P<oracle>[^)]*)\), reason: (?P<reason>[^\n]*)"
)
_COUNTS = re.compile(
    r"- Tool '(?P<tool>[^']*)': Agent count (?P<agent>\d+), Oracle count (?P<oracle>\d+)"
)
# Attempts the judge made that say nothing about the call itself.
_NOT_SHOWN = frozenset({"already matched"})


@dataclass(frozen=True)
class Mismatch:
    """An oracle call the judge looked for, and what the agent sent instead (either may be
    missing: the agent never made the call, or made one the oracle does not)."""

    why: str
    expected: Event | None
    actual: Event | None


def mismatches(run: Run) -> list[Mismatch]:
    """What the judge's rationale names: each rejected match (its oracle call beside the agent's
    call), and each tool whose calls the agent and the oracle counted differently."""
    text = run.rationale or ""
    oracle = {e.event_id: e for e in run.oracle_calls or []}
    agent = {e.event_id: e for e in run.events or []}
    found = [
        Mismatch(m["reason"], oracle.get(m["oracle"]), agent.get(m["agent"]))
        for m in _REJECTED.finditer(text)
        if m["reason"] not in _NOT_SHOWN and (m["oracle"] in oracle or m["agent"] in agent)
    ]
    for m in _COUNTS.finditer(text):
        tool = m["tool"]
        expected = [e for e in run.oracle_calls or [] if e.tool == tool]
        sent = [e for e in run.events or [] if e.event_type == "AGENT" and e.tool == tool]
        why = f"{tool}: the agent called it {m['agent']} time(s), the oracle {m['oracle']}"
        for i in range(max(len(expected), len(sent))):
            pair = (expected[i] if i < len(expected) else None, sent[i] if i < len(sent) else None)
            found.append(Mismatch(why, *pair))
    return found


def render_expected(run: Run) -> str:
    """The judge's mismatches as tables: the expected call's tool and arguments beside the
    agent's, a row per argument, the rows that differ marked."""
    found = mismatches(run) if run.success is False else []
    if not found:
        return ""
    parts = ['<h2 id="expected">Expected vs. sent</h2>']
    for mismatch in found:
        expected, actual = mismatch.expected, mismatch.actual
        parts.append(
            f'<table class="expected"><caption class="meta">{h(mismatch.why)}</caption><thead>'
            "<tr><th></th><th>Expected (the oracle's call)</th><th>Sent by the agent</th></tr>"
            "</thead><tbody>"
        )
        tools = (expected.tool if expected else None, actual.tool if actual else None)
        parts.append(_expected_row("tool", *tools, missing=expected is None or actual is None))
        names = [*(expected.args if expected else {})]
        names += [n for n in (actual.args if actual else {}) if n not in names]
        for name in names:
            parts.append(
                _expected_row(
                    name,
                    expected.args.get(name) if expected else None,
                    actual.args.get(name) if actual else None,
                    missing=expected is None or actual is None,
                )
            )
        parts.append("</tbody></table>")
    return "".join(parts)


def _expected_row(name: str, expected: Any, actual: Any, *, missing: bool) -> str:
    css = ' class="differs"' if missing or expected != actual else ""
    cells = [
        "<em>not called</em>" if value is None and missing else pre(_text_or_json(value))
        for value in (expected, actual)
    ]
    return f"<tr{css}><th>{h(name)}</th><td>{cells[0]}</td><td>{cells[1]}</td></tr>"


# -- links between runs -------------------------------------------------------------------------


def link_runs(output_dir: Path, summary: Summary) -> None:
    """Fill each trace page's links: the previous and next run in the index's order (failures
    first) and every run of its scenario."""
    ordered: list[tuple[ScenarioFigures, Row]] = [
        (scenario, run)
        for scenario in summary.scenarios
        for run in scenario.runs
        if isinstance(run, Row)
    ]
    index = output_dir / INDEX_HTML
    for i, (scenario, run) in enumerate(ordered):
        folder = run.page.parent
        anchor = quote(scenario_anchor(scenario.split, scenario.scenario_id), safe="._-")
        links = [f'<a href="{href(index, folder)}#{h(anchor)}">↑ {h(scenario.scenario_id)}</a>']
        if i > 0:
            links.append(_run_link("← previous", ordered[i - 1][1], folder))
        if i + 1 < len(ordered):
            links.append(_run_link("next →", ordered[i + 1][1], folder))
        siblings = [
            f"<strong>{h(_run_label(other))}</strong>"
            if other is run
            else f'<a href="{href(other.page, folder)}">{h(_run_label(other))}</a>'
            for other in scenario.runs
            if isinstance(other, Row)
        ]
        links.append(f'<span class="siblings">Runs: {"".join(siblings)}</span>')
        text = run.page.read_text(encoding="utf-8")
        run.page.write_text(text.replace(RUN_NAV, "".join(links), 1), encoding="utf-8")


def _run_label(run: Row) -> str:
    mark = "✓" if run.success is True else "✕" if run.success is False else "?"
    return f"{'' if run.run_number is None else run.run_number}{mark}"


def _run_link(label: str, run: Row, folder: Path) -> str:
    number = "" if run.run_number is None else f" run {run.run_number}"
    return f'<a href="{href(run.page, folder)}">{h(label)}: {h(run.scenario_id)}{h(number)}</a>'


def _tokens(run: Run) -> int | None:
    if not run.usage:
        return None
    return sum(u.total_tokens for calls in run.usage.values() for u in calls)


def write_report(output_dir: Path, *, artifacts: bool = False) -> Path:
    """Write `index.html` and each run's `trace.html`; return the index's path.

    With `artifacts`, also write gaia2-cli's artifacts (`artifacts.write_artifacts`) in the
    same pass over the traces. Raises `runs.OutputDirError` when `output_dir` holds no ARE
    benchmark output.
    """
    return _write(output_dir, artifacts=artifacts)[0]


def _write(output_dir: Path, *, artifacts: bool) -> tuple[Path, Summary]:
    output_dir = Path(output_dir)
    rows: list[Row] = []
    results: list[tuple[Path, dict[str, Any]]] = []
    skipped: list[str] = []
    for run in iter_runs(output_dir, skipped):
        folder = run_dir(output_dir, run)
        folder.mkdir(parents=True, exist_ok=True)
        if artifacts:
            _, result = write_run(output_dir, run)
            results.append((run_root(output_dir, run), result))
        page = folder / TRACE_HTML
        page.write_text(render_trace_page(output_dir, run, folder), encoding="utf-8")
        rows.append(
            Row(
                split=run.split,
                scenario_id=run.scenario_id,
                run_number=run.run_number,
                success=run.success,
                status=run.status,
                llm_calls=None
                if run.conversations is None
                else sum(
                    1 for ms in run.conversations.values() for m in ms if m.role == "assistant"
                ),
                tool_calls=None
                if run.events is None
                else sum(1 for e in run.events if e.event_type == "AGENT"),
                tokens=_tokens(run),
                duration=run.duration,
                rationale=run.rationale or run.exception,
                page=page,
                model=run.model,
            )
        )
    if artifacts:
        write_results(results)
    index = output_dir / INDEX_HTML
    text, summary = render_index(output_dir, rows, read_stats(output_dir), skipped)
    index.write_text(text, encoding="utf-8")
    link_runs(output_dir, summary)
    return index, summary


def main(argv: Sequence[str] | None = None, prog: str = "python -m areasync.gaia2.report") -> int:
    """`python -m areasync.gaia2.report OUTPUT_DIR`: write the artifacts and the report, print
    the sweep's summary (`summary.terminal_text`) and, last, the report's file URL alone on its
    line; 2 with a one-line error when the directory holds no ARE output."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description=(
            "Write gaia2-cli's per-run artifacts (result.json, events.jsonl, trace.jsonl) and a "
            "static HTML report (index.html) for the output directory of `areasync bench run` "
            "or `are-benchmark run`."
        ),
    )
    parser.add_argument("output_dir", type=Path, help="the run's --output_dir")
    parser.add_argument("--no-artifacts", action="store_true", help="write the HTML report only")
    options = parser.parse_args(argv)
    try:
        index, summary = _write(options.output_dir, artifacts=not options.no_artifacts)
    except OutputDirError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(terminal_text(summary))
    print()
    print(index.resolve().as_uri())
    return 0


if __name__ == "__main__":
    sys.exit(main())
