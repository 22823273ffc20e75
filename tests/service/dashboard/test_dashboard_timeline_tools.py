"""What helps a user find things: a free-text filter over the timeline, the session's rows
downloaded from the page, and a filter over a long sessions list."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("playwright.async_api", reason="playwright is not installed (dev extras)")

from playwright.async_api import Page, expect

from tests.service.dashboard.conftest import (
    BROWSER_TESTS,
    Server,
    create_session,
    open_session,
    running_server,
    stepped,
)

pytestmark = BROWSER_TESTS


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The sessions filter matches a part of an id (`scenario_tutorial-5` matches `-50`):
    this module's own server, whose few sessions the filter test counts."""
    yield from running_server(tmp_path_factory, "--mode", "manual")


def searched(item: dict[str, Any]) -> str:
    """What the text filter looks in, as store.js builds it."""
    if item["type"] == "event":
        e = item["event"]
        parts = [e["app"], e["function"], e["args"], e["return_value"], e["exception"]]
    else:
        n = item["notification"]
        parts = [n["message_type"], n["message"]]
    return " ".join(p if isinstance(p, str) else json.dumps(p) for p in parts if p is not None)


async def test_the_text_filter_keeps_the_rows_holding_the_text(server: Server, page: Page) -> None:
    client = await stepped(server, page)
    rows = [i for i in client.items if i["type"] in ("event", "notification")]
    expected = [i["seq"] for i in rows if "emailclient" in searched(i).lower()]
    assert 0 < len(expected) < len(rows)
    await page.locator("#text-filter").fill("EmailClient")
    shown = page.locator(".row:not([hidden])")
    await expect(shown).to_have_count(len(expected))
    seqs = await page.evaluate(
        "window.__areasync.store.visible.map(i => window.__areasync.store.rows[i].seq)"
    )
    assert seqs == expected
    await page.locator("#text-filter").fill("")
    await expect(shown).to_have_count(len(rows))


async def test_download_saves_the_sessions_rows_as_json_lines(
    server: Server, page: Page, tmp_path: Path
) -> None:
    client = await stepped(server, page)
    async with page.expect_download() as waiting:
        await page.locator("#btn-download").click()
    download = await waiting.value
    saved = tmp_path / download.suggested_filename
    await download.save_as(saved)
    lines = [json.loads(line) for line in saved.read_text().splitlines()]
    assert download.suggested_filename == f"{client.welcome['session_id']}.jsonl"
    assert [(line["seq"], line["type"]) for line in lines] == client.rows()
    first_event = next(i for i in client.items if i["type"] == "event")
    assert lines[0]["event"] == first_event["event"]


async def test_the_sessions_filter_lists_only_the_matching_sessions(
    server: Server, page: Page
) -> None:
    made = [await create_session(server, mode="manual") for _ in range(6)]
    wanted = made[3]["session_id"]
    await open_session(page, server, wanted)
    search = page.locator("#sessions-filter")
    await expect(search).to_be_visible()
    await search.fill(wanted)
    await expect(page.locator(".session-item")).to_have_count(1)
    await expect(page.locator(".session-item")).to_have_attribute("data-id", wanted)
