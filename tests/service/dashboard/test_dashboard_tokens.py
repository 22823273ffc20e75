"""The dashboard's token never stays in a URL, and the page runs under its strict policy.

The page reads its token once (from `#token=`, as the banner prints it, or `?token=`), takes it
out of the address bar and history, and from then on sends it only in an `Authorization`
header (its 2-second polls of /api/sessions) and inside the WebSocket hello. The server records
every request it is asked (method, target, headers) over each test's whole run, through a spy
on its `process_request`; the browser is Debian's chromium.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

pytest.importorskip("playwright.async_api", reason="playwright is not installed (dev extras)")

from playwright.async_api import Browser, Page, expect
from websockets.http11 import Request, Response

from areasync.service import Service
from areasync.service.http.routes import HttpRoutes
from tests.service.dashboard.conftest import (
    BROWSER_TESTS,
    DEFAULT_SESSION,
    WATCH_CSP,
    until,
)
from tests.service.support import config
from tests.waiting import eventually

pytestmark = BROWSER_TESTS

TOKEN = "dashboard-url-token-0123456789"


class Recorder:
    """The service's `process_request`, recording every request it is asked."""

    def __init__(self, routes: HttpRoutes) -> None:
        self.routes = routes
        self.requests: list[tuple[str, str, dict[str, str]]] = []

    def __call__(self, connection: Any, request: Request) -> Response | None:
        headers = {name.lower(): value for name, value in request.headers.raw_items()}
        self.requests.append((request.method, request.path, headers))
        return self.routes(connection, request)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.routes, name)

    def polls(self) -> list[dict[str, str]]:
        return [h for _, path, h in self.requests if path.startswith("/api/sessions")]

    async def until_polled(self, times: int) -> None:
        """Wait (bounded) until the page has asked /api/sessions `times` times."""
        await eventually(lambda: len(self.polls()) >= times, what=f"{times} polls")


@pytest_asyncio.fixture(loop_scope="session")  # the loop of the tests and their browser
async def served() -> AsyncIterator[tuple[Service, Recorder]]:
    service = Service(config(admin_token=TOKEN, ping_interval=20.0), [DEFAULT_SESSION])
    recorder = Recorder(service.http)
    service.http = recorder  # type: ignore[assignment]
    async with service:
        yield service, recorder


async def open_live(page: Page, url: str) -> None:
    await page.goto(url)
    await expect(page.locator("#conn")).to_have_attribute("data-state", "live")


async def test_the_token_leaves_the_address_bar_once_the_page_has_loaded(
    served: tuple[Service, Recorder], page: Page
) -> None:
    service, _ = served
    await open_live(page, f"{service.http_url}/?token={TOKEN}&session={DEFAULT_SESSION}")
    href = await page.evaluate("location.href")
    assert TOKEN not in href and f"session={DEFAULT_SESSION}" in href


async def test_after_the_page_loads_no_request_carries_the_token_in_its_url(
    served: tuple[Service, Recorder], page: Page
) -> None:
    service, recorder = served
    await open_live(page, f"{service.http_url}/?token={TOKEN}&session={DEFAULT_SESSION}")
    await recorder.until_polled(3)  # the first listing and two 2-second polls
    (first, *after) = recorder.requests
    assert TOKEN in first[1]  # the address the user opened, and only that
    assert [target for _, target, _ in after if TOKEN in target] == []
    assert any(target.startswith(f"/sessions/{DEFAULT_SESSION}") for _, target, _ in after)


async def test_the_page_sends_its_token_in_an_authorization_header(
    served: tuple[Service, Recorder], page: Page
) -> None:
    service, recorder = served
    await open_live(page, f"{service.http_url}/?token={TOKEN}")
    await recorder.until_polled(3)
    assert {poll.get("authorization") for poll in recorder.polls()} == {f"Bearer {TOKEN}"}


async def test_no_request_of_the_page_carries_a_referer(
    served: tuple[Service, Recorder], page: Page
) -> None:
    service, recorder = served
    await open_live(page, f"{service.http_url}/?token={TOKEN}")
    await recorder.until_polled(2)
    assert [(target, h["referer"]) for _, target, h in recorder.requests if "referer" in h] == []


async def test_the_banner_url_never_puts_the_token_in_any_request(
    served: tuple[Service, Recorder], page: Page
) -> None:
    service, recorder = served
    url = service.dashboard_url()
    assert url.endswith(f"#token={TOKEN}")
    await open_live(page, url)
    await recorder.until_polled(3)
    assert [target for _, target, _ in recorder.requests if TOKEN in target] == []
    assert TOKEN not in await page.evaluate("location.href")


async def test_a_reload_keeps_the_dashboard_working_without_the_token_in_its_url(
    served: tuple[Service, Recorder], page: Page
) -> None:
    service, recorder = served
    await open_live(page, service.dashboard_url())
    await page.reload()  # the address bar no longer has the token; this tab's storage does
    await expect(page.locator("#conn")).to_have_attribute("data-state", "live")
    await expect(page.locator(f'.session-item[data-id="{DEFAULT_SESSION}"]')).to_be_visible()
    assert [target for _, target, _ in recorder.requests if TOKEN in target] == []


async def test_the_page_policy_blocks_an_injected_inline_script(
    served: tuple[Service, Recorder], browser: Browser
) -> None:
    # The negative control of the check every dashboard test ends with (the `page` fixture):
    # what the policy blocks is seen. An inline script (what an injection adds) does not run.
    service, _ = served
    context = await browser.new_context()
    try:
        await context.add_init_script(WATCH_CSP)
        page = await context.new_page()
        await open_live(page, service.dashboard_url())
        await page.evaluate(
            """() => {
                const script = document.createElement("script");
                script.textContent = "window.__inlineRan = true";
                document.head.appendChild(script);
            }"""
        )
        await until(page, "window.__csp.length > 0")
        blocked = await page.evaluate("window.__csp")
        ran = await page.evaluate("window.__inlineRan === true")
    finally:
        await context.close()
    assert not ran and any(v.startswith("script-src") for v in blocked)
