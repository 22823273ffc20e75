"""`areasync serve` as someone who just typed `make serve` meets it: the default session waits
for its agent, an ended session says why in plain words, an admin starts new sessions and
restarts finished ones from the page (a non-admin is not offered either), and a polling page
adds nothing to the log."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

pytest.importorskip("playwright.async_api", reason="playwright is not installed (dev extras)")

from playwright.async_api import Page, expect

from areasync.conformance.scenario_json import export_scenario_json
from areasync.conformance.scenarios import GAIA2_SHAPED_ID
from tests.service.dashboard.conftest import (
    BROWSER_TESTS,
    DEFAULT_SESSION,
    Server,
    connect,
    create_session,
    running_server,
)

pytestmark = BROWSER_TESTS

FIRST_EVENT = "MessagingApp.add_message"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """`areasync serve` with no options, as `make serve` runs it (the default log level too)."""
    yield from running_server(tmp_path_factory)


async def open_page(page: Page, server: Server, session: str, **query: str) -> None:
    await page.goto(server.page_url(session=session, **query))
    await expect(page.locator("#conn")).to_have_attribute("data-state", "live")


async def stop(server: Server, session: str) -> None:
    async with connect(server, session) as controller:
        await controller.request({"type": "stop"})


async def test_the_default_session_waits_for_an_agent(server: Server, page: Page) -> None:
    await open_page(page, server, DEFAULT_SESSION)
    await expect(page.locator("#state")).to_have_text("waiting")
    await expect(page.locator("#clock-time")).to_have_text("T+00:00:00.0")
    waiting = page.locator("#waiting")
    await expect(waiting).to_contain_text("areasync agent oracle --url ws://127.0.0.1:")
    await expect(waiting).to_contain_text("press Start to run it without one")
    [listed] = [s for s in server.sessions() if s["id"] == DEFAULT_SESSION]
    assert listed["waiting_for_agent"] and listed["clock"]["mode"] == "fast"


async def test_an_agent_runs_a_waiting_session_to_a_passed_validation(
    server: Server, page: Page
) -> None:
    session = await create_session(server, mode="fast")
    await open_page(page, server, session["session_id"])
    await expect(page.locator("#waiting")).to_be_visible()
    agent = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "areasync.cli",
        "agent",
        "oracle",
        "--url",
        session["url"],
        "--token",
        session["tokens"]["agent"],
        stdout=asyncio.subprocess.DEVNULL,
    )
    assert await asyncio.wait_for(agent.wait(), 60) == 0
    ended = page.locator("#ended")
    await expect(ended).to_contain_text("ran to the end of its scenario")
    await expect(ended).to_contain_text("checks passed")
    await expect(page.locator("#waiting")).to_be_hidden()


async def test_the_ended_banner_says_why_in_plain_words(server: Server, page: Page) -> None:
    session = await create_session(server, mode="manual")
    await open_page(page, server, session["session_id"])
    await stop(server, session["session_id"])
    plain = page.locator("#ended .ended-plain")
    await expect(plain).to_contain_text("did not run to its end: stopped by a controller")
    await expect(plain).to_contain_text("checks failed")


async def test_an_admin_restarts_a_finished_session(server: Server, page: Page) -> None:
    session = await create_session(server, mode="fast")
    old = session["session_id"]
    await open_page(page, server, old)
    await stop(server, old)
    await page.locator("#btn-restart").click()
    await expect(page.locator("#crumb")).not_to_have_text(old)
    await expect(page.locator("#conn")).to_have_attribute("data-state", "live")
    await expect(page.locator("#session-scenario")).to_have_text(DEFAULT_SESSION)
    new = await page.locator("#crumb").text_content()
    [restarted] = [s for s in server.sessions() if s["id"] == new]
    # The same source and options: fast, and so waiting for its agent again.
    assert not restarted["ended"] and restarted["clock"]["mode"] == "fast"
    assert restarted["waiting_for_agent"]
    await expect(page.locator("#waiting")).to_contain_text(session["url"].rsplit("/", 1)[0])


async def test_an_admin_creates_a_session_from_the_scenario_list(
    server: Server, page: Page
) -> None:
    await open_page(page, server, DEFAULT_SESSION)
    await page.get_by_role("button", name="New session…").first.click()
    await expect(page.locator(f'#new-scenario option[value="{DEFAULT_SESSION}"]')).to_have_count(1)
    await page.locator("#new-scenario").select_option(DEFAULT_SESSION)
    await page.locator("#new-mode").select_option("manual")
    await page.get_by_role("button", name="Create", exact=True).click()
    await expect(page.locator("#crumb")).not_to_have_text(DEFAULT_SESSION)
    await expect(page.locator("#conn")).to_have_attribute("data-state", "live")
    await page.get_by_role("button", name="Next event", exact=True).click()
    await expect(page.locator(".row", has_text=FIRST_EVENT)).to_be_visible()


async def test_an_admin_creates_a_session_from_an_uploaded_file(
    server: Server, page: Page, tmp_path: Path
) -> None:
    scenario = tmp_path / "upload.json"
    scenario.write_text(export_scenario_json(GAIA2_SHAPED_ID))
    await open_page(page, server, DEFAULT_SESSION)
    await page.get_by_role("button", name="New session…").first.click()
    await page.locator("#new-file").set_input_files(str(scenario))
    await page.locator("#new-mode").select_option("fast")
    await page.locator("#new-oracle").check()
    await page.get_by_role("button", name="Create", exact=True).click()
    await expect(page.locator("#crumb")).to_have_text(GAIA2_SHAPED_ID)
    # The oracle is its own agent: the session runs through and validates.
    await expect(page.locator("#ended")).to_contain_text("checks passed")


async def test_a_file_that_is_not_json_is_refused_saying_why(
    server: Server, page: Page, tmp_path: Path
) -> None:
    scenario = tmp_path / "notes.json"
    scenario.write_text("not json at all")
    await open_page(page, server, DEFAULT_SESSION)
    await page.get_by_role("button", name="New session…").first.click()
    await page.locator("#new-file").set_input_files(str(scenario))
    await page.get_by_role("button", name="Create", exact=True).click()
    await expect(page.locator("#new-error")).to_contain_text("notes.json is not a JSON object")
    await expect(page.locator("#new-error")).to_contain_text("pick an ARE scenario JSON file")


async def test_a_non_admin_page_offers_no_new_session(server: Server, page: Page) -> None:
    session = await create_session(server, mode="manual")
    await open_page(page, server, session["session_id"], token=session["tokens"]["controller"])
    await expect(page.locator("#role")).to_have_text("controller")
    await expect(page.get_by_role("button", name="New session…")).to_have_count(0)


async def test_a_non_admin_page_offers_no_restart(server: Server, page: Page) -> None:
    session = await create_session(server, mode="manual")
    await open_page(page, server, session["session_id"], token=session["tokens"]["controller"])
    await stop(server, session["session_id"])
    await expect(page.locator("#ended")).to_contain_text("Stopped by a controller")
    await expect(page.get_by_role("button", name="Restart")).to_have_count(0)


async def test_a_polling_dashboard_adds_no_lines_to_the_log(server: Server, page: Page) -> None:
    polls: list[str] = []
    page.on("request", lambda r: polls.append(r.url) if "/api/sessions" in r.url else None)
    before = server.log.read_text().count("\n")
    await open_page(page, server, DEFAULT_SESSION)
    with anyio.fail_after(30):  # three more polls, 2 s apart
        while len(polls) < 4:
            await page.wait_for_timeout(200)
    added = server.log.read_text().splitlines()[before:]
    assert not [line for line in added if "websockets" in line or "GET " in line], added
