"""The dashboard against a real `areasync serve`: sessions list, live events, clock controls,
roles, the inspector and the end of a session, each seen through the page as a user sees it."""

from __future__ import annotations

import math
import re

import pytest

pytest.importorskip("playwright.async_api", reason="playwright is not installed (dev extras)")

from playwright.async_api import Page, expect

from tests.service.dashboard.conftest import (
    BROWSER_TESTS,
    DEFAULT_SESSION,
    Server,
    connect,
    create_session,
    opened,
    until,
)

pytestmark = BROWSER_TESTS

FIRST_EVENT = "MessagingApp.add_message"  # scenario_tutorial's first event, at T+5 s


async def open_session(page: Page, server: Server, session: str, **query: str) -> None:
    await page.goto(server.page_url(session=session, **query))
    await expect(page.locator("#conn")).to_have_attribute("data-state", "live")


async def test_page_lists_the_default_session(server: Server, page: Page) -> None:
    await page.goto(server.page_url())
    item = page.locator(f'.session-item[data-id="{DEFAULT_SESSION}"]')
    await expect(item).to_be_visible()
    await expect(item.locator(".state-pill")).to_have_text("manual")  # the server's --mode manual
    await expect(item).to_contain_text("events")
    await expect(item).to_contain_text(re.compile(r"\d+ clients?"))


async def test_events_appear_while_the_simulation_runs(server: Server, page: Page) -> None:
    await opened(server, page, mode="realtime", speed=2.0)
    await expect(page.locator(".row", has_text=FIRST_EVENT)).to_be_visible(timeout=20_000)
    # It arrived live, before the session's end, not as a replay afterwards.
    await expect(page.locator("#state")).to_have_text("running")
    await expect(page.locator("#ended")).to_be_hidden()
    await expect(page.locator("#stats")).to_contain_text(re.compile(r"^3 events"))


async def test_pause_stops_the_clock(server: Server, page: Page) -> None:
    # The page's own time is Playwright's (it flows as the machine's until told otherwise):
    # the clock shown between the server's updates is drawn from it.
    await page.clock.install()
    session = await opened(server, page, mode="realtime", speed=1.0)
    clock = page.locator("#clock-time")
    await expect(clock).not_to_have_text("T+00:00:00.0")
    await page.get_by_role("button", name="Pause", exact=True).click()
    await expect(page.locator("#state")).to_have_text("paused")
    # The page shows the time the server paused at once that clock item reaches it (on a
    # loaded machine, after the state: what the page drew before was its own interpolation).
    async with connect(server, session["session_id"], role="observer") as observer:
        paused = observer.welcome["clock"]
    assert paused["state"] == "paused"
    frozen = shown_offset(paused["time"] - paused["start_time"])
    await expect(clock).to_have_text(frozen)
    # Five seconds of the page's timers and animation frames, run at once: a clock still
    # running would have been drawn on by up to a second (app.js's interpolation bound).
    await page.clock.run_for(5_000)
    await expect(clock).to_have_text(frozen)


def shown_offset(seconds: float) -> str:
    """`format.js`'s fmtOffset for under an hour: T+HH:MM:SS.s, tenths floored."""
    tenths = math.floor(seconds * 10 + 1e-6)
    return f"T+00:{tenths // 600:02d}:{tenths % 600 / 10:04.1f}"


async def test_resume_restarts_the_clock(server: Server, page: Page) -> None:
    await opened(server, page, mode="realtime", speed=1.0)
    await page.get_by_role("button", name="Pause", exact=True).click()
    await expect(page.locator("#state")).to_have_text("paused")
    frozen = await page.locator("#clock-time").text_content()
    await page.get_by_role("button", name="Resume", exact=True).click()
    await expect(page.locator("#state")).to_have_text("running")
    await expect(page.locator("#clock-time")).not_to_have_text(frozen or "")


async def test_next_event_fires_the_next_event(server: Server, page: Page) -> None:
    await opened(server, page, mode="manual")
    await expect(page.locator("#tl-empty")).to_be_visible()
    await page.get_by_role("button", name="Next event", exact=True).click()
    await expect(page.locator(".row", has_text=FIRST_EVENT)).to_be_visible()
    await expect(page.locator("#clock-time")).to_have_text("T+00:00:05.0")
    await expect(page.locator("#last-action")).to_have_text("Next event ✓")


async def test_controller_role_is_taken_from_the_controller_token(
    server: Server, page: Page
) -> None:
    session = await create_session(server, mode="manual")
    token = session["tokens"]["controller"]
    await open_session(page, server, session["session_id"], token=token)
    await expect(page.locator("#role")).to_have_text("controller")
    await page.get_by_role("button", name="Next event", exact=True).click()
    await expect(page.locator(".row", has_text=FIRST_EVENT)).to_be_visible()


async def test_row_click_shows_the_event_in_detail(server: Server, page: Page) -> None:
    await opened(server, page, mode="manual")
    await page.get_by_role("button", name="Next event", exact=True).click()
    await page.locator(".row", has_text=FIRST_EVENT).click()
    detail = page.locator("#detail")
    await expect(detail).to_be_visible()
    await expect(page.locator("#detail-title")).to_have_text(FIRST_EVENT)
    await expect(detail.locator("dl.args")).to_contain_text("sender")
    await expect(detail.locator("dl.args")).to_contain_text("John Doe")
    await expect(detail).to_contain_text("Return value")


async def test_type_filter_hides_and_shows_rows(server: Server, page: Page) -> None:
    await opened(server, page, mode="manual")
    await page.get_by_role("button", name="Next event", exact=True).click()
    env_rows = page.locator('.row[data-type="ENV"]:not([hidden])')
    await expect(env_rows).to_have_count(1)
    await page.locator('.chip[data-type="ENV"]').click()
    await expect(env_rows).to_have_count(0)
    await page.locator('.chip[data-type="ENV"]').click()
    await expect(env_rows).to_have_count(1)


async def test_app_filter_keeps_one_app(server: Server, page: Page) -> None:
    await opened(server, page, mode="manual")
    for _ in range(2):  # MessagingApp.add_message, then AgentUserInterface.send_message_to_agent
        await page.get_by_role("button", name="Next event", exact=True).click()
        await expect(page.locator("#last-action")).to_have_text("Next event ✓")
    await expect(page.locator("#stats")).to_contain_text(re.compile(r"^2 events"))
    await page.locator("#app-filter").select_option("MessagingApp")
    rows = page.locator(".row:not([hidden])")
    await expect(rows).to_have_count(1)
    await expect(rows).to_contain_text(FIRST_EVENT)


async def test_app_state_inspector_shows_the_apps(server: Server, page: Page) -> None:
    await opened(server, page, mode="manual")
    await page.get_by_role("button", name="App state", exact=True).click()
    dialog = page.locator("#state-dialog")
    await expect(dialog).to_be_visible()
    messaging = dialog.locator("details", has_text="MessagingApp")
    await expect(messaging).to_be_visible()
    await messaging.locator("summary").first.click()
    await expect(messaging.locator(".key", has_text="conversations")).to_be_visible()


async def test_stop_shows_the_validation_result(server: Server, page: Page) -> None:
    await opened(server, page, mode="manual")
    stop = page.locator("#btn-stop")
    await stop.click()  # arms
    await expect(stop).to_have_text("Confirm stop")
    await stop.click()
    ended = page.locator("#ended")
    await expect(ended).to_be_visible()
    await expect(ended).to_contain_text("Stopped by a controller")
    await expect(ended).to_contain_text("stopped by a controller")  # why, from ended.reason
    # Nobody forwarded the email: the tutorial's validation fails, and the page says so.
    await expect(ended).to_contain_text("validation failed")
    await expect(page.locator("#conn")).to_have_attribute("data-state", "ended")


async def test_stream_seen_by_the_page_matches_the_server(server: Server, page: Page) -> None:
    session = await opened(server, page, mode="manual")
    async with connect(server, session["session_id"]) as controller:
        for _ in range(3):
            await controller.request({"type": "jump", "next_event": True})
        await until(page, f"window.__areasync.lastSeq() >= {controller.last_seq}")
        # Received is not yet shown: items wait in the page's queue for the next animation frame.
        await page.evaluate("window.__areasync.settled()")
        shown = await page.evaluate("window.__areasync.rows().map(r => [r.seq, r.kind])")
        assert [tuple(row) for row in shown] == controller.rows()


async def test_jump_by_moves_the_clock_and_fires_due_events(server: Server, page: Page) -> None:
    await opened(server, page, mode="manual")
    await page.locator("#jump-by").fill("10")
    await page.get_by_role("button", name="Jump", exact=True).click()
    await expect(page.locator("#clock-time")).to_have_text("T+00:00:10.0")
    # The events due at T+5 and T+6 fired on the way.
    await expect(page.locator("#stats")).to_contain_text(re.compile(r"^2 events"))


async def test_tick_advances_the_clock_by_ticks(server: Server, page: Page) -> None:
    await opened(server, page, mode="manual")
    await page.locator("#tick-n").fill("3")
    await page.get_by_role("button", name="Tick", exact=True).click()
    await expect(page.locator("#clock-sub")).to_contain_text("3 loop ticks")
    await expect(page.locator("#clock-time")).not_to_have_text("T+00:00:00.0")
    await expect(page.locator("#last-action")).to_have_text("Tick \u00d73 \u2713")


async def test_set_speed_changes_the_realtime_speed(server: Server, page: Page) -> None:
    await opened(server, page, mode="realtime", speed=1.0)
    await page.locator("#speed").fill("4")
    await page.get_by_role("button", name="Set speed", exact=True).click()
    await expect(page.locator("#clock-sub")).to_contain_text("realtime \u00d74")


FEED_20K = """(n) => {
  const frames = [];
  for (let seq = 1; seq <= n; seq += 1) {
    frames.push({type: "event", seq, event: {event_id: `E${seq}`, event_type: "ENV", time: seq,
      app: "BenchApp", function: "bump", args: {amount: 1}, return_value: seq, exception: null}});
  }
  const clock = {state: "running", time: 0, tick: 0, mode: "manual", speed: 1, start_time: 0};
  window.__areasync.feed([{type: "welcome", session_id: "feed", role: "observer", epoch: "e",
    seq: 0, scenario_id: "feed", clock, replay: "full"}, ...frames]);
}"""


async def test_twenty_thousand_events_keep_only_a_screenful_of_rows(
    server: Server, page: Page
) -> None:
    # The page's own ingest, without a socket (?offline): the rendering alone is under test.
    await page.goto(server.page_url(offline="1", session="feed"))
    await until(page, "window.__areasync && !!window.__areasync.conn")
    await page.evaluate(FEED_20K, 20_000)
    await expect(page.locator("#stats")).to_contain_text("20,000 events")
    await expect(page.locator('.row[data-seq="20000"]')).to_be_visible()
    assert await page.locator(".row").count() < 100
    await page.evaluate("document.getElementById('viewport').scrollTop = 0")
    await expect(page.locator('.row[data-seq="1"]')).to_be_visible()
    assert await page.locator(".row").count() < 100
