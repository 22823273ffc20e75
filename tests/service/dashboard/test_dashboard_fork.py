"""The admin forks the open session from the page: "Fork here" (where it is now) in the controls,
"Fork after row N" in a selected row's details; the fork opens as Restart's new session does,
and its stream starts with the source's items up to the cut. A refused fork says why; a
non-admin page offers no fork at all."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("playwright.async_api", reason="playwright is not installed (dev extras)")

from playwright.async_api import Page, expect

from tests.service.dashboard.conftest import (
    BROWSER_TESTS,
    Server,
    connect,
    create_session,
    running_server,
)
from tests.waiting import eventually

pytestmark = BROWSER_TESTS

STEPS = 3  # "Next event" presses before the fork: a few events to carry over


async def stream(server: Server, session: str) -> list[dict[str, Any]]:
    """Every stream item of `session` so far (a replay from seq 1 up to its welcome's seq)."""
    async with connect(server, session, role="observer") as client:
        await eventually(lambda: client.last_seq >= client.welcome["seq"], within=20)
        return list(client.items)


async def session_with_events(server: Server, page: Page) -> str:
    """A manual session stepped through a few events, open in `page` with the admin token."""
    session = (await create_session(server, mode="manual"))["session_id"]
    async with connect(server, session) as controller:
        for _ in range(STEPS):
            await controller.request({"type": "jump", "next_event": True})
    await page.goto(server.page_url(session=session))
    await expect(page.locator("#conn")).to_have_attribute("data-state", "live")
    await expect(page.locator("#btn-fork")).to_be_visible()
    return session


async def opened_fork(page: Page, source: str) -> str:
    """The session the page switched to after a fork of `source` (live, its own id)."""
    await expect(page.locator("#crumb")).not_to_have_text(source)
    await expect(page.locator("#conn")).to_have_attribute("data-state", "live")
    return str(await page.locator("#crumb").text_content())


async def test_fork_here_opens_a_session_whose_stream_is_the_sources_so_far(
    server: Server, page: Page
) -> None:
    source = await session_with_events(server, page)
    before = await stream(server, source)
    await page.get_by_role("button", name="Fork here", exact=True).click()
    fork = await opened_fork(page, source)
    await expect(page.locator("#forked-from")).to_contain_text(f"Forked from {source} after row")
    assert fork in [s["id"] for s in server.sessions()]
    forked = await stream(server, fork)
    assert forked[: len(before)] == before
    rows = sum(1 for item in forked if item["type"] in ("event", "notification"))
    assert rows >= STEPS
    await expect(page.locator(".row")).to_have_count(rows)


async def test_fork_at_a_selected_row_cuts_the_stream_there(server: Server, page: Page) -> None:
    source = await session_with_events(server, page)
    before = await stream(server, source)
    first_event = next(item for item in before if item["type"] == "event")
    cut = int(first_event["seq"])
    # Rows count from 1 over events and notifications; the cut is the stream's seq.
    row = len(rows_to(before, cut))
    await page.locator(".row", has_text=first_event["event"]["function"]).first.click()
    await page.get_by_role("button", name=f"Fork after row {row}", exact=True).click()
    fork = await opened_fork(page, source)
    label = page.locator("#forked-from")
    await expect(label).to_contain_text(f"Forked from {source} after row")
    # The fork stands where its replay stopped: at the cut, or past it when the record that
    # reached the cut appended more than one item (an event and its notification).
    at = int(re.search(r"stream item (\d+)", await label.inner_text())[1])  # type: ignore[index]
    forked = await stream(server, fork)
    assert at >= cut and forked[:at] == before[:at]
    later = [item for item in before if item["type"] == "event" and item["seq"] > cut]
    assert later and not [item for item in forked if item in later]


@pytest.fixture(scope="module")
def full_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server with room for two sessions: its default one and one the test creates."""
    yield from running_server(tmp_path_factory, "--mode", "manual", "--max-sessions", "2")


async def test_a_refused_fork_is_shown_saying_why(full_server: Server, page: Page) -> None:
    source = await session_with_events(full_server, page)
    await page.get_by_role("button", name="Fork here", exact=True).click()
    refused = page.locator(".toast", has_text="Fork failed")
    await expect(refused).to_contain_text(f"The server refused to fork {source}")
    await expect(page.locator("#crumb")).to_have_text(source)
    await expect(page.locator("#btn-fork")).to_be_enabled()


async def test_an_observer_page_offers_no_fork(server: Server, page: Page) -> None:
    session = await create_session(server, mode="manual")
    async with connect(server, session["session_id"]) as controller:
        await controller.request({"type": "jump", "next_event": True})
    token = session["tokens"]["observer"]
    await page.goto(server.page_url(session=session["session_id"], token=token))
    await expect(page.locator("#role")).to_contain_text("observer")
    await page.locator(".row").first.click()
    await expect(page.locator("#detail")).to_be_visible()
    await expect(page.get_by_role("button", name="Fork", exact=False)).to_have_count(0)


async def forked_at_first_event(
    server: Server, page: Page
) -> tuple[str, str, list[dict[str, Any]]]:
    """A session with a few events, forked from the page after its first event's row: the
    source's id, the fork's id and the source's stream."""
    source = await session_with_events(server, page)
    before = await stream(server, source)
    first_event = next(item for item in before if item["type"] == "event")
    await page.locator(f'.row[data-seq="{first_event["seq"]}"]').click()
    await page.get_by_role("button", name=re.compile(r"^Fork after row \d+$")).click()
    return source, await opened_fork(page, source), before


async def cut_of(server: Server, fork: str) -> int:
    """The seq of the source's stream the fork shares, as its welcome says."""
    async with connect(server, fork, role="observer") as client:
        return int(client.welcome["forked_from"]["seq"])


def rows_to(items: list[dict[str, Any]], seq: int) -> list[dict[str, Any]]:
    """The timeline's rows (events and notifications) up to `seq`: rows count from 1, so the
    last one's number is how many there are."""
    return [i for i in items if i["type"] in ("event", "notification") and i["seq"] <= seq]


async def test_a_fork_says_after_which_of_its_sources_rows_it_was_forked(
    server: Server, page: Page
) -> None:
    source, fork, before = await forked_at_first_event(server, page)
    at = await cut_of(server, fork)
    n = len(rows_to(before, at))
    await expect(page.locator("#forked-from")).to_have_text(
        f"Forked from {source} after row {n} (stream item {at}): rows 1 to {n} are its rows, "
        "numbered as there."
    )


async def test_a_forks_rows_up_to_its_cut_carry_its_sources_numbers(
    server: Server, page: Page
) -> None:
    _, fork, before = await forked_at_first_event(server, page)
    shared = rows_to(before, await cut_of(server, fork))
    for number, item in enumerate(shared, start=1):
        row = page.locator(f'.row[data-seq="{item["seq"]}"]')
        await expect(row.locator(".c-seq")).to_have_text(str(number))


async def test_a_forks_link_opens_its_source_at_the_cut_with_that_row_selected(
    server: Server, page: Page
) -> None:
    source, fork, before = await forked_at_first_event(server, page)
    at = await cut_of(server, fork)
    shared = rows_to(before, at)
    n, last = len(shared), shared[-1]
    await page.locator("#forked-from").get_by_role("link", name=source).click()
    await expect(page.locator("#crumb")).to_have_text(source)
    selected = page.locator(".row.selected")
    await expect(selected).to_have_attribute("data-seq", str(last["seq"]))
    await expect(selected.locator(".c-seq")).to_have_text(str(n))
    await expect(page.get_by_role("button", name=f"Fork after row {n}", exact=True)).to_be_visible()
    assert f"seq={at}" in page.url
    await expect(page.locator("#forked-from")).to_be_hidden()  # the source is no fork


async def test_a_url_with_a_seq_opens_the_session_with_that_row_selected(
    server: Server, page: Page
) -> None:
    source = await session_with_events(server, page)
    before = await stream(server, source)
    first_event = next(item for item in before if item["type"] == "event")
    await page.goto(server.page_url(session=source, seq=str(first_event["seq"])))
    selected = page.locator(".row.selected")
    await expect(selected).to_have_attribute("data-seq", str(first_event["seq"]))
    await expect(page.locator("#detail")).to_be_visible()
