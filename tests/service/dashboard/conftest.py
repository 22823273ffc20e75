"""Fixtures for the dashboard's browser tests: a real `areasync serve` subprocess, Debian's
chromium driven by Playwright, a raw WebSocket client for the test's own requests, a TCP proxy
the test can cut to simulate a network failure, and a screenshot of every page as an artifact.

Playwright's own browser downloads are impossible here: it launches `/usr/bin/chromium` (the
Makefile's `browser` target installs it). The test modules skip themselves when it is absent.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import socket
import subprocess
import sys
import urllib.request
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
import pytest_asyncio

with contextlib.suppress(ImportError):  # without playwright the test modules skip themselves
    from playwright.async_api import Browser, Page, async_playwright

import websockets
from websockets.asyncio.client import ClientConnection

from tests.bounds import BROWSER_S
from tests.waiting import eventually, eventually_blocking

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ADMIN_TOKEN = "dashboard-test-admin-token"
DEFAULT_SESSION = "scenario_tutorial"
ARTIFACTS = Path(__file__).resolve().parents[3] / "artifacts" / "screenshots"
VIEWPORT = {"width": 1360, "height": 820}


def chromium_missing_reason() -> str:
    return (
        f"{CHROMIUM} is not installed: the dashboard tests drive Debian's chromium "
        "(`make browser`, or `apt-get install chromium`)"
    )


# Every browser test module's marks: `browser` (`make test-browser`), it skips without chromium,
# and it runs on its worker's
# session-wide event loop, the loop of the one `browser` it shares (Playwright's objects belong
# to the loop that made them), as do the `page` and `proxy` it is given.
BROWSER_TESTS = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason=chromium_missing_reason()),
    pytest.mark.asyncio(loop_scope="session"),
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _healthy(base: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base}/health", timeout=1) as response:
            return bool(response.status == 200)
    except OSError:
        return False


@dataclass
class Server:
    """An `areasync serve` subprocess on a loopback port, with a fixed admin token."""

    port: int
    log: Path
    args: list[str]
    process: subprocess.Popen[bytes] | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0) -> None:
        command = [sys.executable, "-m", "areasync.cli", "serve", "--host", "127.0.0.1"]
        command += ["--port", str(self.port), "--token", ADMIN_TOKEN, *self.args]
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        process = self.process
        with contextlib.suppress(AssertionError):  # not started in time: said below
            eventually_blocking(
                lambda: process.poll() is not None or _healthy(self.base), within=timeout, poll=0.1
            )
        if not _healthy(self.base):
            self.stop()
            raise RuntimeError(f"areasync serve did not start:\n{self.log.read_text()}")

    def stop(self, *, kill: bool = False) -> None:
        """Shut down gracefully (sessions end, sockets close with 1001), or `kill` it."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGKILL if kill else signal.SIGINT)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def page_url(self, *, token: str = ADMIN_TOKEN, base: str | None = None, **query: str) -> str:
        return f"{base or self.base}/?{urlencode({'token': token, **query})}"

    def sessions(self) -> list[dict[str, Any]]:
        url = urllib.request.Request(
            f"{self.base}/api/sessions", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}
        )
        with urllib.request.urlopen(url, timeout=5) as response:
            return list(json.loads(response.read())["sessions"])


def start_server(tmp: Path, *args: str, port: int | None = None) -> Server:
    """Start `areasync serve ARGS` (traces and log under `tmp`) and wait until it is healthy."""
    tmp.mkdir(parents=True, exist_ok=True)
    server = Server(port or free_port(), tmp / "server.log", [*args, "--trace-dir", str(tmp)])
    server.start()
    return server


def running_server(tmp_path_factory: pytest.TempPathFactory, *args: str) -> Iterator[Server]:
    """A fixture's server: `areasync serve ARGS` until the fixture's scope ends."""
    running = start_server(tmp_path_factory.mktemp("serve"), *args)
    yield running
    running.stop()


# The sessions every module sharing `server` creates, together, with room to spare: none stops
# its own (a manual session stays live), and the default 64 would refuse the last ones.
SHARED_MAX_SESSIONS = 1000


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One server per test process (starting one takes seconds), shared by the modules whose
    tests each make their own sessions and look at nothing else on it; its default session runs
    scenario_tutorial in manual mode. A module whose tests count what is on the whole server
    defines its own `server`, with `running_server`."""
    yield from running_server(
        tmp_path_factory, "--mode", "manual", "--max-sessions", str(SHARED_MAX_SESSIONS)
    )


# -- the test's own WebSocket client ------------------------------------------------------------


@dataclass
class Client:
    """A JSON-frame areasync client: requests by id, and every stream item it receives."""

    ws: ClientConnection
    welcome: dict[str, Any]
    items: list[dict[str, Any]] = field(default_factory=list)
    _pending: dict[int, asyncio.Future[dict[str, Any]]] = field(default_factory=dict)
    _next_id: int = 100
    _reader: asyncio.Task[None] | None = None

    async def request(self, frame: dict[str, Any]) -> Any:
        """Send `frame`, return its result value; an error frame raises RuntimeError."""
        self._next_id += 1
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[self._next_id] = future
        await self.ws.send(json.dumps({**frame, "id": self._next_id}))
        reply = await asyncio.wait_for(future, 30)
        if reply["type"] == "error":
            raise RuntimeError(f"{reply['code']}: {reply['message']}")
        return reply.get("value")

    @property
    def last_seq(self) -> int:
        return int(self.items[-1]["seq"]) if self.items else 0

    def rows(self) -> list[tuple[int, str]]:
        """(seq, kind) of every event and notification: what the timeline must show."""
        return [(i["seq"], i["type"]) for i in self.items if i["type"] in ("event", "notification")]

    async def _read(self) -> None:
        async for raw in self.ws:
            frame = json.loads(raw)
            if "seq" in frame and frame["type"] != "welcome":
                self.items.append(frame)
            elif frame.get("id") in self._pending:
                self._pending.pop(frame["id"]).set_result(frame)


@contextlib.asynccontextmanager
async def connect(server: Server, session: str, role: str = "controller") -> AsyncIterator[Client]:
    """Attach to `session` as `role` with the admin token, replaying its stream from seq 1."""
    url = f"ws://127.0.0.1:{server.port}/sessions/{session}"
    async with websockets.connect(url, max_size=None) as ws:
        hello = {"type": "hello", "id": 1, "role": role, "token": ADMIN_TOKEN, "since": 0}
        await ws.send(json.dumps(hello))
        welcome = json.loads(await ws.recv())
        assert welcome["type"] == "welcome", welcome
        client = Client(ws, welcome)
        client._reader = asyncio.create_task(client._read())
        try:
            yield client
        finally:
            client._reader.cancel()


async def create_session(server: Server, **options: Any) -> dict[str, Any]:
    """A fresh scenario_tutorial session (admin create_session): its id and per-role tokens."""
    async with connect(server, DEFAULT_SESSION, role="admin") as admin:
        frame = {"type": "create_session", "scenario": DEFAULT_SESSION, **options}
        return dict(await admin.request(frame))


# -- the browser --------------------------------------------------------------------------------


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def browser() -> AsyncIterator[Browser]:
    """One Playwright driver and one chromium per test process: starting them takes seconds,
    and a test's isolation is the fresh browser context `page` gives it."""
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS
        )
        yield launched
        await launched.close()


async def open_session(page: Page, server: Server, session: str, **query: str) -> None:
    """Open `session` in `page` (the admin token unless `token=` says otherwise) until live."""
    from playwright.async_api import expect

    await page.goto(server.page_url(session=session, **query))
    await expect(page.locator("#conn")).to_have_attribute("data-state", "live")


async def opened(server: Server, page: Page, **options: Any) -> dict[str, Any]:
    """A new session (create_session `options`), open in `page` with the admin token."""
    session = await create_session(server, **options)
    await open_session(page, server, session["session_id"])
    return session


async def stopped(server: Server, page: Page, **options: Any) -> dict[str, Any]:
    """A new session (create_session `options`), opened in `page`, then stopped by a controller."""
    session = await opened(server, page, **options)
    async with connect(server, session["session_id"]) as controller:
        await controller.request({"type": "stop"})
    return session


async def stepped(server: Server, page: Page, steps: int = 4) -> Client:
    """A manual session stepped through `steps` events, open in `page`; its stream's items."""
    session = await opened(server, page, mode="manual")
    async with connect(server, session["session_id"]) as controller:
        for _ in range(steps):
            await controller.request({"type": "jump", "next_event": True})
        await until(page, f"window.__areasync.lastSeq() >= {controller.last_seq}")
    await page.evaluate("window.__areasync.settled()")
    return controller


async def until(page: Page, expression: str, limit: float = 20.0) -> None:
    """Wait (at most `limit` s) until `expression` is truthy in the page.

    Playwright's `wait_for_function` compiles its predicate with `new Function` inside the
    page, which the dashboard's policy (no 'unsafe-eval') refuses; `evaluate` is not eval.
    """
    await eventually(lambda: page.evaluate(expression), within=limit, what=expression)


async def snap(page: Page, name: str) -> None:
    """Save a screenshot of `page` now, as artifacts/screenshots/NAME.png."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=str(ARTIFACTS / f"{name}.png"))


# Collects the page's Content-Security-Policy violations (blocked scripts, styles, sockets...).
WATCH_CSP = """
window.__csp = [];
document.addEventListener("securitypolicyviolation", (e) =>
  window.__csp.push(`${e.effectiveDirective} blocked ${e.blockedURI || "inline"}`));
"""


@pytest.fixture
def csp_violations() -> list[str]:
    """What the page's policy blocked (in the page, or said so on the console); `page` fails
    the test if anything is left here at its end."""
    return []


@pytest_asyncio.fixture(loop_scope="session")
async def page(
    browser: Browser, request: pytest.FixtureRequest, csp_violations: list[str]
) -> AsyncIterator[Page]:
    """A fresh page; at the end, a screenshot under artifacts/, no uncaught script error and
    nothing blocked by the dashboard's Content-Security-Policy."""
    from playwright.async_api import expect

    expect.set_options(timeout=BROWSER_S * 1000)
    context = await browser.new_context(viewport=VIEWPORT)  # type: ignore[arg-type]
    context.set_default_timeout(BROWSER_S * 1000)
    await context.add_init_script(WATCH_CSP)
    opened = await context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda exc: errors.append(str(exc)))
    opened.on(
        "console",
        lambda message: (
            csp_violations.append(message.text)
            if "Content Security Policy" in message.text
            else None
        ),
    )
    yield opened
    await snap(opened, request.node.name)
    with contextlib.suppress(Exception):  # a page that is gone has nothing more to report
        csp_violations.extend(await opened.evaluate("window.__csp || []"))
    await context.close()
    assert not errors, f"uncaught errors in the page: {errors}"
    assert not csp_violations, f"the page's Content-Security-Policy blocked: {csp_violations}"


# -- a network path the test can cut ------------------------------------------------------------


class Proxy:
    """A loopback TCP proxy to the server: `cut()` drops every connection and refuses new ones
    (a network failure, as the browser sees it) until `restore()`."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = 0
        self.up = True
        self._server: asyncio.Server | None = None
        self._links: set[asyncio.StreamWriter] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def cut(self) -> None:
        self.up = False
        for writer in list(self._links):
            writer.transport.abort()
        self._links.clear()

    def restore(self) -> None:
        self.up = True

    async def close(self) -> None:
        self.cut()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if not self.up:
            writer.transport.abort()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            writer.transport.abort()
            return
        self._links.update((writer, up_writer))
        await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            self._links.discard(writer)
            writer.transport.abort()


@pytest_asyncio.fixture(loop_scope="session")
async def proxy(server: Server) -> AsyncIterator[Proxy]:
    running = Proxy(server.port)
    await running.start()
    yield running
    await running.close()
