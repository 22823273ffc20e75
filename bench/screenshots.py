"""The screenshots in docs/screenshots/ (shown by docs/howto/live-clients.md), taken again:
`areasync serve` and a stub-LLM sweep, seen by headless chromium (Debian's, as the browser
tests use).

    PYTHONPATH=$PWD .venv/bin/python bench/screenshots.py [OUT_DIR]   # default docs/screenshots

Each picture shows one state a user meets: a session waiting for its agent (the real command
with a Copy button), an idle one (what it waits for, and its pictures), one that passed, its
apps' state as an inbox, a manual one (what moves it) with the server's metrics beside, a fork
(where it came from) and its apps compared with its source's, the sweep report's index with a
scenario opened, and a failed run's expected-vs-sent table.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from playwright.async_api import Page, async_playwright

from areasync.gaia2 import compare
from areasync.gaia2.dataset import CONFIG, SPLIT, agent_scripts, write_dataset
from areasync.gaia2.report import write_report
from areasync.gaia2.stub_llm import Script, StubLLM

CHROMIUM = "/usr/bin/chromium"
TOKEN = "screenshots-admin-token"
PORT = 18790
VIEWPORT = {"width": 1360, "height": 820}


def serve(trace_dir: Path) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "areasync.cli", "serve", "--port", str(PORT)]
    command += ["--token", TOKEN, "--scenario", "scenario_find_image_file", "--mode", "fast"]
    process = subprocess.Popen([*command, "--trace-dir", str(trace_dir)])
    for _ in range(600):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{PORT}/health", timeout=1):
                return process
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("areasync serve did not start")


async def admin_request(frame: dict[str, Any]) -> Any:
    import websockets

    async with websockets.connect(f"ws://127.0.0.1:{PORT}/sessions/scenario_find_image_file") as ws:
        await ws.send(json.dumps({"type": "hello", "id": 1, "role": "admin", "token": TOKEN}))
        await ws.recv()
        await ws.send(json.dumps({**frame, "id": 2}))
        while True:
            reply = json.loads(await ws.recv())
            if reply.get("id") == 2:
                return reply.get("value")


async def shoot(page: Page, out: Path, name: str) -> None:
    await page.wait_for_timeout(2500)  # two polls of the session list: the page has settled
    await page.screenshot(path=str(out / f"{name}.png"))
    print(out / f"{name}.png")


async def dashboard(out: Path) -> None:
    with tempfile.TemporaryDirectory() as traces:
        server = serve(Path(traces))
        try:
            async with async_playwright() as playwright:
                browser = await playwright.chromium.launch(
                    executable_path=CHROMIUM, args=["--headless", "--no-sandbox"]
                )
                page = await browser.new_page(viewport=VIEWPORT)  # type: ignore[arg-type]
                await page.goto(f"http://127.0.0.1:{PORT}/#token={TOKEN}")
                await shoot(page, out, "dashboard-waiting")
                await page.get_by_role("button", name="Start", exact=True).click()
                await shoot(page, out, "dashboard-idle")
                made = await admin_request(
                    {
                        "type": "create_session",
                        "scenario": "scenario_tutorial",
                        "oracle": True,
                        "mode": "fast",
                    }
                )
                await page.goto(
                    f"http://127.0.0.1:{PORT}/?session={made['session_id']}#token={TOKEN}"
                )
                await shoot(page, out, "dashboard-passed")
                await page.get_by_role("button", name="App state", exact=True).click()
                email = page.locator("#state-dialog .app-state", has_text="EmailClientApp")
                await email.locator("summary").first.click()
                await shoot(page, out, "dashboard-app-state")
                await stepped_and_forked(page, out)
                await browser.close()
        finally:
            server.terminate()
            server.wait()


async def stepped_and_forked(page: Page, out: Path) -> None:
    """A manual session stepped by its controls, a fork of it gone its own way, and the fork's
    apps compared with its source's."""
    frame = {"type": "create_session", "scenario": "scenario_tutorial", "mode": "manual"}
    made = await admin_request(frame)
    await page.goto(f"http://127.0.0.1:{PORT}/?session={made['session_id']}#token={TOKEN}")
    for _ in range(2):
        await page.get_by_role("button", name="Next event", exact=True).click()
        await page.wait_for_timeout(300)
    await shoot(page, out, "dashboard-manual")
    await page.get_by_role("button", name="Fork here", exact=True).click()
    await page.locator("#forked-from").wait_for()
    await page.locator("#jump-by").fill("12")
    await page.get_by_role("button", name="Jump", exact=True).click()
    await shoot(page, out, "dashboard-fork")
    await page.get_by_role("button", name="App state", exact=True).click()
    await page.locator("#state-compare").select_option(value="source")
    await page.locator("#state-dialog .state-changes").wait_for()
    await shoot(page, out, "dashboard-state-compare")


async def report(out: Path) -> None:
    with tempfile.TemporaryDirectory() as root:
        only = ["tiny_email", "tiny_skip", "tiny_wrong_recipient", "tiny_delay"]
        dataset = write_dataset(Path(root) / "dataset", only=only)
        skip = dataset / CONFIG / SPLIT / "tiny_skip.json"
        document = json.loads(skip.read_text())
        document["metadata"]["definition"]["tags"] = ["Search"]
        skip.write_text(json.dumps(document))
        folder = Path(root) / "out"
        with StubLLM(Script(agent=agent_scripts())) as stub:
            args = compare.bench_args(dataset, folder, stub.endpoint, num_runs=4)
            await asyncio.to_thread(compare.run_areasync, [*args, "--no-report", "--workers", "0"])
        index = write_report(folder, artifacts=True)
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(
                executable_path=CHROMIUM, args=["--headless", "--no-sandbox"]
            )
            page = await browser.new_page(viewport={"width": 1280, "height": 1100})
            await page.goto(index.as_uri())
            await page.click('details.scenario[data-scenario="tiny_wrong_recipient"] > summary')
            await page.screenshot(path=str(out / "report-index.png"), full_page=True)
            await page.click("table.runs >> text=tiny_wrong_recipient run 1")
            await page.locator("table.expected").scroll_into_view_if_needed()
            await page.screenshot(path=str(out / "report-expected.png"))
            print(out / "report-index.png", out / "report-expected.png")
            await browser.close()


async def main(out: Path) -> None:
    await dashboard(out)
    await report(out)


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("docs/screenshots")
    target.mkdir(parents=True, exist_ok=True)
    asyncio.run(main(target))
