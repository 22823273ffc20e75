"""The app-state inspector as a tree people search and compare: a search keeps only the apps
and branches holding the text, opened; a second read marks what changed since the first."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("playwright.async_api", reason="playwright is not installed (dev extras)")

from playwright.async_api import Page, expect

from tests.dashboard.conftest import (
    CHROMIUM,
    Server,
    chromium_missing_reason,
    connect,
    create_session,
    open_session,
)

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=chromium_missing_reason())


async def open_state(page: Page) -> None:
    await page.get_by_role("button", name="App state", exact=True).click()
    await expect(page.locator("#state-dialog .app-state").first).to_be_visible()


async def test_a_search_keeps_only_the_branches_holding_the_text_opened(
    server: Server, page: Page
) -> None:
    session = await create_session(server, mode="manual")
    await open_session(page, server, session["session_id"])
    await open_state(page)
    await page.locator("#state-search").fill("gregb@")
    apps = page.locator("#state-dialog .app-state")
    await expect(apps).to_have_count(1)
    await expect(apps.locator(".app-name")).to_have_text("ContactsApp")
    email = page.locator("#state-dialog .leaf", has_text="gregb@example.com")
    await expect(email).to_be_visible()
    await expect(email.locator(".key")).to_have_text("email")
    await expect(page.locator("#state-dialog .leaf", has_text="johndoe@")).to_have_count(0)


async def test_a_second_read_marks_what_changed_since_the_first(server: Server, page: Page) -> None:
    session = await create_session(server, mode="manual")
    await open_session(page, server, session["session_id"])
    await open_state(page)
    await expect(page.locator("#state-dialog .state-changes")).to_have_count(0)
    await page.locator("#state-close").click()
    async with connect(server, session["session_id"]) as controller:
        await controller.request({"type": "jump", "next_event": True})  # a message arrives
    await open_state(page)
    await expect(page.locator("#state-dialog .state-changes")).to_contain_text(
        "since the last read"
    )
    changed = page.locator("#state-dialog .app-state.changed")
    await expect(changed).to_have_count(1)
    await expect(changed.locator(".app-name")).to_have_text("MessagingApp")
    await expect(changed.locator(".branch.changed, .leaf.changed").first).to_be_visible()
    await expect(page.locator("#state-when")).to_contain_text("changes since T+00:00:00.0")
