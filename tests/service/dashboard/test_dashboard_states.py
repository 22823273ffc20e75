"""Every state of a session tells the truth, and says what to do: an idle session says what it
waits for, the header and the sidebar read one clock, an ended session is named for how it
ended, controls show only where they can act, roles and rows read as a user expects."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("playwright.async_api", reason="playwright is not installed (dev extras)")

from playwright.async_api import Page, expect

from tests.service.dashboard.conftest import (
    BROWSER_TESTS,
    Server,
    connect,
    create_session,
    open_session,
    opened,
    start_server,
    stopped,
)

pytestmark = BROWSER_TESTS

# Its only event sends the agent the user's request at T+0; then nothing is scheduled.
IDLE_SCENARIO = "scenario_find_image_file"


async def started_idle(page: Page, server: Server) -> dict[str, str]:
    """A fast session of IDLE_SCENARIO with no agent, started from the page."""
    session = await opened(server, page, scenario=IDLE_SCENARIO, mode="fast")
    await page.get_by_role("button", name="Start", exact=True).click()
    return session


async def test_an_idle_session_says_it_is_idle_and_what_it_waits_for(
    server: Server, page: Page
) -> None:
    await started_idle(page, server)
    await expect(page.locator("#state")).to_have_text("idle")
    waiting = page.locator("#waiting")
    await expect(waiting).to_contain_text("nothing is scheduled and no agent is connected")
    await expect(waiting).to_contain_text("I need to find the image file")
    await expect(waiting).to_contain_text("Or Stop to end it")


async def test_an_idle_sessions_card_in_the_sidebar_says_idle_too(
    server: Server, page: Page
) -> None:
    session = await started_idle(page, server)
    card = page.locator(f'.session-item[data-id="{session["session_id"]}"]')
    await expect(card.locator(".state-pill")).to_have_text("idle")


async def test_the_header_and_the_sidebar_read_the_same_clock(server: Server, page: Page) -> None:
    session = await started_idle(page, server)
    # Fast mode stepped to its first tick at T+1 s and published no clock item on the way.
    await expect(page.locator("#clock-time")).to_have_text("T+00:00:01.0")
    card = page.locator(f'.session-item[data-id="{session["session_id"]}"]')
    await expect(card.locator(".si-time")).to_have_text("T+00:00:01")


async def test_a_run_that_passed_reads_passed_in_the_pill_the_banner_and_the_sidebar(
    server: Server, page: Page
) -> None:
    session = await create_session(server, mode="fast", oracle=True)
    await page.goto(server.page_url(session=session["session_id"]))  # it may have ended already
    await expect(page.locator("#state")).to_have_text("passed")
    await expect(page.locator("#ended .ended-title")).to_have_text(
        "Passed: ran to the end, checks passed"
    )
    card = page.locator(f'.session-item[data-id="{session["session_id"]}"]')
    await expect(card.locator(".state-pill")).to_have_text("passed")


async def test_a_stopped_session_reads_stopped_and_by_whom(server: Server, page: Page) -> None:
    await stopped(server, page, mode="manual")
    await expect(page.locator("#state")).to_have_text("stopped")
    await expect(page.locator("#ended .ended-title")).to_have_text("Stopped by a controller")


async def test_an_ended_session_shows_no_clock_controls(server: Server, page: Page) -> None:
    await stopped(server, page, mode="manual")
    await expect(page.locator("#ended")).to_be_visible()
    for control in ("#btn-toggle", "#btn-next", "#form-jump", "#form-tick", "#btn-stop"):
        await expect(page.locator(control)).to_be_hidden()
    await expect(page.get_by_role("button", name="App state", exact=True)).to_be_enabled()


async def test_speed_is_offered_only_for_a_realtime_clock(server: Server, page: Page) -> None:
    manual = await create_session(server, mode="manual")
    await open_session(page, server, manual["session_id"])
    await expect(page.locator("#form-jump")).to_be_visible()
    await expect(page.locator("#form-speed")).to_be_hidden()
    realtime = await create_session(server, mode="realtime")
    await open_session(page, server, realtime["session_id"])
    await expect(page.locator("#form-speed")).to_be_visible()


async def test_the_clock_line_counts_loop_ticks_apart_from_time(server: Server, page: Page) -> None:
    await opened(server, page, mode="manual")
    await page.locator("#jump-by").fill("20")
    await page.get_by_role("button", name="Jump", exact=True).click()
    await expect(page.locator("#clock-time")).to_have_text("T+00:00:20.0")
    # ARE's grid ticked 17 times on the way: the line names them loop ticks, not a time.
    await expect(page.locator("#clock-sub")).to_have_text("manual · 17 loop ticks")


async def test_the_admin_token_is_badged_admin(server: Server, page: Page) -> None:
    await opened(server, page, mode="manual")
    await expect(page.locator("#role")).to_have_text("admin")


async def test_rows_are_numbered_from_one(server: Server, page: Page) -> None:
    await opened(server, page, mode="manual")
    await page.get_by_role("button", name="Next event", exact=True).click()
    first = page.locator(".row:not([hidden])").first
    await expect(first.locator(".c-seq")).to_have_text("1")


async def test_a_scenario_without_a_start_date_shows_no_1970_date(
    server: Server, page: Page
) -> None:
    await opened(server, page, mode="manual")
    await page.get_by_role("button", name="Next event", exact=True).click()
    await page.locator(".row").first.click()
    await expect(page.locator("#detail")).to_contain_text("T+00:00:05.000")
    await expect(page.locator("#detail .facts")).not_to_contain_text("1970")
    await expect(page.locator("#clock-sub")).not_to_contain_text("1970")


async def test_the_overview_counts_the_sessions_by_state_and_their_events_per_second(
    tmp_path: Path, page: Page
) -> None:
    own = start_server(tmp_path, "--mode", "manual")  # a list no other test adds to
    try:
        session = await create_session(own, mode="fast", oracle=True)
        await page.goto(own.page_url(session=session["session_id"]))
        await expect(page.locator("#state")).to_have_text("passed")
        overview = page.locator("#overview")
        await expect(overview).to_contain_text("1 manual · 1 passed")
        await expect(overview).to_contain_text(re.compile(r"· \d+\.\d events/s$"))
    finally:
        own.stop()


async def test_a_manual_session_reads_manual_not_running(server: Server, page: Page) -> None:
    session = await opened(server, page, mode="manual")
    await expect(page.locator("#state")).to_have_text("manual")
    card = page.locator(f'.session-item[data-id="{session["session_id"]}"]')
    await expect(card.locator(".state-pill")).to_have_text("manual")


async def test_a_manual_session_says_the_controls_move_it_and_when_the_next_item_is_due(
    server: Server, page: Page
) -> None:
    await opened(server, page, mode="manual")
    banner = page.locator("#waiting")
    await expect(banner).to_contain_text("Manual clock: time moves only when a controller moves it")
    await expect(banner).to_contain_text("Press Next event to run the next scheduled item")
    # scenario_tutorial's first event is due 5 s after its start.
    await expect(banner).to_contain_text("The next scheduled item is due at T+00:00:05.0")
    await page.get_by_role("button", name="Next event", exact=True).click()
    await expect(banner).not_to_contain_text("due at T+00:00:05.0")
    await expect(page.locator("#state")).to_have_text("manual")


async def test_an_observer_of_a_manual_session_is_told_a_controller_token_moves_it(
    server: Server, page: Page
) -> None:
    session = await create_session(server, mode="manual")
    token = session["tokens"]["observer"]
    await open_session(page, server, session["session_id"], token=token)
    banner = page.locator("#waiting")
    await expect(banner).to_contain_text("Manual clock")
    await expect(banner).to_contain_text("needs this session's controller token")
    await expect(banner).not_to_contain_text("Press Next event")


async def test_a_paused_session_reads_paused_and_says_resume_goes_on(
    server: Server, page: Page
) -> None:
    session = await opened(server, page, mode="realtime")
    await expect(page.locator("#state")).to_have_text("running")
    await expect(page.locator("#waiting")).to_be_hidden()
    await page.get_by_role("button", name="Pause", exact=True).click()
    await expect(page.locator("#state")).to_have_text("paused")
    banner = page.locator("#waiting")
    await expect(banner).to_contain_text("Paused: time stands still until a controller resumes it")
    await expect(banner.locator(".waiting-notes")).to_have_text("Press Resume to go on from here.")
    card = page.locator(f'.session-item[data-id="{session["session_id"]}"]')
    await expect(card.locator(".state-pill")).to_have_text("paused")
    await page.get_by_role("button", name="Resume", exact=True).click()
    await expect(page.locator("#state")).to_have_text("running")
    await expect(page.locator("#waiting")).to_be_hidden()


async def test_a_fast_session_on_its_agents_turn_says_it_waits_for_the_agent(
    server: Server, page: Page
) -> None:
    session = await opened(server, page, mode="fast")
    await expect(page.locator("#state")).to_have_text("waiting")
    # An agent that connects holds the fast clock on its turn, until it waits: it never does.
    async with connect(server, session["session_id"], role="agent"):
        await expect(page.locator("#state")).to_have_text("agent's turn")
        await expect(page.locator("#waiting")).to_contain_text(
            "The agent's turn: the fast clock stands still while the agent acts"
        )
        card = page.locator(f'.session-item[data-id="{session["session_id"]}"]')
        await expect(card.locator(".state-pill")).to_have_text("agent's turn")


async def test_a_run_whose_checks_failed_reads_failed(server: Server, page: Page) -> None:
    await opened(server, page, mode="fast")
    # Started without an agent: the scenario runs to its end with nobody acting on it.
    await page.get_by_role("button", name="Start", exact=True).click()
    await expect(page.locator("#state")).to_have_text("failed")
    await expect(page.locator("#ended .ended-title")).to_have_text(
        "Failed: ran to the end, checks failed"
    )
