"""The report's index as people share it, from a real `areasync bench run` (stub LLM) of three
scenarios twice each, opened from disk in headless chromium: a row per scenario (k/n passed,
pass@k, pass^k) failures first, opening onto its runs, each reason said once; filters by
split, verdict and scenario; a pass-rate chart and distributions whose numbers are the runs';
a rejected call shown beside the oracle's; links between runs; and `bench report`'s summary.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from areasync.gaia2 import compare
from areasync.gaia2.dataset import CONFIG, SPLIT, write_dataset
from areasync.gaia2.report import write_report
from tests.bounds import BROWSER_S
from tests.service.dashboard.conftest import CHROMIUM, CHROMIUM_ARGS, chromium_missing_reason
from tests.stubs import stub_llm

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason=chromium_missing_reason()),
]

RUNS = 2


def retag(dataset: Path, scenario: str, tag: str) -> None:
    path = dataset / CONFIG / SPLIT / f"{scenario}.json"
    document = json.loads(path.read_text(encoding="utf-8"))
    document["metadata"]["definition"]["tags"] = [tag]
    path.write_text(json.dumps(document), encoding="utf-8")


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tiny_email passes, tiny_wrong_recipient sends to the wrong person (the tool judge
    rejects it), tiny_skip (re-tagged Search) never sends: each run twice."""
    root = tmp_path_factory.mktemp("gaia2_index")
    dataset = write_dataset(
        root / "dataset", only=["tiny_email", "tiny_skip", "tiny_wrong_recipient"]
    )
    retag(dataset, "tiny_skip", "Search")
    folder = root / "out"
    with stub_llm() as stub:
        args = compare.bench_args(dataset, folder, stub.endpoint, num_runs=RUNS)
        compare.run_areasync([*args, "--no-report"])
    write_report(folder, artifacts=True)
    return folder


@pytest.fixture(scope="module")
def browser(out: Path) -> Iterator[Any]:
    """Chromium, started after the sweep ran (Playwright's sync API holds an event loop)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Any, out: Path) -> Iterator[Any]:
    """The index, opened from disk; at the end, nothing said on the console (no policy
    violation, no script error)."""
    from playwright.sync_api import expect

    expect.set_options(timeout=BROWSER_S * 1000)
    context = browser.new_context()
    context.set_default_timeout(BROWSER_S * 1000)
    opened = context.new_page()
    problems: list[str] = []
    opened.on("console", lambda message: problems.append(message.text))
    opened.on("pageerror", lambda error: problems.append(str(error)))
    opened.goto((out / "index.html").as_uri())
    yield opened
    context.close()
    assert problems == []


def shown_scenarios(page: Any) -> list[list[str]]:
    """The visible scenario rows' verdict, split, scenario, passed, pass@k, pass^k."""
    rows: list[list[str]] = page.eval_on_selector_all(
        "details.scenario:not([hidden]) > summary",
        "rows => rows.map(r => [...r.children].slice(0, 6).map(c => c.innerText.trim()))",
    )
    return rows


def test_a_row_per_scenario_shows_k_of_n_pass_at_k_and_pass_hat_k_failures_first(
    page: Any,
) -> None:
    assert shown_scenarios(page) == [
        ["FAILED ALL", "execution", "tiny_wrong_recipient", "0/2", "0.0%", "0.0%"],
        ["FAILED ALL", "search", "tiny_skip", "0/2", "0.0%", "0.0%"],
        ["PASSED ALL", "execution", "tiny_email", "2/2", "100.0%", "100.0%"],
    ]
    assert page.inner_text(".scn-head").split()[4:6] == ["pass@2", "pass^2"]


def test_a_scenario_row_opens_onto_its_runs(page: Any) -> None:
    row = page.locator('details.scenario[data-scenario="tiny_email"]')
    assert not row.locator("table.runs").is_visible()
    row.locator("summary").click()
    runs = row.locator("table.runs tbody tr").evaluate_all(
        "rows => rows.map(r => [r.cells[0].innerText, r.cells[1].innerText])"
    )
    assert runs == [["1", "PASS"], ["2", "PASS"]]


def test_a_reason_its_runs_share_is_said_once_with_the_runs_it_covers(page: Any) -> None:
    row = page.locator('details.scenario[data-scenario="tiny_skip"]')
    row.locator("summary").click()
    reasons = row.locator(".reasons li")
    assert reasons.count() == 1
    assert reasons.locator(".count").inner_text() == "2 runs (1, 2)"
    assert "Agent count 0, Oracle count 1" in reasons.inner_text()


def test_the_split_filter_keeps_that_splits_scenarios(page: Any) -> None:
    page.select_option("#f-split", "search")
    assert [row[2] for row in shown_scenarios(page)] == ["tiny_skip"]
    assert page.inner_text("#f-count") == "1 of 3 scenarios"


def test_the_verdict_filter_keeps_the_scenarios_that_did_not_pass_every_run(page: Any) -> None:
    page.select_option("#f-verdict", "not-passed")
    assert [row[2] for row in shown_scenarios(page)] == ["tiny_wrong_recipient", "tiny_skip"]
    page.select_option("#f-verdict", "passed")
    assert [row[2] for row in shown_scenarios(page)] == ["tiny_email"]


def test_the_scenario_filter_keeps_the_ids_containing_the_text(page: Any) -> None:
    page.fill("#f-scenario", "WRONG")
    assert [row[2] for row in shown_scenarios(page)] == ["tiny_wrong_recipient"]


def test_sorting_by_scenario_id_reorders_the_rows(page: Any) -> None:
    page.select_option("#f-sort", "scenario")
    assert [row[2] for row in shown_scenarios(page)] == [
        "tiny_email",
        "tiny_skip",
        "tiny_wrong_recipient",
    ]


def test_the_pass_rate_chart_has_a_bar_per_split_with_its_rate(page: Any) -> None:
    bars = page.eval_on_selector_all(
        "#chart-pass-rate rect.bar",
        "bars => bars.map(b => [b.dataset.split, b.dataset.rate, b.dataset.passed, "
        "b.dataset.judged])",
    )
    assert bars == [["execution", "50.0", "2", "4"], ["search", "0.0", "0", "2"]]


@pytest.mark.parametrize("chart", ["dist-sim-time", "dist-tool-calls", "dist-tokens"])
def test_each_distribution_counts_every_run_once(page: Any, chart: str) -> None:
    counts = page.eval_on_selector_all(
        f"#{chart} rect.bar", "bars => bars.map(b => Number(b.dataset.count))"
    )
    assert sum(counts) == 3 * RUNS


def test_the_tool_calls_distribution_holds_the_runs_counts(page: Any) -> None:
    # tiny_skip's agent only replies (1 call); the others also send an email (2 calls).
    bins = page.eval_on_selector_all(
        "#dist-tool-calls rect.bar",
        "bars => bars.map(b => [Number(b.dataset.lo), Number(b.dataset.count)])",
    )
    assert [count for lo, count in bins if lo == 1] == [2]
    assert [count for lo, count in bins if lo == 2] == [4]


def test_a_rejected_call_is_shown_beside_the_oracles_call(page: Any, out: Path) -> None:
    page.goto((out / "run_1/execution/tiny_wrong_recipient/trace.html").as_uri())
    table = page.locator("table.expected")
    assert "tool judge reject" in table.locator("caption").inner_text()
    rows = table.locator("tbody tr").evaluate_all(
        "rows => rows.map(r => [r.cells[0].innerText, r.classList.contains('differs'), "
        "r.cells[1].innerText.replace(/\\s+/g, ''), r.cells[2].innerText.replace(/\\s+/g, '')])",
    )
    assert rows[:3] == [
        ["tool", False, "EmailClientV2__send_email", "EmailClientV2__send_email"],
        ["recipients", True, '["bob@example.com"]', '["carol@example.com"]'],
        ["subject", False, "Hi", "Hi"],
    ]


def test_a_missing_call_is_shown_as_expected_and_not_called(page: Any, out: Path) -> None:
    page.goto((out / "run_1/search/tiny_skip/trace.html").as_uri())
    first = page.locator("table.expected tbody tr").first
    assert first.locator("td").nth(0).inner_text() == "EmailClientV2__send_email"
    assert first.locator("td").nth(1).inner_text() == "not called"


def test_next_links_visit_every_run_once_in_the_index_order(page: Any, out: Path) -> None:
    page.click('details.scenario[data-scenario="tiny_wrong_recipient"] > summary')
    page.click("table.runs >> text=tiny_wrong_recipient run 1")
    visited = [page.locator("h1").inner_text().split(" FAIL")[0].split(" PASS")[0]]
    while page.locator("nav.runs-nav >> text=next →").count():
        page.click("nav.runs-nav >> text=next →")
        visited.append(page.locator("h1").inner_text().split(" FAIL")[0].split(" PASS")[0])
    assert visited == [
        f"{scenario} · run {n}"
        for scenario in ("tiny_wrong_recipient", "tiny_skip", "tiny_email")
        for n in range(1, RUNS + 1)
    ]


def test_a_trace_page_links_back_to_its_scenario_row_opened(page: Any, out: Path) -> None:
    page.goto((out / "run_2/search/tiny_skip/trace.html").as_uri())
    assert page.locator("nav.runs-nav .siblings").inner_text() == "Runs: 1✕2✕"
    page.click("nav.runs-nav >> text=↑ tiny_skip")
    assert page.locator('details.scenario[data-scenario="tiny_skip"]').get_attribute("open") == ""


def test_bench_report_prints_the_summary_and_then_the_reports_url(out: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "areasync.cli", "bench", "report", str(out), "--no-artifacts"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["split", "scenarios", "runs", "passed", "rate", "pass@2", "pass^2"]
    assert lines[1].split() == ["execution", "2", "4", "2", "50.0%", "50.0%", "50.0%"]
    assert lines[2].split() == ["search", "1", "2", "0", "0.0%", "0.0%", "0.0%"]
    assert lines[3].split() == ["Overall", "3", "6", "2", "33.3%", "33.3%", "33.3%"]
    assert "  0/2 passed  execution/tiny_wrong_recipient" in lines
    assert "  0/2 passed  search/tiny_skip" in lines
    assert lines[-1] == (out / "index.html").resolve().as_uri()
