"""gaia2-cli's per-run artifacts (`result.json`, `events.jsonl`, `trace.jsonl`) from ARE's output.

Gaia2's newer runner, gaia2-cli, leaves one folder per scenario run, which its trace viewer and
its users read; `write_artifacts(output_dir)` writes the same files, from nothing but what ARE
wrote in a benchmark output directory (`output.jsonl` and the exporter's traces, read by
`areasync.gaia2.runs`), so it works as well on `are-benchmark run`'s output as on
`areasync bench run`'s. The layout is gaia2-cli's, with the split as the folder above the
scenario's:

    OUTPUT_DIR/[run_N/]<split>/<scenario_id>/result.json    the verdict
                                            /events.jsonl   what happened, one event a line
                                            /trace.jsonl    one LLM call a line
    OUTPUT_DIR/[run_N/]results.jsonl                        every result.json, one a line

`run_N/` only when ARE numbered the runs (`--num_runs` above 1); `<split>/` only when the run
has one (`runs.split_of`). Folder names are made safe (`[A-Za-z0-9._-]`, no leading dot, at most
96 characters; a name that had to change keeps a hash of the original).

* `result.json` - gaia2-cli's fields: `scenario_id`, `success` (true, false, or null when ARE
  gave no verdict), `reward` (ARE's score), `num_agent_events`, `num_oracle_events`,
  `agent_response` (the agent's last message to the user), `rationale` (the judge's),
  `failure_reasons` (a failed run: `[rationale]`), `error` (the exception, if the run raised;
  ARE scores that run 0), `num_llm_calls`, `total_input_tokens`, `total_output_tokens`,
  `total_latency_ms`; and ARE's own: `status` (success, failed, exception, no_validation),
  `split`, `run_number`, `model`, `agent`, `duration` (simulated seconds), `are_traces` (the
  traces these files come from, relative to OUTPUT_DIR) and `are_trace_errors` (those that
  could not be read: the run keeps its verdict from `output.jsonl`, without the details).
* `events.jsonl` - gaia2-cli's action log, one completed event a line in ARE's log order: `t`
  (simulated time, epoch seconds), `app`, `fn`, `args` (decoded from ARE's strings), `w` (a
  write), `ret` (the return value; ARE's export keeps only `str(value)`, decoded back where
  unambiguous), `event_id`, `sim_t` (`t` as UTC `YYYY-MM-DD HH:MM:SS`); and `event_type`
  (AGENT, USER or ENV: gaia2-cli tells them apart by id prefix, ARE's ids do not) and `error`
  for a call that raised. User messages and environment events are included; ARE's condition
  checks are not. `app` is the app as ARE names it (the tool name's prefix). Needs the hf
  trace (`--trace_dump_format hf` or `both`); without it the file is not written.
* `trace.jsonl` - the trace format gaia2-cli's viewer calls "Format B": per LLM call, `seq`,
  `timestamp` (ISO 8601, simulated time), `type` (`llm_call`), `request` (`model` and the
  `messages` the agent sent: its conversation up to that call, rebuilt from ARE's lite trace
  with the roles ARE's LiteLLM engine sends - for ARE's default agent these are the messages
  the LLM received), `response` (`content`: the model's output, `tool_calls`: `[]`, since
  ARE's default agent writes its tool call in the text; `usage`; `model`) and `latency_ms`;
  `agent` when the run had several agents. Needs the lite trace (`lite` or `both`).

`python -m areasync.gaia2.report OUTPUT_DIR` writes these and the HTML report.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from areasync.gaia2.runs import Run, iter_runs
from areasync.service.sessions.names import MAX_ID_CHARS, safe_id

RESULT_JSON = "result.json"
EVENTS_JSONL = "events.jsonl"
TRACE_JSONL = "trace.jsonl"
RESULTS_JSONL = "results.jsonl"
ARTIFACTS = (RESULT_JSON, EVENTS_JSONL, TRACE_JSONL)

# Names ARE or gaia2-cli already use at the top of an output directory.
_RESERVED = frozenset({"hf", "lite"})
_RUN_FOLDER = re.compile(r"run_\d+")
# How ARE's LiteLLM engine sends its own roles (its `role_conversions`).
_CHAT_ROLES = {"tool-response": "user", "tool-call": "assistant"}


def folder_name(text: str) -> str:
    """`text` as one safe path component; a name that had to change keeps a hash of `text`."""
    name = safe_id(text, fallback="unnamed")
    if name != text or name in _RESERVED or _RUN_FOLDER.fullmatch(name):
        digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=4).hexdigest()
        name = f"{name[: MAX_ID_CHARS - len(digest) - 1]}-{digest}"
    return name


def run_root(output_dir: Path, run: Run) -> Path:
    """Where a run's split folders go: `run_N/` for numbered runs, as gaia2-cli's pass@N."""
    return output_dir / f"run_{run.run_number}" if run.run_number is not None else output_dir


def run_dir(output_dir: Path, run: Run) -> Path:
    """The run's artifact folder."""
    folder = run_root(output_dir, run)
    if run.split:
        folder = folder / folder_name(run.split)
    return folder / folder_name(run.scenario_id)


def sim_time(t: float) -> str:
    """Simulated epoch seconds as gaia2-cli's `sim_t` (UTC, to the second); a time no calendar
    holds (a trace's 1e300) as its number."""
    try:
        return datetime.fromtimestamp(t, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")
    except (OverflowError, ValueError, OSError):
        return str(t)


def iso_time(t: float) -> str:
    try:
        moment = datetime.fromtimestamp(t, tz=UTC)
    except (OverflowError, ValueError, OSError):
        return str(t)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _relative(path: Path | None, output_dir: Path) -> str | None:
    if path is None:
        return None
    try:
        return Path(os.path.relpath(path.resolve(), output_dir.resolve())).as_posix()
    except ValueError:  # another drive
        return str(path)


def agent_response(run: Run) -> str | None:
    """The agent's last message to the user, as gaia2-cli's `agent_response`."""
    for event in reversed(run.events or []):
        if event.event_type == "AGENT" and event.tool == "AgentUserInterface__send_message_to_user":
            content = event.args.get("content")
            return None if content is None else str(content)
    return None


def result_of(run: Run, output_dir: Path) -> dict[str, Any]:
    """The run's `result.json`."""
    result: dict[str, Any] = {
        "scenario_id": run.scenario_id,
        "success": run.success,
        "reward": run.score,
        "num_agent_events": (
            None if run.events is None else sum(1 for e in run.events if e.event_type == "AGENT")
        ),
        "num_oracle_events": run.oracle_events,
        "agent_response": agent_response(run),
    }
    if run.rationale:
        result["rationale"] = run.rationale
        if run.success is False:
            result["failure_reasons"] = [run.rationale]
    if run.exception:
        result["error"] = run.exception
    elif run.success is None:
        result["error"] = f"no verdict (ARE's status: {run.status})"
    if run.usage is not None:
        calls = [usage for per_agent in run.usage.values() for usage in per_agent]
        result["num_llm_calls"] = len(calls)
        result["total_input_tokens"] = sum(u.prompt_tokens for u in calls)
        result["total_output_tokens"] = sum(u.completion_tokens for u in calls)
        result["total_latency_ms"] = round(sum(u.seconds for u in calls) * 1000)
    result.update(
        status=run.status,
        split=run.split,
        run_number=run.run_number,
        model=run.model,
        agent=run.agent,
        duration=run.duration,
        are_traces={
            name: path
            for name, path in (
                ("hf", _relative(run.hf_trace, output_dir)),
                ("lite", _relative(run.lite_trace, output_dir)),
            )
            if path is not None
        },
    )
    if run.problems:
        result["are_trace_errors"] = run.problems
    return result


def event_lines(run: Run) -> list[dict[str, Any]] | None:
    """The run's `events.jsonl` entries (None without an hf trace)."""
    if run.events is None:
        return None
    lines = []
    for event in run.events:
        line: dict[str, Any] = {
            "t": event.time,
            "app": event.app,
            "fn": event.function,
            "args": event.args,
            "w": event.write,
            "ret": event.result,
            "event_id": event.event_id,
            "sim_t": sim_time(event.time),
            "event_type": event.event_type,
        }
        if event.error:
            line["error"] = event.error
        lines.append(line)
    return lines


def trace_lines(run: Run) -> list[dict[str, Any]] | None:
    """The run's `trace.jsonl` entries, one per LLM call (None without a lite trace)."""
    if run.conversations is None:
        return None
    lines: list[dict[str, Any]] = []
    several = len(run.conversations) > 1
    for agent, messages in run.conversations.items():
        calls = [i for i, message in enumerate(messages) if message.role == "assistant"]
        usage = (run.usage or {}).get(agent) or []
        if len(usage) != len(calls):
            usage = []  # cannot be paired with the calls
        for n, i in enumerate(calls):
            output = messages[i]
            response: dict[str, Any] = {
                "content": output.content,
                "tool_calls": [],
                "model": run.model,
            }
            line: dict[str, Any] = {
                "seq": len(lines) + 1,
                "timestamp": iso_time(output.time) if output.time is not None else None,
                "type": "llm_call",
                "request": {
                    "model": run.model,
                    "messages": [
                        {"role": _CHAT_ROLES.get(m.role, m.role), "content": m.content}
                        for m in messages[:i]
                    ],
                },
                "response": response,
            }
            if usage:
                response["usage"] = {
                    "prompt_tokens": usage[n].prompt_tokens,
                    "completion_tokens": usage[n].completion_tokens,
                    "total_tokens": usage[n].total_tokens,
                    "reasoning_tokens": usage[n].reasoning_tokens,
                }
                line["latency_ms"] = round(usage[n].seconds * 1000)
            if several:
                line["agent"] = agent
            lines.append(line)
    return lines


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _write_jsonl(path: Path, lines: Iterable[Any]) -> None:
    path.write_text("".join(_dump(line) + "\n" for line in lines), encoding="utf-8")


def write_run(output_dir: Path, run: Run) -> tuple[list[Path], dict[str, Any]]:
    """Write one run's artifacts; return the files written and its result."""
    folder = run_dir(output_dir, run)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    result = result_of(run, output_dir)
    path = folder / RESULT_JSON
    path.write_text(
        json.dumps(result, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8"
    )
    written.append(path)
    for name, lines in ((EVENTS_JSONL, event_lines(run)), (TRACE_JSONL, trace_lines(run))):
        path = folder / name
        if lines is None:
            # Nothing to say this time (the trace is gone): no stale file from an earlier write.
            path.unlink(missing_ok=True)
            continue
        _write_jsonl(path, lines)
        written.append(path)
    return written, result


def write_results(results: Iterable[tuple[Path, dict[str, Any]]]) -> list[Path]:
    """Write each run root's `results.jsonl` (gaia2-cli's: one `result.json` a line), from
    (run root, result) pairs: the runs themselves, traces and all, need not stay in memory."""
    per_root: dict[Path, list[dict[str, Any]]] = {}
    for root, result in results:
        per_root.setdefault(root, []).append(result)
    written = []
    for root, lines in per_root.items():
        path = root / RESULTS_JSONL
        _write_jsonl(path, lines)
        written.append(path)
    return written


def write_artifacts(output_dir: Path) -> list[Path]:
    """Write every run's artifacts and each run root's `results.jsonl`; return the files.

    Raises `runs.OutputDirError` when `output_dir` holds no ARE benchmark output.
    """
    output_dir = Path(output_dir)
    written: list[Path] = []
    results: list[tuple[Path, dict[str, Any]]] = []
    for run in iter_runs(output_dir):
        files, result = write_run(output_dir, run)
        written += files
        results.append((run_root(output_dir, run), result))
    return written + write_results(results)
