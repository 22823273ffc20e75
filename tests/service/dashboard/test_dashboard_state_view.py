"""The app-state inspector as apps people read, search and compare: contacts and an inbox as
tables, a search that keeps only the apps and branches holding the text, opened, and what
changed marked: since the last read, since a selected row (the server rebuilds the state
there), and for a fork since its cut or against its source now."""

from __future__ import annotations

import re

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
)

pytestmark = BROWSER_TESTS


async def open_state(page: Page) -> None:
    await page.get_by_role("button", name="App state", exact=True).click()
    await expect(page.locator("#state-dialog .app-state").first).to_be_visible()


async def with_gregs_email(server: Server, page: Page) -> None:
    """A manual session moved past T+16, when Greg's email comes, its state open in `page`."""
    session = await opened(server, page, mode="manual")
    async with connect(server, session["session_id"]) as controller:
        await controller.request({"type": "jump", "by": 20})
    await open_state(page)


async def test_a_search_keeps_only_the_branches_holding_the_text_opened(
    server: Server, page: Page
) -> None:
    await opened(server, page, mode="manual")
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
    session = await opened(server, page, mode="manual")
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
    await expect(page.locator("#state-when")).to_contain_text(
        "changes since the last read (at T+00:00:00.0)"
    )


async def test_contacts_show_as_a_table_of_people(server: Server, page: Page) -> None:
    await opened(server, page, mode="manual")
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
    await with_gregs_email(server, page)
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
    await with_gregs_email(server, page)
    await page.locator("#state-search").fill("timestamp")  # opens the way to every timestamp
    stamp = page.locator('#state-dialog .leaf[data-path$="/INBOX/emails/0/timestamp"] .value')
    await expect(stamp).to_have_text(
        re.compile(r"^\d+(\.\d+)? \(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\)$")
    )


async def changed_apps(page: Page) -> list[str]:
    """The apps the inspector marks changed, once it has read and compared."""
    await expect(page.locator("#state-dialog .state-changes")).to_be_visible()
    names = page.locator("#state-dialog .app-state.changed .app-name")
    return [str(name) for name in await names.all_inner_texts()]


async def test_the_state_compared_with_a_selected_row_marks_what_changed_after_it(
    server: Server, page: Page
) -> None:
    session = await opened(server, page, mode="manual")
    async with connect(server, session["session_id"]) as controller:
        await controller.request({"type": "jump", "next_event": True})  # a message at T+5
        await page.locator(".row").first.click()
        await controller.request({"type": "jump", "by": 20})  # Greg's email comes at T+16
    await open_state(page)
    await page.locator("#state-compare").select_option(label="the state after row 1 (selected)")
    await expect(page.locator("#state-when")).to_contain_text("changes since row 1")
    changed = await changed_apps(page)
    assert "EmailClientApp" in changed and "MessagingApp" not in changed
    await expect(page.locator("#state-dialog .state-changes")).to_contain_text("since row 1")


async def test_with_no_row_selected_the_row_comparison_is_not_offered(
    server: Server, page: Page
) -> None:
    await opened(server, page, mode="manual")
    await open_state(page)
    row = page.locator('#state-compare option[value="row"]')
    await expect(row).to_be_disabled()
    await expect(row).to_have_text("the state after a row (select one)")
    await expect(page.locator('#state-compare option[value="cut"]')).to_be_disabled()


async def forked_then_emailed(server: Server, page: Page) -> str:
    """A session stepped to its first message, forked from the page as it is; the fork then
    jumped past Greg's email (T+16). The source's id; the page shows the fork."""
    session = await create_session(server, mode="manual")
    source = session["session_id"]
    await open_session(page, server, source)
    async with connect(server, source) as controller:
        await controller.request({"type": "jump", "next_event": True})
    await expect(page.locator(".row")).not_to_have_count(0)
    await page.get_by_role("button", name="Fork here", exact=True).click()
    await expect(page.locator("#crumb")).not_to_have_text(source)
    await expect(page.locator("#forked-from")).to_contain_text(f"Forked from {source}")
    fork = str(await page.locator("#crumb").text_content())
    async with connect(server, fork) as controller:
        await controller.request({"type": "jump", "by": 20})
    return source


async def test_a_fork_compared_with_its_source_now_marks_where_it_went_its_own_way(
    server: Server, page: Page
) -> None:
    source = await forked_then_emailed(server, page)
    await open_state(page)
    await page.locator("#state-compare").select_option(label=f"{source} now")
    await expect(page.locator("#state-when")).to_contain_text(f"changes since {source} now")
    changed = await changed_apps(page)
    assert "EmailClientApp" in changed and "MessagingApp" not in changed


async def test_a_fork_compared_with_its_cut_marks_what_it_did_since(
    server: Server, page: Page
) -> None:
    source = await forked_then_emailed(server, page)
    await open_state(page)
    await page.locator("#state-compare").select_option(value="cut")
    await expect(page.locator("#state-when")).to_contain_text(
        f"changes since the fork's cut ({source} after row"
    )
    changed = await changed_apps(page)
    assert "EmailClientApp" in changed and "MessagingApp" not in changed


async def test_a_message_of_a_scenario_without_a_start_date_shows_its_time_as_the_timeline_does(
    server: Server, page: Page
) -> None:
    session = await opened(server, page, mode="manual")
    async with connect(server, session["session_id"]) as controller:
        await controller.request({"type": "jump", "next_event": True})  # a message at T+5
    await open_state(page)
    messaging = page.locator("#state-dialog .app-state", has_text="MessagingApp")
    await messaging.locator("summary").first.click()
    time = messaging.locator(".app-view tbody tr td").nth(2)  # Sender, Message, Time
    await expect(time).to_have_text("T+00:00:05")
