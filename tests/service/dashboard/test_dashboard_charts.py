"""The session's pictures, drawn by uPlot under the page's policy: every row of the timeline is
a dot in its origin's lane at its simulated time, and the clock chart follows the simulated
clock against wall time."""

from __future__ import annotations

import pytest

pytest.importorskip("playwright.async_api", reason="playwright is not installed (dev extras)")

from playwright.async_api import Page, expect

from tests.service.dashboard.conftest import (
    BROWSER_TESTS,
    Server,
    opened,
    stepped,
    until,
)

pytestmark = BROWSER_TESTS

# charts.js's LANES, bottom to top.
LANE = {"AGENT": 0, "USER": 1, "ENV": 2, "CONDITION": 3, "VALIDATION": 3, "STOP": 3}
NOTIFICATIONS = 4


async def test_every_row_is_a_dot_in_its_origins_lane_at_its_simulated_time(
    server: Server, page: Page
) -> None:
    controller = await stepped(server, page, 3)
    start = controller.welcome["clock"]["start_time"]
    expected = []
    for item in controller.items:
        if item["type"] == "event":
            lane = LANE[item["event"]["event_type"]]
            expected.append((item["event"]["time"] - start, lane))
        elif item["type"] == "notification":
            expected.append((item["notification"]["timestamp"] - start, NOTIFICATIONS))
    await page.evaluate("window.__areasync.charts.update(0, true)")
    xs, *lanes = await page.evaluate("window.__areasync.charts.lanesData()")
    drawn = [
        (x, next(v for v in values if v is not None)) for x, *values in zip(xs, *lanes, strict=True)
    ]
    assert sorted(drawn) == sorted(expected) and len(drawn) == 3 + 1  # 3 events, 1 notification
    await expect(page.locator("#chart-lanes canvas")).to_have_count(1)


async def test_the_clock_chart_follows_the_simulated_clock(server: Server, page: Page) -> None:
    await opened(server, page, mode="manual")
    await page.locator("#jump-by").fill("10")
    await page.get_by_role("button", name="Jump", exact=True).click()
    await expect(page.locator("#clock-time")).to_have_text("T+00:00:10.0")
    await until(page, "window.__areasync.charts.clockData()[1].at(-1) === 10")
    wall, simulated = await page.evaluate("window.__areasync.charts.clockData()")
    assert simulated[0] == 0 and simulated == sorted(simulated)
    assert wall == sorted(wall)
    await expect(page.locator("#chart-clock canvas")).to_have_count(1)
