"""The admin's sidebar draws the server's /metrics: live and ended sessions, connections by
role, events and tool calls with their rates, in words and as a uPlot chart that takes a new
reading at each refresh of the sessions list. A session's token, which may not read /metrics,
gets no such picture."""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator

import pytest

pytest.importorskip("playwright.async_api", reason="playwright is not installed (dev extras)")

from playwright.async_api import Page, expect

from tests.service.dashboard.conftest import (
    ADMIN_TOKEN,
    BROWSER_TESTS,
    DEFAULT_SESSION,
    Server,
    connect,
    create_session,
    open_session,
    opened,
    running_server,
    until,
)

pytestmark = BROWSER_TESTS


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The overview counts every session and connection on the server: this module's own."""
    yield from running_server(tmp_path_factory, "--mode", "manual")


CLOCK_TOOL = {"type": "call_tool", "tool": "SystemApp__get_current_time", "args": {}}


def metric(server: Server, name: str) -> int:
    """One sample of the server's /metrics, as a scraper reads it."""
    request = urllib.request.Request(
        f"{server.base}/metrics", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        for line in response.read().decode().splitlines():
            if line.startswith(f"{name} "):
                return int(float(line.split()[1]))
    raise AssertionError(f"no {name} in /metrics")


async def test_the_admin_reads_the_servers_sessions_and_connections_in_words(
    server: Server, page: Page
) -> None:
    await open_session(page, server, DEFAULT_SESSION)
    summary = page.locator("#metrics-summary")
    live = metric(server, 'areasync_sessions{state="live"}')
    await expect(summary).to_contain_text(f"{live} live · 0 ended")
    await expect(summary).to_contain_text("1 connection (1 controller)")
    async with connect(server, DEFAULT_SESSION, role="agent") as agent:
        await agent.request(CLOCK_TOOL)
        await expect(summary).to_contain_text("2 connections (1 agent, 1 controller)")
        await expect(summary).to_contain_text("1 tool call")
    await expect(summary).to_contain_text("1 connection (1 controller)")


async def test_the_overviews_event_count_is_the_servers(server: Server, page: Page) -> None:
    session = await opened(server, page, mode="manual")
    async with connect(server, session["session_id"]) as controller:
        await controller.request({"type": "jump", "next_event": True})
    events = metric(server, "areasync_events_total")  # a manual server: nothing else moves
    assert events >= 1
    await expect(page.locator("#metrics-summary")).to_contain_text(f"{events} event")


async def test_the_chart_draws_each_new_reading(server: Server, page: Page) -> None:
    await open_session(page, server, DEFAULT_SESSION)
    await expect(page.locator("#metrics-chart canvas")).to_be_visible()
    last = "window.__areasync.overview.data().map((column) => column.at(-1))"
    await until(page, f"{last}[2] === 1")  # the page's own connection
    async with connect(server, DEFAULT_SESSION, role="agent"):
        await until(page, f"{last}[2] === 2")
        _, live, connections, _, _ = await page.evaluate(last)
    assert (live, connections) == (metric(server, 'areasync_sessions{state="live"}'), 2)
    readings = await page.evaluate("window.__areasync.overview.data()[0].length")
    assert readings >= 2


async def test_a_session_token_gets_no_server_overview(server: Server, page: Page) -> None:
    session = await create_session(server, mode="manual")
    token = session["tokens"]["controller"]
    await open_session(page, server, session["session_id"], token=token)
    await expect(page.locator("#state")).to_have_text("manual")
    await expect(page.locator("#server-metrics")).to_be_hidden()
    assert await page.evaluate("window.__areasync.overview") is None
