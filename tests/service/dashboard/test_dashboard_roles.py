"""The dashboard offers each role only what the server lets it do: the clock controls to a
controller (or the admin), none to an observer, who is told which token drives the clock."""

from __future__ import annotations

import pytest

pytest.importorskip("playwright.async_api", reason="playwright is not installed (dev extras)")

from playwright.async_api import Page, expect

from tests.service.dashboard.conftest import BROWSER_TESTS, Server, create_session

pytestmark = BROWSER_TESTS

CLOCK_CONTROLS = ["Pause", "Next event", "Jump", "Tick", "Set speed", "Stop"]


async def open_as(page: Page, server: Server, role: str) -> None:
    """A fresh manual session, opened with the token of `role`."""
    session = await create_session(server, mode="manual")
    token = session["tokens"][role]
    await page.goto(server.page_url(session=session["session_id"], token=token))
    await expect(page.locator("#conn")).to_have_attribute("data-state", "live")
    await expect(page.locator("#role")).to_contain_text(role)


async def test_an_observer_is_shown_no_clock_controls(server: Server, page: Page) -> None:
    await open_as(page, server, "observer")
    for name in CLOCK_CONTROLS:
        await expect(page.get_by_role("button", name=name, exact=True)).to_have_count(0)
    await expect(page.locator("#readonly-note")).to_be_visible()


async def test_an_observer_is_told_which_token_drives_the_clock(server: Server, page: Page) -> None:
    await open_as(page, server, "observer")
    await expect(page.locator("#readonly-note")).to_contain_text("controller token")
    await expect(page.locator("#readonly-note")).to_contain_text("admin token")


async def test_an_observer_keeps_the_app_state_inspector(server: Server, page: Page) -> None:
    await open_as(page, server, "observer")
    await page.get_by_role("button", name="App state", exact=True).click()
    await expect(page.locator("#state-dialog details", has_text="MessagingApp")).to_be_visible()


async def test_a_controller_is_shown_every_clock_control_enabled(
    server: Server, page: Page
) -> None:
    await open_as(page, server, "controller")
    # Its clock is manual: a speed is for a realtime clock, and is offered only there.
    for name in [name for name in CLOCK_CONTROLS if name != "Set speed"]:
        await expect(page.get_by_role("button", name=name, exact=True)).to_be_enabled()
    await expect(page.locator("#readonly-note")).to_be_hidden()
