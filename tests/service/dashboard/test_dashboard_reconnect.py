"""The dashboard survives its connection: a network cut is repaired from `since` with every row
exactly once, and a restarted server (new epoch, replay "reset") makes it clear and rebuild."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("playwright.async_api", reason="playwright is not installed (dev extras)")

from playwright.async_api import Page, expect

from tests.service.dashboard.conftest import (
    BROWSER_TESTS,
    DEFAULT_SESSION,
    Client,
    Proxy,
    Server,
    connect,
    create_session,
    snap,
    start_server,
    until,
)

pytestmark = BROWSER_TESTS


async def page_rows(page: Page) -> list[tuple[int, str]]:
    rows = await page.evaluate("window.__areasync.rows().map(r => [r.seq, r.kind])")
    return [(int(seq), str(kind)) for seq, kind in rows]


async def caught_up(page: Page, client: Client) -> None:
    await until(page, f"window.__areasync.lastSeq() >= {client.last_seq}")
    # Received is not yet shown: items wait in the page's queue for the next animation frame.
    await page.evaluate("window.__areasync.settled()")


async def test_dropped_connection_is_repaired_without_gaps(
    server: Server, proxy: Proxy, page: Page
) -> None:
    session = (await create_session(server, mode="manual"))["session_id"]
    await page.goto(server.page_url(session=session, base=proxy.base))
    conn = page.locator("#conn")
    await expect(conn).to_have_attribute("data-state", "live")
    async with connect(server, session) as controller:
        await controller.request({"type": "jump", "next_event": True})
        await caught_up(page, controller)

        proxy.cut()  # the network goes away while the session keeps producing events
        await expect(conn).to_have_attribute("data-state", "reconnecting")
        await snap(page, "reconnecting")
        for _ in range(2):
            await controller.request({"type": "jump", "next_event": True})
        await controller.request({"type": "jump", "by": 1})
        proxy.restore()

        await expect(conn).to_have_attribute("data-state", "live")
        await caught_up(page, controller)
        rows = await page_rows(page)
    assert rows == controller.rows()  # every event and notification, in order, none twice
    assert len(rows) >= 3
    assert await page.evaluate("window.__areasync.conn.stats.connects") >= 2
    await expect(page.locator("#stats")).to_contain_text("3 events")


async def test_page_drop_resumes_from_the_last_seq(server: Server, page: Page) -> None:
    session = (await create_session(server, mode="manual"))["session_id"]
    await page.goto(server.page_url(session=session))
    await expect(page.locator("#conn")).to_have_attribute("data-state", "live")
    async with connect(server, session) as controller:
        await controller.request({"type": "jump", "next_event": True})
        await caught_up(page, controller)
        await page.evaluate("window.__areasync.drop()")
        await controller.request({"type": "jump", "next_event": True})
        await caught_up(page, controller)
        assert await page_rows(page) == controller.rows()
    assert await page.evaluate("window.__areasync.conn.stats.duplicates") == 0


@pytest.mark.slow  # two servers started in turn, the page reconnecting on its backoff: 14 s
async def test_restarted_server_resets_and_rebuilds_the_timeline(
    tmp_path: Path, page: Page
) -> None:
    first = start_server(tmp_path / "first", "--mode", "manual")
    port = first.port
    try:
        await page.goto(first.page_url(session=DEFAULT_SESSION))
        await expect(page.locator("#conn")).to_have_attribute("data-state", "live")
        async with connect(first, DEFAULT_SESSION) as controller:
            for _ in range(2):
                await controller.request({"type": "jump", "next_event": True})
            await caught_up(page, controller)
        old_epoch = await page.evaluate("window.__areasync.conn.epoch")
    finally:
        first.stop(kill=True)  # a crash, not a shutdown: the session never says `ended`
    await expect(page.locator("#conn")).not_to_have_attribute("data-state", "live")

    # A new server on the same port: same session id, new epoch, a stream that starts again.
    second = start_server(tmp_path / "second", "--mode", "manual", port=port)
    try:
        async with connect(second, DEFAULT_SESSION) as controller:
            await controller.request({"type": "jump", "next_event": True})
            await expect(page.locator("#conn")).to_have_attribute(
                "data-state", "live", timeout=20_000
            )
            await caught_up(page, controller)
            assert await page_rows(page) == controller.rows()
        assert await page.evaluate("window.__areasync.conn.epoch") != old_epoch
        assert await page.evaluate("window.__areasync.conn.stats.resets") == 1
        await expect(page.locator("#stats")).to_contain_text("1 event ")
    finally:
        second.stop()
