"""Real `areasync serve --state-dir` processes for the durability tests, and clients that outlive
them.

- `server(command, log)`: a running server and its banner, killed on the way out.
- `Restartable`: one server's life across SIGKILLs: the same command, port and state directory
  every time, as an operator's supervisor would restart it.
- `RawObserver`: an observer on a bare WebSocket that records every stream item exactly as it
  arrives, across the server's deaths and its own dropped sockets, resuming with
  `hello{since, epoch}`. areasync's own Client drops an item it already holds (a replay that
  overlaps), which would hide a duplicate sent by the server; this one hides nothing.
- `Resilient`: an areasync Client whose tool calls and clock jumps survive a broken connection.
  A request in flight when the connection broke fails with `ConnectionLostError` ("the server
  may or may not have applied it"); once the client has reconnected, the stream says which:
  the call's AGENT event (or the jump's clock item) is there, or it is not and the request is
  sent again. That is what a careful agent does; the oracle agent itself does not.
"""

from __future__ import annotations

import collections
import contextlib
import random
import re
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, cast

import anyio
from anyio.abc import Process
from anyio.streams.text import TextReceiveStream
from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake

from areasync.client import (
    Client,
    ConnectionLostError,
    SessionEndedError,
    ToolFailedError,
    connect,
)
from areasync.protocol import (
    ClockItem,
    ClockState,
    EndedItem,
    EventItem,
    Hello,
    NotificationItem,
    Replay,
    Role,
    StreamItem,
    Welcome,
    decode_server_frame,
    encode_client_frame,
)
from areasync.protocol.codec import Encoding, encode_server_frame
from tests.bounds import PROCESS_S

TOKEN = "restore-admin"  # the servers' admin token (--token)

# What the fault tests did, over the process, for pytest's summary (tests/conftest.py).
TALLY: collections.Counter[str] = collections.Counter()


async def read_banner(process: Process) -> str:
    """What `areasync serve` prints up to its banner's last line (it names Ctrl-C)."""
    return await read_until(process, "Ctrl-C")


async def read_until(process: Process, marker: str, *, within: float = PROCESS_S) -> str:
    """What `process` prints on stdout up to (and with) `marker` (`within`: a hang bound)."""
    assert process.stdout is not None
    text = ""
    with anyio.fail_after(within):
        async for chunk in TextReceiveStream(process.stdout):
            text += chunk
            if marker in text:
                return text
    raise AssertionError(f"{marker!r} never printed; got {text!r}")


@contextlib.asynccontextmanager
async def server(command: list[str], log: Path) -> AsyncIterator[tuple[Process, str]]:
    """A running `areasync serve` and its banner; killed on the way out if still running."""
    with log.open("ab") as stderr:
        process = await anyio.open_process(command, stderr=stderr)
    try:
        yield process, await read_banner(process)
    finally:
        if process.returncode is None:
            process.kill()
        with anyio.fail_after(30), anyio.CancelScope(shield=True):
            await process.wait()
            await process.aclose()


def session_url(banner: str, session_id: str) -> str:
    found = re.search(rf"ws://127\.0\.0\.1:\d+/sessions/{re.escape(session_id)}", banner)
    assert found, banner
    return found[0]


def agent_token(banner: str) -> str:
    found = re.search(r"^  agent\s+(\S+)$", banner, re.MULTILINE)
    assert found, banner
    return found[1]


def frames(items: list[StreamItem]) -> list[bytes]:
    return [encode_server_frame(item, Encoding.MSGPACK) for item in items]


async def whole_stream(url: str) -> list[StreamItem]:
    """The session's whole stream, from a new observer with since=0, once it has ended."""
    async with connect(url, role="observer", token=TOKEN, since=0, reconnect=False) as observer:
        await observer.wait_ended()
        return observer.history


class Restartable:
    """A server started, SIGKILLed and started again on the same port and state directory.

    `command(port)` is its command line (port 0 the first time: a free one, read back from the
    banner). Each start enters `stack`, which kills what is left on the way out.
    """

    def __init__(
        self, command: Callable[[int], list[str]], log: Path, stack: contextlib.AsyncExitStack
    ) -> None:
        self._command = command
        self._log = log
        self._stack = stack
        self.port = 0
        self.process: Process | None = None
        self.banners: list[str] = []
        self.kills = 0

    async def start(self) -> str:
        """Start the server; its banner."""
        serving = server(self._command(self.port), self._log)
        self.process, banner = await self._stack.enter_async_context(serving)
        if not self.port:
            found = re.search(r"ws://127\.0\.0\.1:(\d+)/", banner)
            assert found, banner
            self.port = int(found[1])
        self.banners.append(banner)
        return banner

    async def kill(self) -> None:
        """SIGKILL the server and wait for it to be gone."""
        assert self.process is not None
        self.process.kill()
        with anyio.fail_after(30):
            await self.process.wait()
        self.kills += 1


class RawObserver:
    """An observer that records every item as it arrives (see the module docstring).

    `cut_at`: seqs at which it drops its own socket (a TCP abort or a clean close, chosen by
    `rng`) and reconnects at once. It reconnects the same way whenever the server goes away,
    retrying while the server is down, until it holds `ended`. Its first hello asks for the
    items after `since` (of the stream `epoch`, if given).
    """

    def __init__(
        self,
        url: str,
        name: str,
        *,
        rng: random.Random,
        cut_at: list[int] | None = None,
        since: int = 0,
        epoch: str | None = None,
    ) -> None:
        self.url = url
        self.name = name
        self.rng = rng
        self.since = since
        self.epoch = epoch
        self.cut_at = sorted(cut_at or [])
        self.items: list[StreamItem] = []
        self.connections = 0
        self.cuts = 0
        self.welcomes: list[Welcome] = []
        self.arrived = anyio.Event()  # set (and replaced) whenever an item arrives

    @property
    def seqs(self) -> list[int]:
        return [item.seq for item in self.items]

    @property
    def ended(self) -> bool:
        return bool(self.items) and isinstance(self.items[-1], EndedItem)

    async def run(self) -> None:
        """Follow the session's stream to `ended`."""
        while not self.ended:
            ws = await self.connect()
            try:
                await self._follow(ws)
            except ConnectionClosed:
                pass  # the server went away: resume on the next connection
            finally:
                await ws.close()

    async def connect(self) -> ClientConnection:
        """One connection, welcomed, resuming after the last item held."""
        while True:
            try:
                ws = await ws_connect(self.url, max_size=None, max_queue=None, ping_interval=None)
            except (OSError, InvalidHandshake):
                await anyio.sleep(0.02)  # the server is down, or not listening yet
                continue
            epoch = self.welcomes[-1].epoch if self.welcomes else self.epoch
            since = self.items[-1].seq if self.items else self.since
            hello = Hello(id=1, role=Role.OBSERVER, token=TOKEN, since=since, epoch=epoch)
            try:
                await ws.send(encode_client_frame(hello, Encoding.MSGPACK))
                welcome = decode_server_frame(await ws.recv())
            except ConnectionClosed:
                await anyio.sleep(0.02)
                continue
            assert isinstance(welcome, Welcome), (self.name, welcome)
            assert welcome.replay is Replay.FULL and welcome.epoch == (epoch or welcome.epoch)
            self.welcomes.append(welcome)
            self.connections += 1
            return ws

    async def _follow(self, ws: ClientConnection) -> None:
        async for data in ws:
            frame = decode_server_frame(data)
            if not isinstance(frame, EventItem | NotificationItem | ClockItem | EndedItem):
                continue  # a pong, a reply: not the stream
            self.items.append(frame)
            self.arrived.set()
            self.arrived = anyio.Event()
            if isinstance(frame, EndedItem):
                return
            if self.cut_at and frame.seq >= self.cut_at[0]:
                self.cut_at.pop(0)
                self.cuts += 1
                if self.rng.random() < 0.5:
                    ws.transport.abort()  # the network drops
                else:
                    await ws.close()
                return

    async def wait_for(self, count: int) -> None:
        """Return once it holds `count` items (or `ended`)."""
        while len(self.items) < count and not self.ended:
            await self.arrived.wait()


class Resilient:
    """A Client whose tool calls, jumps and idles are resolved after a broken connection (see
    the module docstring); everything else is the Client's own."""

    def __init__(self, client: Client, *, idle_after: anyio.Event | None = None) -> None:
        self._client = client
        self.resolved = 0  # requests whose connection broke before their reply
        self._idle_after = idle_after  # `idle` (which lets the session end) waits for it

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    @property
    def client(self) -> Client:
        return cast(Client, self)

    async def _since_reconnected(self, before: int) -> list[StreamItem]:
        """The items after `before` once the client is connected again and holds everything
        the server kept (a read-only ping is sent again across breaks; its pong comes after
        the replay)."""
        self.resolved += 1
        await self._client.ping()
        return self._client.items_since(before)

    async def call_tool(self, tool: str, args: dict[str, Any] | None = None) -> Any:
        app, _, function = tool.partition("__")
        while True:
            before = self._client.seq
            try:
                return await self._client.call_tool(tool, args)
            except ConnectionLostError:
                items = await self._since_reconnected(before)
            calls = [
                item.event
                for item in items
                if isinstance(item, EventItem)
                and item.event.event_type == "AGENT"
                and (item.event.app, item.event.function) == (app, function)
            ]
            if calls:  # applied: its event is the server's answer
                if calls[-1].exception is not None:
                    raise ToolFailedError(calls[-1].exception)
                return calls[-1].return_value

    async def jump(self, **kwargs: Any) -> ClockState:
        while True:
            before = self._client.seq
            try:
                return await self._client.jump(**kwargs)
            except ConnectionLostError:
                items = await self._since_reconnected(before)
            clocks = [item.clock for item in items if isinstance(item, ClockItem)]
            if clocks:  # applied: every control ends with its clock item
                return clocks[-1]

    async def idle(self) -> None:
        if self._idle_after is not None:
            await self._idle_after.wait()
        while self._client.ended is None:
            try:
                await self._client.idle()
                return
            except SessionEndedError:
                return  # the idle was applied, and the session ran to its end
            except ConnectionLostError:
                await self._since_reconnected(self._client.seq)
