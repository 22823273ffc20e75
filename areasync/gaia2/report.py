"""A static HTML report of a Gaia2 benchmark output directory, to open from disk or share.

`write_report(output_dir)` reads what ARE wrote there (`areasync.gaia2.runs`: `output.jsonl`
and the exporter's traces; so `are-benchmark run`'s output too) and writes

* `OUTPUT_DIR/index.html`: the pass rate per split and overall (as ARE's `success_rate`:
  passed over runs with a verdict; runs without one are counted apart), and a table of every
  scenario run - split, scenario, run number, verdict, LLM calls, tool calls, simulated
  duration, the judge's rationale - each linking to its trace;
* `trace.html` in each run's artifact folder (`artifacts.run_dir`: gaia2-cli's place for it):
  the judge's verdict and rationale; the agent's steps from its conversation (lite trace) - user
  and environment messages, each LLM call's thought and tool call with its arguments, and the
  tool's result or error; and the run's events from the hf trace (user messages, tool calls,
  environment events with simulated times, arguments, return values and errors), linking to
  the run's `result.json`, `events.jsonl`, `trace.jsonl` and ARE's own traces.

The pages need no server, network, script or font: plain HTML with one inline style sheet,
allowed by its hash in a Content-Security-Policy that allows nothing else, so no script can
run even if something slipped through. Every text from the run (scenario texts, LLM outputs,
tool results: all untrusted) is HTML-escaped.

The directory is read as untrusted input (`runs.py`): a row of `output.jsonl` that is not one of
ARE's is skipped and listed at the top of the index, and no trace outside the directory is
opened.

`python -m areasync.gaia2.report OUTPUT_DIR` writes gaia2-cli's artifacts
(`areasync.gaia2.artifacts`) and this report in one pass over the traces, and prints the
report's file URL; `--no-artifacts` writes the report alone.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import html
import json
import os
import re
import sys
from collections.abc import Iterable, Sequence
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
from areasync.gaia2.runs import Event, Message, OutputDirError, Run, Usage, iter_runs, read_stats

INDEX_HTML = "index.html"
TRACE_HTML = "trace.html"
NO_SPLIT = "(no split)"
# Longer texts fold into a <details> showing their start.
FOLD_CHARS = 2000

STYLE = """
:root { --pass: #0a7d32; --fail: #b42318; --none: #8a6100; --line: #d9dce1; --muted: #5c6370;
  --bg-soft: #f6f7f9; font-family: system-ui, -apple-system, "Segoe UI", sans-serif; }
body { margin: 0 auto; max-width: 1200px; padding: 1.5rem; color: #1c1f24; line-height: 1.45; }
h1 { font-size: 1.4rem; margin: 0 0 .3rem; } h2 { font-size: 1.1rem; margin: 1.6rem 0 .6rem; }
.meta { color: var(--muted); margin: 0 0 1rem; }
table { border-collapse: collapse; width: 100%; font-size: .9rem; }
th, td { border-bottom: 1px solid var(--line); padding: .35rem .5rem; text-align: left;
  vertical-align: top; }
th { background: var(--bg-soft); font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.overall td { font-weight: 600; border-top: 2px solid var(--line); }
.verdict { display: inline-block; padding: .05rem .45rem; border-radius: .3rem; color: #fff;
  font-weight: 600; font-size: .8rem; letter-spacing: .02em; }
.verdict.pass { background: var(--pass); } .verdict.fail { background: var(--fail); }
.verdict.none { background: var(--none); }
code { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; margin: .2rem 0; font-size: .85rem;
  font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; }
.why { max-width: 32rem; color: var(--muted); font-size: .85rem; white-space: pre-wrap;
  overflow-wrap: anywhere; }
.notice { background: #fff6e0; border: 1px solid #f0d28a; padding: .5rem .8rem;
  border-radius: .3rem; }
ol.steps { list-style: none; padding: 0; margin: 0; }
ol.steps > li { border: 1px solid var(--line); border-left-width: 4px; border-radius: .3rem;
  margin: 0 0 .6rem; padding: .5rem .75rem; }
li.user { border-left-color: #2f6fd6; } li.environment { border-left-color: #b45309; }
li.step { border-left-color: #6b4fbb; } li.system, li.note { border-left-color: var(--line); }
.label { font-size: .78rem; font-weight: 600; color: var(--muted); text-transform: uppercase;
  letter-spacing: .03em; }
.thought { margin: .25rem 0 .4rem; white-space: pre-wrap; overflow-wrap: anywhere; }
.call { background: var(--bg-soft); border-radius: .3rem; padding: .35rem .55rem; }
.tool { font-family: ui-monospace, Menlo, Consolas, monospace; font-weight: 600; }
.result { margin-top: .4rem; } .result.error pre { color: var(--fail); }
tr.user td:first-child { border-left: 3px solid #2f6fd6; }
tr.env td:first-child { border-left: 3px solid #b45309; }
tr.agent td:first-child { border-left: 3px solid #6b4fbb; }
td.error { color: var(--fail); }
nav { margin-bottom: 1rem; } a { color: #1f5fbf; }
summary { cursor: pointer; color: var(--muted); }
"""


def _style_hash(style: str) -> str:
    digest = hashlib.sha256(style.encode("utf-8")).digest()
    return "sha256-" + base64.b64encode(digest).decode("ascii")


# Nothing but this page's own style sheet; links still navigate (CSP does not govern that).
CSP = (
    f"default-src 'none'; style-src '{_style_hash(STYLE)}'; img-src 'none'; "
    "base-uri 'none'; form-action 'none'"
)


def h(value: Any) -> str:
    """Text (untrusted) as HTML: escaped, quotes included."""
    return html.escape("" if value is None else str(value), quote=True)


def _page(title: str, body: Iterable[str]) -> str:
    return "".join(
        [
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">',
            f'<meta http-equiv="Content-Security-Policy" content="{h(CSP)}">',
            '<meta name="referrer" content="no-referrer">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{h(title)}</title><style>{STYLE}</style></head><body>\n",
            *body,
            "\n</body></html>\n",
        ]
    )


def _href(target: Path, base: Path) -> str:
    """A relative link from a page in `base` to `target` (both on disk)."""
    relative = Path(os.path.relpath(target, base)).as_posix()
    return h("/".join(quote(part, safe="._-") for part in relative.split("/")))


def verdict_of(success: bool | None) -> tuple[str, str]:
    """(label, css class) of a verdict."""
    if success is True:
        return "PASS", "pass"
    if success is False:
        return "FAIL", "fail"
    return "NO VERDICT", "none"


def _verdict_badge(success: bool | None) -> str:
    label, css = verdict_of(success)
    return f'<span class="verdict {css}">{label}</span>'


def _duration(seconds: float | None) -> str:
    """Seconds as H:MM:SS."""
    if seconds is None:
        return ""
    whole = max(0, round(seconds))
    return f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d}"


def _offset(t: float | None, start: float | None) -> str:
    """A simulated time as its offset from the scenario's start (+H:MM:SS)."""
    if t is None:
        return ""
    return sim_time(t) if start is None else f"+{_duration(t - start)}"


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def _pre(text: str, css: str = "") -> str:
    """Text in a <pre>; a long one folded, showing its start."""
    attribute = f' class="{css}"' if css else ""
    if len(text) <= FOLD_CHARS:
        return f"<pre{attribute}>{h(text)}</pre>"
    return (
        f"<pre{attribute}>{h(text[:FOLD_CHARS])}</pre><details><summary>"
        f"{len(text) - FOLD_CHARS:,} more characters</summary><pre{attribute}>"
        f"{h(text[FOLD_CHARS:])}</pre></details>"
    )


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
                args = _pre(_json(output.args), "args")
                parts.append(
                    f'<div class="call"><span class="label">Tool call</span> '
                    f'<span class="tool">{h(output.tool)}</span>{args}</div>'
                )
            elif not output.thought or output.thought != output.raw.strip():
                parts.append(_pre(output.raw))
            if i + 1 < len(messages) and messages[i + 1].role == "tool-response":
                i += 1
                error, text = _observation(messages[i])
                parts.append(
                    f'<div class="result{" error" if error else ""}"><span class="label">'
                    f"{'Error' if error else 'Result'}</span>{_pre(text)}</div>"
                )
            parts.append("</li>")
        elif message.role == "tool-response":
            error, text = _observation(message)
            parts.append(
                f'<li class="note"><div class="label">{"Error" if error else "Result"} · {h(when)}'
                f"</div>{_pre(text)}</li>"
            )
        else:
            css, label = "user", message.role.capitalize() or "Message"
            for prefix, kind, name in _USER_KINDS:
                if message.content.startswith(prefix):
                    css, label = kind, name
                    break
            parts.append(
                f'<li class="{css}"><div class="label">{h(label)} · {h(when)}</div>'
                f"{_pre(message.content.strip())}</li>"
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
            f'<td class="error">{_pre("Error: " + event.error)}</td>'
            if event.error
            else f"<td>{'' if event.result is None else _pre(_text_or_json(event.result))}</td>"
        )
        rows.append(
            f'<tr class="{css.get(event.event_type, "agent")}"><td>{h(_offset(event.time, start))}'
            f"<br><small>{h(sim_time(event.time))}</small></td><td>{h(event.event_type)}</td>"
            f'<td class="tool">{h(event.tool)}</td><td>{_pre(_json(event.args))}</td>{result}</tr>'
        )
    rows.append("</tbody></table>")
    return "".join(rows)


def _text_or_json(value: Any) -> str:
    return value if isinstance(value, str) else _json(value)


# -- pages --------------------------------------------------------------------------------------


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
    duration: float | None
    rationale: str | None
    page: Path
    model: str | None


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
        f'<nav><a href="{_href(index, folder)}">← All runs</a></nav>',
        f"<h1>{h(_title(run))} {_verdict_badge(run.success)}</h1>",
        '<p class="meta">'
        + " · ".join(f"{h(name)}: {h(value)}" for name, value in facts if value not in (None, ""))
        + "</p>",
        '<h2 id="judge">Judge</h2><table class="judge"><tbody>',
        f"<tr><th>Verdict</th><td>{_verdict_badge(run.success)} (ARE: {h(run.status)}, "
        f"score {h('none' if run.score is None else run.score)})</td></tr>",
    ]
    if run.rationale:
        body.append(f"<tr><th>Rationale</th><td>{_pre(run.rationale)}</td></tr>")
    if run.exception:
        body.append(f'<tr><th>Error</th><td class="error">{_pre(run.exception)}</td></tr>')
    response = agent_response(run)
    if response is not None:
        body.append(f"<tr><th>Agent's last message</th><td>{_pre(response)}</td></tr>")
    for problem in run.problems:
        body.append(f'<tr><th>Unreadable trace</th><td class="error">{_pre(problem)}</td></tr>')
    if not run.listed:
        body.append(
            "<tr><th>Source</th><td>Not in output.jsonl (ARE rewrites it per dataset config): "
            "the verdict is the trace's.</td></tr>"
        )
    body.append("</tbody></table>")
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
        body += [f'<li><a href="{_href(path, folder)}">{h(name)}</a></li>' for name, path in links]
        body.append("</ul>")
    return _page(f"{_title(run)} - Gaia2 trace", body)


@dataclass
class Tally:
    """The verdicts of a group of runs."""

    passed: int = 0
    failed: int = 0
    no_verdict: int = 0

    def add(self, success: bool | None) -> None:
        if success is True:
            self.passed += 1
        elif success is False:
            self.failed += 1
        else:
            self.no_verdict += 1

    @property
    def runs(self) -> int:
        return self.passed + self.failed + self.no_verdict

    @property
    def rate(self) -> float | None:
        """Percent passed of the runs with a verdict (ARE's `success_rate`)."""
        judged = self.passed + self.failed
        return None if judged == 0 else 100.0 * self.passed / judged


def rate_text(tally: Tally) -> str:
    return "n/a" if tally.rate is None else f"{tally.rate:.1f}%"


def pass_rates(rows: Sequence[Row]) -> tuple[dict[str, Tally], Tally]:
    """Per split (sorted by name) and overall."""
    splits: dict[str, Tally] = {}
    overall = Tally()
    for row in rows:
        splits.setdefault(row.split or NO_SPLIT, Tally()).add(row.success)
        overall.add(row.success)
    return dict(sorted(splits.items())), overall


def render_index(
    output_dir: Path,
    rows: Sequence[Row],
    stats: dict[str, Any] | None,
    skipped: Sequence[str] = (),
) -> str:
    rows = sorted(rows, key=lambda r: (r.split or "", r.scenario_id, r.run_number or 0))
    splits, overall = pass_rates(rows)
    models = sorted({row.model for row in rows if row.model})
    body = [
        f"<h1>Gaia2 results: {h(output_dir.resolve().name)}</h1>",
        f'<p class="meta">{len(rows)} scenario runs'
        + (f" · model {h(', '.join(models))}" if models else "")
        + f" · pass rate {h(rate_text(overall))}</p>",
    ]
    if skipped:
        body.append(
            f'<p class="notice">{len(skipped)} line(s) of output.jsonl are not result rows of '
            "ARE's and were skipped:</p><ul>"
            + "".join(f"<li>{_pre(why)}</li>" for why in skipped)
            + "</ul>"
        )
    counted = ((stats or {}).get("statistics") or {}).get("global", {}).get("total_runs")
    if isinstance(counted, int) and counted != len(rows):
        body.append(
            f'<p class="notice">ARE\'s benchmark_stats.json counts {counted} runs, this directory '
            f"holds {len(rows)}: traces of an earlier run in the same --output_dir, or runs whose "
            "trace was not written.</p>"
        )
    body.append(
        '<h2>Pass rate</h2><table id="pass-rates"><thead><tr><th>Split</th><th class="num">Runs'
        '</th><th class="num">Passed</th><th class="num">Failed</th><th class="num">No verdict'
        '</th><th class="num">Pass rate</th></tr></thead><tbody>'
    )
    for name, tally in [*splits.items(), ("Overall", overall)]:
        css = ' class="overall"' if name == "Overall" and tally is overall else ""
        body.append(
            f'<tr{css}><td>{h(name)}</td><td class="num">{tally.runs}</td><td class="num">'
            f'{tally.passed}</td><td class="num">{tally.failed}</td><td class="num">'
            f'{tally.no_verdict}</td><td class="num">{h(rate_text(tally))}</td></tr>'
        )
    body.append(
        '</tbody></table><p class="meta">Pass rate: passed over runs with a verdict, as ARE\'s '
        "success_rate.</p>"
    )
    body.append(
        '<h2>Runs</h2><table id="runs"><thead><tr><th>Split</th><th>Scenario</th>'
        '<th class="num">Run</th><th>Verdict</th><th class="num">LLM calls</th>'
        '<th class="num">Tool calls</th><th class="num">Sim. time</th><th>Judge</th>'
        "</tr></thead><tbody>"
    )
    for row in rows:
        why = row.rationale or ("" if row.success else row.status)
        body.append(
            f"<tr><td>{h(row.split or NO_SPLIT)}</td><td>"
            f'<a href="{_href(row.page, output_dir)}">{h(row.scenario_id)}</a></td>'
            f'<td class="num">{h(row.run_number if row.run_number is not None else "")}</td>'
            f"<td>{_verdict_badge(row.success)}</td>"
            f'<td class="num">{h(row.llm_calls if row.llm_calls is not None else "")}</td>'
            f'<td class="num">{h(row.tool_calls if row.tool_calls is not None else "")}</td>'
            f'<td class="num">{h(_duration(row.duration))}</td>'
            f'<td><div class="why">{h(_shorten(why, 300))}</div></td></tr>'
        )
    body.append("</tbody></table>")
    return _page(f"Gaia2 results: {output_dir.resolve().name}", body)


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def write_report(output_dir: Path, *, artifacts: bool = False) -> Path:
    """Write `index.html` and each run's `trace.html`; return the index's path.

    With `artifacts`, also write gaia2-cli's artifacts (`artifacts.write_artifacts`) in the
    same pass over the traces. Raises `runs.OutputDirError` when `output_dir` holds no ARE
    benchmark output.
    """
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
                duration=run.duration,
                rationale=run.rationale or run.exception,
                page=page,
                model=run.model,
            )
        )
    if artifacts:
        write_results(results)
    index = output_dir / INDEX_HTML
    index.write_text(
        render_index(output_dir, rows, read_stats(output_dir), skipped), encoding="utf-8"
    )
    return index


def main(argv: Sequence[str] | None = None, prog: str = "python -m areasync.gaia2.report") -> int:
    """`python -m areasync.gaia2.report OUTPUT_DIR`: write the artifacts and the report, print
    the report's file URL; 2 with a one-line error when the directory holds no ARE output."""
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
        index = write_report(options.output_dir, artifacts=not options.no_artifacts)
    except OutputDirError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(index.resolve().as_uri())
    return 0


if __name__ == "__main__":
    sys.exit(main())
