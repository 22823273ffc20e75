"""The static HTML report of a real `areasync bench run`, opened from disk in headless chromium.

One in-process run (default agent, stub LLM) of two scenarios in two splits: `tiny_email`
(execution, passes) and `tiny_skip` (re-tagged Search, fails), whose user task and whose
agent's reply carry markup that must show as text and never run.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

from areasync.gaia2 import compare
from areasync.gaia2.artifacts import EVENTS_JSONL, RESULT_JSON, TRACE_JSONL
from areasync.gaia2.dataset import CONFIG, SPECS, SPLIT, agent_scripts, write_dataset
from areasync.gaia2.report import INDEX_HTML, TRACE_HTML, write_report
from areasync.gaia2.stub_llm import Script
from tests.bounds import BROWSER_S
from tests.service.dashboard.conftest import CHROMIUM, CHROMIUM_ARGS, chromium_missing_reason
from tests.stubs import stub_llm

Test = TypeVar("Test", bound=Callable[..., None])


def with_browser(test: Test) -> Test:
    """A test of the report in chromium: marked `browser`, skipped without chromium."""
    skip = pytest.mark.skipif(not CHROMIUM.exists(), reason=chromium_missing_reason())
    return pytest.mark.browser(skip(test))


# What a hostile scenario (an email body, a prompt-injected reply) could hold.
HOSTILE = (
    '</pre></td><script>window.__pwned = "script"</script>'
    '<img src=x onerror="window.__pwned = \'img\'"><a href="javascript:alert(1)">x</a>'
)


def make_hostile(dataset: Path) -> None:
    """`tiny_skip` becomes a Search scenario whose user task ends in `HOSTILE`."""
    path = dataset / CONFIG / SPLIT / "tiny_skip.json"
    document = json.loads(path.read_text(encoding="utf-8"))
    document["metadata"]["definition"]["tags"] = ["Search"]
    for event in document["events"]:
        if event["event_type"] == "USER":
            for arg in event["action"]["args"]:
                if arg["name"] == "content":
                    arg["value"] += " " + HOSTILE
    path.write_text(json.dumps(document), encoding="utf-8")


@dataclass
class Report:
    out: Path
    index: Path

    def url(self, relative: str) -> str:
        return (self.out / relative).as_uri()


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Report:
    root = tmp_path_factory.mktemp("gaia2_report")
    dataset = write_dataset(root / "dataset", only=["tiny_email", "tiny_skip"])
    make_hostile(dataset)
    scripts = agent_scripts()
    reply = {"action": "AgentUserInterface__send_message_to_user"}
    scripts[SPECS["tiny_skip"].marker] = [
        {**reply, "action_input": {"content": f"Done. {HOSTILE}"}}
    ]
    out = root / "out"
    with stub_llm(Script(agent=scripts)) as stub:
        compare.run_areasync(compare.bench_args(dataset, out, stub.endpoint, extra=["--no-report"]))
    return Report(out=out, index=write_report(out, artifacts=True))


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    from playwright.sync_api import expect

    expect.set_options(timeout=BROWSER_S * 1000)
    context = browser.new_context()
    context.set_default_timeout(BROWSER_S * 1000)
    opened = context.new_page()
    yield opened
    context.close()


def _cells(page: Any, selector: str) -> list[list[str]]:
    rows: list[list[str]] = page.eval_on_selector_all(
        f"{selector} tbody tr",
        "rows => rows.map(r => [...r.cells].map(c => c.innerText.trim()))",
    )
    return rows


def test_report_is_written_beside_the_artifacts(report: Report) -> None:
    assert report.index == report.out / INDEX_HTML
    for folder in ("execution/tiny_email", "search/tiny_skip"):
        for name in (TRACE_HTML, RESULT_JSON, EVENTS_JSONL, TRACE_JSONL):
            assert (report.out / folder / name).is_file(), (folder, name)


@with_browser
def test_index_lists_every_scenario_failures_first_with_its_verdict(
    report: Report, page: Any
) -> None:
    page.goto(report.index.as_uri())
    rows = page.eval_on_selector_all(
        "details.scenario > summary",
        "rows => rows.map(r => [...r.children].slice(0, 4).map(c => c.innerText.trim()))",
    )
    assert rows == [
        ["FAILED ALL", "search", "tiny_skip", "0/1"],
        ["PASSED ALL", "execution", "tiny_email", "1/1"],
    ]
    # The failed scenario says why, from the judge's rationale.
    assert "EmailClientV2__send_email" in page.text_content("details.scenario .reasons")


@with_browser
def test_index_shows_the_pass_rate_per_split_and_overall(report: Report, page: Any) -> None:
    page.goto(report.index.as_uri())
    assert _cells(page, "#pass-rates") == [
        ["execution", "1", "1", "1", "0", "0", "100.0%", "100.0%", "100.0%"],
        ["search", "1", "1", "0", "1", "0", "0.0%", "0.0%", "0.0%"],
        ["Overall", "2", "2", "1", "1", "0", "50.0%", "50.0%", "50.0%"],
    ]


@with_browser
def test_a_run_links_to_its_trace_with_its_tool_calls(report: Report, page: Any) -> None:
    page.goto(report.index.as_uri())
    page.click('details.scenario[data-scenario="tiny_email"] > summary')
    page.click("table.runs >> text=tiny_email run")
    assert page.url == report.url("execution/tiny_email/trace.html")
    calls = page.eval_on_selector_all(
        "li.step", "steps => steps.map(s => s.querySelector('.call .tool').innerText)"
    )
    assert calls == ["EmailClientV2__send_email", "AgentUserInterface__send_message_to_user"]
    first = page.locator("li.step").first
    assert "Following the plan." in first.locator(".thought").inner_text()
    assert '"bob@example.com"' in first.locator(".call").inner_text()
    # The tool's result is the email id the environment returned (events.jsonl's `ret`).
    email_id = json.loads(
        (report.out / "execution/tiny_email" / EVENTS_JSONL).read_text().splitlines()[1]
    )["ret"]
    assert email_id in first.locator(".result").inner_text()
    assert page.locator("h1 .verdict").inner_text() == "PASS"
    page.click("text=All runs")
    assert page.url == report.index.as_uri()


@with_browser
def test_a_trace_shows_the_user_message_events_and_judge(report: Report, page: Any) -> None:
    page.goto(report.url("search/tiny_skip/trace.html"))
    assert (
        f"{SPECS['tiny_skip'].marker} Email bob@example.com"
        in page.locator("li.user").first.inner_text()
    )
    judge = page.locator("table.judge").inner_text()
    assert "FAIL" in judge and "Agent count 0, Oracle count 1" in judge
    assert _cells(page, "table.events")[0][1:3] == [
        "USER",
        "AgentUserInterface__send_message_to_agent",
    ]


@with_browser
def test_hostile_text_shows_as_text_and_runs_nothing(report: Report, page: Any) -> None:
    """The user's task and the agent's reply show their markup as text; none of it is markup."""
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    trace = report.out / "search/tiny_skip" / TRACE_HTML
    page.goto(trace.as_uri())
    assert HOSTILE in page.inner_text("li.user")  # the user's task, verbatim
    # The agent's reply as ARE recorded it (its action parser rewrote the quotes).
    reply = page.inner_text("table.judge")
    assert "Done. </pre></td><script>window.__pwned = " in reply and "<img src=x onerror=" in reply
    for visited, scripts in ((trace, 0), (report.index, 1)):
        page.goto(visited.as_uri())
        # The index's one script is its own filters (allowed by hash); the run's text adds none.
        assert page.evaluate("document.querySelectorAll('img').length") == 0
        assert page.evaluate("document.querySelectorAll('script').length") == scripts
        assert visited.read_text(encoding="utf-8").count("<script") == scripts
        assert page.evaluate("document.querySelectorAll('a[href^=javascript]').length") == 0
        assert page.evaluate("window.__pwned") is None
    assert dialogs == []


@with_browser
def test_pages_load_nothing_but_themselves(report: Report, page: Any) -> None:
    """No network, script or font: every request is the page's own file, and the style sheet
    the page's policy allows by hash does apply (no policy violation reported)."""
    requested: list[str] = []
    problems: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    page.on("console", lambda message: problems.append(message.text))
    for relative in (INDEX_HTML, "execution/tiny_email/trace.html"):
        page.goto(report.url(relative))
        color = page.eval_on_selector(".verdict", "e => getComputedStyle(e).backgroundColor")
        assert color in ("rgb(10, 125, 50)", "rgb(180, 35, 24)")  # styled: pass or fail
    assert requested == [report.url(INDEX_HTML), report.url("execution/tiny_email/trace.html")]
    assert problems == []


def test_cli_writes_artifacts_and_report(report: Report, tmp_path: Path) -> None:
    """`python -m areasync.gaia2.report DIR` on ARE's files alone, printing the report's URL."""
    copy = tmp_path / "out"
    shutil.copytree(
        report.out, copy, ignore=shutil.ignore_patterns("execution", "search", "*.html")
    )
    done = subprocess.run(
        [sys.executable, "-m", "areasync.gaia2.report", str(copy)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == (copy / INDEX_HTML).resolve().as_uri()
    for folder in ("execution/tiny_email", "search/tiny_skip"):
        assert {p.name for p in (copy / folder).iterdir()} == {
            TRACE_HTML,
            RESULT_JSON,
            EVENTS_JSONL,
            TRACE_JSONL,
        }


def test_cli_refuses_a_folder_without_are_output(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "areasync.gaia2.report", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "no ARE benchmark output" in done.stderr and "--output_dir" in done.stderr
