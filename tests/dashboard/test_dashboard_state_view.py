"""The app-state inspector as apps people read, search and compare: contacts and an inbox as
tables, a search that keeps only the apps and branches holding the text, opened, and a
second read that marks what changed since the first."""

from __future__ import annotations

import re
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


async def test_contacts_show_as_a_table_of_people(server: Server, page: Page) -> None:
    session = await create_session(server, mode="manual")
    await open_session(page, server, session["session_id"])
    await open_state(page)
    contacts = page.locator("#state-dialog .app-state", has_text="ContactsApp")
    await contacts.locator("summary").first.click()
    table = contacts.locator(".app-view table")
    await expect(table.locator("caption")).to_have_text("Contacts (2)")
    await expect(table.locator("tbody tr")).to_have_text(
        [re.compile(r"^John Doe\s*johndoe@example\.com"), re.compile(r"^Greg Barty\s*gregb@")]
    )


async def test_an_email_shows_in_its_folder_with_its_sender_subject_and_date(
    server: Server, page: Page
) -> None:
    session = await create_session(server, mode="manual")
    await open_session(page, server, session["session_id"])
    async with connect(server, session["session_id"]) as controller:
        await controller.request({"type": "jump", "by": 20})  # Greg's email comes at T+16
    await open_state(page)
    email = page.locator("#state-dialog .app-state", has_text="EmailClientApp")
    await email.locator("summary").first.click()
    inbox = email.locator(".app-view table", has_text="INBOX")
    await expect(inbox.locator("caption")).to_have_text("INBOX (1)")
    row = inbox.locator("tbody tr")
    await expect(row.locator("td").nth(0)).to_have_text("gregb@example.com")
    await expect(row.locator("td").nth(2)).to_have_text("List of music")
    await expect(row.locator("td").nth(3)).to_have_text(
        re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$")
    )
    await expect(row.locator("td").nth(4)).to_have_text("music.pdf")


async def test_a_time_in_the_tree_shows_its_date_beside_its_number(
    server: Server, page: Page
) -> None:
    session = await create_session(server, mode="manual")
    await open_session(page, server, session["session_id"])
    async with connect(server, session["session_id"]) as controller:
        await controller.request({"type": "jump", "by": 20})  # Greg's email comes at T+16
    await open_state(page)
    await page.locator("#state-search").fill("timestamp")  # opens the way to every timestamp
    stamp = page.locator('#state-dialog .leaf[data-path$="/INBOX/emails/0/timestamp"] .value')
    await expect(stamp).to_have_text(
        re.compile(r"^\d+(\.\d+)? \(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\)$")
    )
