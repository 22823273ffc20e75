"""`areasync bench report` on an output directory it must not trust: rows of `output.jsonl`
that are not ARE's are reported and skipped (a `run_number` of `Infinity` crashed it), and a
`trace_id` naming a file outside the directory is never opened, however it gets there.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from areasync.gaia2.report import write_report
from areasync.gaia2.runs import iter_runs

SECRET = "host-secret-7f3a"


def hf_trace(scenario_id: str, marker: str) -> dict[str, Any]:
    """The smallest hf trace the report reads: one AGENT event whose result is `marker`."""
    return {
        "metadata": {"definition": {"scenario_id": scenario_id}},
        "completed_events": [
            {
                "event_id": "e1",
                "event_type": "AGENT",
                "event_time": 1.0,
                "action": {"app": "EmailClientApp", "function": "list_emails", "args": []},
                "metadata": {"return_value": marker, "return_value_type": "str"},
            }
        ],
    }


def row(task_id: str, trace_id: str | None = None, **metadata: Any) -> dict[str, Any]:
    return {"task_id": task_id, "trace_id": trace_id, "score": 1.0, "metadata": metadata}


def write_rows(out: Path, lines: list[str]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "output.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


def pages(out: Path) -> str:
    """Every file the report wrote (the link the test planted left out)."""
    written = [p for p in out.rglob("*") if p.is_file() and not p.is_symlink()]
    return "".join(p.read_text(encoding="utf-8") for p in written)


@pytest.mark.parametrize(
    "line",
    [
        '{"task_id": "t", "score": 1.0, "metadata": {"run_number": Infinity}}',
        '{"task_id": "t", "score": 1.0, "metadata": {"run_number": 1e400}}',
        '{"task_id": "t", "score": NaN}',
        '{"task_id": "t", "score": 7.5}',
        '{"task_id": "t", "metadata": {"run_number": -1}}',
        '{"task_id": 12}',
        '{"score": 1.0}',
        "[1, 2]",
        "not json",
    ],
)
def test_a_row_that_is_not_ares_is_reported_and_skipped(tmp_path: Path, line: str) -> None:
    out = tmp_path / "out"
    write_rows(out, [json.dumps(row("good", run_number=1)), line])
    index = write_report(out)
    html = index.read_text(encoding="utf-8")
    assert "line 2: skipped, not a result row" in html
    assert [run.scenario_id for run in iter_runs(out)] == ["good"]


@pytest.mark.parametrize("how", ["absolute", "dot-dot", "link"])
def test_a_trace_outside_the_output_directory_is_never_opened(tmp_path: Path, how: str) -> None:
    outside = tmp_path / "elsewhere" / "secret.json"
    outside.parent.mkdir()
    outside.write_text(json.dumps(hf_trace("t", SECRET)), encoding="utf-8")
    out = tmp_path / "out"
    out.mkdir()
    named = {"absolute": str(outside), "dot-dot": "../elsewhere/secret.json", "link": "x.json"}
    if how == "link":
        (out / "x.json").symlink_to(outside)
    write_rows(out, [json.dumps(row("t", named[how], run_number=1))])
    write_report(out, artifacts=True)
    (run,) = iter_runs(out)
    assert run.events is None
    assert any("not a file inside" in problem for problem in run.problems)
    assert SECRET not in pages(out)


def test_a_trace_inside_the_output_directory_is_read(tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "traces").mkdir(parents=True)
    (out / "traces" / "t_run_1.json").write_text(json.dumps(hf_trace("t", "inbox")))
    write_rows(out, [json.dumps(row("t", "traces/t_run_1.json", run_number=1))])
    (run,) = iter_runs(out)
    assert run.events is not None and run.events[0].result == "inbox"


def test_numbers_a_trace_holds_that_no_calendar_can_show_do_not_stop_the_report(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    trace = hf_trace("t", "x")
    trace["completed_events"][0]["event_time"] = 1e300
    trace["metadata"]["definition"].update(start_time=float("inf"), run_number=float("inf"))
    (out / "hf").mkdir(parents=True)
    (out / "hf" / "t_run_1_0123abcd.json").write_text(json.dumps(trace))
    write_report(out, artifacts=True)
    (run,) = iter_runs(out)
    assert run.start_time is None and run.run_number is None
