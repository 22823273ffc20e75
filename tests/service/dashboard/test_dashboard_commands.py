"""The commands the page shows are real and copyable: the agent command carries the session's
agent token for the admin (a placeholder, saying where the token is, for anyone else), a Copy
button puts it on the clipboard, and Restart offers to run the same agent again: the new
session's command with its own token, or the scenario's oracle run by the server."""

from __future__ import annotations

import json
import re

import pytest
import websockets

pytest.importorskip("playwright.async_api", reason="playwright is not installed (dev extras)")

from playwright.async_api import Page, expect

from tests.service.dashboard.conftest import (
    BROWSER_TESTS,
    Server,
    create_session,
    open_session,
    opened,
    stopped,
)

pytestmark = BROWSER_TESTS

COMMAND = re.compile(r"areasync agent oracle --url (\S+) --token (\S+)")


async def shown_command(page: Page) -> tuple[str, str]:
    """The URL and token of the agent command in the waiting banner."""
    code = page.locator("#waiting .copyable code")
    await expect(code).to_have_text(COMMAND)
    found = COMMAND.fullmatch(await code.inner_text())
    assert found is not None
    return found[1], found[2]


async def test_the_admin_sees_the_sessions_real_agent_token(server: Server, page: Page) -> None:
    session = await create_session(server, mode="fast")  # made elsewhere, not by this page
    await open_session(page, server, session["session_id"])
    await expect(page.locator("#waiting .copyable code")).to_contain_text(
        session["tokens"]["agent"]
    )
    assert await shown_command(page) == (session["url"], session["tokens"]["agent"])
    await expect(page.locator("#waiting")).not_to_contain_text("AGENT_TOKEN")


async def test_a_controller_sees_a_placeholder_and_where_the_token_is(
    server: Server, page: Page
) -> None:
    session = await create_session(server, mode="fast")
    await open_session(page, server, session["session_id"], token=session["tokens"]["controller"])
    await expect(page.locator("#waiting .copyable code")).to_contain_text("--token AGENT_TOKEN")
    await expect(page.locator("#waiting")).to_contain_text("printed by areasync serve")


async def test_the_copy_button_puts_the_agent_command_on_the_clipboard(
    server: Server, page: Page
) -> None:
    await page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    session = await opened(server, page, mode="fast")
    await expect(page.locator("#waiting .copyable code")).to_contain_text(
        session["tokens"]["agent"]
    )
    command = await page.locator("#waiting .copyable code").inner_text()
    await page.locator("#waiting .copy").click()
    await expect(page.locator("#waiting .copy")).to_have_text("Copied ✓")
    assert await page.evaluate("navigator.clipboard.readText()") == command


async def test_restart_shows_the_new_sessions_command_with_a_token_that_works(
    server: Server, page: Page
) -> None:
    old = await stopped(server, page, mode="fast")
    await page.locator("#btn-restart").click()
    await expect(page.locator("#crumb")).not_to_have_text(old["session_id"])
    new = await page.locator("#crumb").inner_text()
    await expect(page.locator("#waiting .copyable code")).to_contain_text(f"/sessions/{new} ")
    url, token = await shown_command(page)
    assert token != old["tokens"]["agent"]
    async with websockets.connect(url) as ws:
        await ws.send(json.dumps({"type": "hello", "id": 1, "role": "agent", "token": token}))
        welcome = json.loads(await ws.recv())
    assert welcome["type"] == "welcome" and welcome["role"] == "agent"


async def test_restart_with_the_oracle_runs_the_scenario_to_a_pass_without_an_agent(
    server: Server, page: Page
) -> None:
    old = await stopped(server, page, mode="fast")
    await expect(page.locator("#state")).to_have_text("stopped")
    await page.get_by_role("button", name="Restart with the oracle", exact=True).click()
    await expect(page.locator("#crumb")).not_to_have_text(old["session_id"])
    await expect(page.locator("#state")).to_have_text("passed")
