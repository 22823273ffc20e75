"""Test helpers: a real service on a free loopback port and typed clients over real sockets.

`serving(...)` starts a `Service` (manual mode by default, so nothing moves unless the test moves
it) with the admin token `ADMIN`; `attach(service, role)` opens a `websockets` client connection,
says hello and returns a `Peer` holding the welcome. A Peer records every frame it receives, in
order, so tests can assert on interleaving; every wait is bounded (`anyio.fail_after`) so a bug
fails the test instead of hanging it.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import anyio
import anyio.to_thread
import msgspec
import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from areasync.engine.clock import REAL_WALL, Wall
from areasync.protocol import (
    ClientFrame,
    Encoding,
    EndedItem,
    Error,
    Hello,
    Mode,
    Pong,
    Result,
    Role,
    ServerFrame,
    StreamItem,
    Welcome,
    decode_server_frame,
    encode_client_frame,
)
from areasync.protocol.frames import ClockItem, EventItem, NotificationItem
from areasync.service import Service, ServiceConfig
from areasync.simulation.loading import Loadable

ADMIN = "test-admin-token"
TUTORIAL = "scenario_tutorial"
WAIT = 10.0  # wall seconds any single expected frame may take before the test fails

STREAM_TYPES = (EventItem, NotificationItem, ClockItem, EndedItem)


def config(**overrides: Any) -> ServiceConfig:
    fields: dict[str, Any] = {
        "port": 0,
        "admin_token": ADMIN,
        "mode": Mode.MANUAL,
        "trace_dir": None,
        "hello_timeout": 5.0,
        "close_timeout": 2.0,
        "shutdown_grace": 1.0,
        "ping_interval": None,
    }
    fields.update(overrides)
    return ServiceConfig(**fields)


class Gate:
    """Holds work in a worker thread until the test opens it: the worker calls `hold()`, the
    test awaits `wait_entered()` (the work is under way), checks what it must, then `open()`s.
    Ordering, never timing."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.opened = threading.Event()

    def hold(self) -> None:
        self.entered.set()
        assert self.opened.wait(30), "the test never opened the gate"

    def open(self) -> None:
        self.opened.set()

    async def wait_entered(self) -> None:
        assert await anyio.to_thread.run_sync(self.entered.wait, 10), "no gated work started"


# `AREASYNC_TEST_WORKERS=N` runs the tests that use `serving` through a front with N session
# workers (`areasync serve --workers N`) instead of one in-process service (`make
# through-workers`); a test that reaches into the service's sessions (its registry, a session's
# simulation) cannot, and is skipped when it tries.
THROUGH_FRONT = int(os.environ.get("AREASYNC_TEST_WORKERS", "0"))


def front_lacks(what: str) -> pytest.MarkDecorator:
    """A test of something a front of session workers does not carry yet (the front's known
    limits in docs/topics/known-limits.md): expected to fail through one (strict: it says when it
    no longer does), run as any other in one process."""
    return pytest.mark.xfail(bool(THROUGH_FRONT), reason=f"through a front: {what}", strict=True)


def in_process_only(why: str) -> pytest.MarkDecorator:
    """A test that patches or holds code in this process (`why`), which a front's workers do
    not run: skipped through one, run as any other in one process."""
    return pytest.mark.skipif(bool(THROUGH_FRONT), reason=f"in this process only: {why}")


@asynccontextmanager
async def serving(
    *scenarios: Loadable, wall: Wall = REAL_WALL, **overrides: Any
) -> AsyncIterator[Service]:
    """A running service with `scenarios` (default: scenario_tutorial), torn down after; its
    sessions read and wait on `wall` (a test's own: `tests/walls.py`)."""
    if THROUGH_FRONT:
        if wall is not REAL_WALL:
            _in_process_only("a wall of the test's")
        async with through_front(scenarios or (TUTORIAL,), config(**overrides)) as front:
            yield front
        return
    async with Service(config(**overrides), scenarios or (TUTORIAL,), wall=wall) as service:
        yield service


def _in_process_only(what: str) -> Any:
    pytest.skip(f"reads {what} of a session in this process: not through a front's workers")


class _Seat:
    def __init__(self, session_id: str, tokens: dict[Role, str]) -> None:
        self.id = session_id
        self.tokens = tokens

    def __getattr__(self, name: str) -> Any:
        return _in_process_only(name)


class _FrontSessions:
    """What a test reads of a registry, answered by a front: a session's id and tokens."""

    def __init__(self, front: Any) -> None:
        self._front = front

    def get(self, session_id: str) -> _Seat | None:
        if self._front.seats.held(session_id) is None:
            # Made in a worker (an OpenEnv episode): the front learns of it
            # only when a hello names it.
            return _in_process_only("whether it exists")
        return _Seat(session_id, self._front.tokens.of(session_id))

    def __getattr__(self, name: str) -> Any:
        return _in_process_only(f"the registry's {name}")


class _ThroughFront:
    """A front with session workers, seen as a test sees a `Service`: its addresses, config,
    tokens and the sessions' tokens."""

    def __init__(self, front: Any) -> None:
        self.front = front
        self.config = front.config
        self.tokens = front.tokens
        self.registry = _FrontSessions(front)

    @property
    def port(self) -> int:
        return int(self.front.port)

    @property
    def http_url(self) -> str:
        return str(self.front.http_url)

    def ws_url(self, session_id: str) -> str:
        return str(self.front.ws_url(session_id))

    def openenv_url(self, token: str | None = None) -> str:
        from areasync.service.adapters.openenv.paths import base_url

        return base_url(self.http_url, token or self.tokens.admin)

    def gaia2_url(self, session_id: str, role: Role = Role.USER) -> str:
        """The shared gaia2-cli port's URL, on the front (`--gaia2-port`)."""
        from areasync.service.adapters.gaia2cli.paths import adapter_url

        base = str(self.front.gaia2_base)
        if role is Role.ADMIN:
            return adapter_url(base, self.tokens.admin, session_id)
        return adapter_url(base, self.tokens.of(session_id)[role])

    def __getattr__(self, name: str) -> Any:
        return _in_process_only(f"the service's {name}")


@asynccontextmanager
async def through_front(scenarios: Any, settings: ServiceConfig) -> AsyncIterator[Service]:
    from areasync.front.server import Front

    if not all(isinstance(source, str) for source in scenarios):
        pytest.skip("an in-memory scenario cannot be sent to a session worker")
    async with Front(settings, THROUGH_FRONT, scenarios) as front:
        yield cast(Service, _ThroughFront(front))


class Peer:
    """One client connection with typed frames; see the module docstring."""

    def __init__(self, ws: ClientConnection, encoding: Encoding) -> None:
        self.ws = ws
        self.encoding = encoding
        self.frames: list[ServerFrame] = []
        self.welcome: Welcome | None = None
        self._ids = 0

    # -- sending ---------------------------------------------------------------------------

    def next_id(self) -> int:
        self._ids += 1
        return self._ids

    async def send(self, frame: ClientFrame) -> None:
        await self.ws.send(encode_client_frame(frame, self.encoding))

    async def send_raw(self, data: str | bytes) -> None:
        await self.ws.send(data)

    async def request(self, kind: type[Any], **fields: Any) -> Result | Error | Pong:
        """Send a `kind` frame with a fresh id and return its reply (frames in between kept)."""
        frame = kind(id=self.next_id(), **fields)
        await self.send(frame)
        return await self.reply_to(frame.id)

    async def call(self, kind: type[Any], **fields: Any) -> Any:
        """`request`, expecting a result: its value."""
        reply = await self.request(kind, **fields)
        assert isinstance(reply, Result), f"expected a result, got {reply!r}"
        return reply.value

    async def fail(self, kind: type[Any], **fields: Any) -> Error:
        """`request`, expecting an error."""
        reply = await self.request(kind, **fields)
        assert isinstance(reply, Error), f"expected an error, got {reply!r}"
        return reply

    # -- receiving -------------------------------------------------------------------------

    async def recv(self, limit: float = WAIT) -> ServerFrame:
        with anyio.fail_after(limit):
            data = await self.ws.recv()
        frame = decode_server_frame(data)
        assert frame is not None, f"unknown frame type: {data!r}"
        self.frames.append(frame)
        return frame

    async def until(
        self, predicate: Callable[[ServerFrame], bool], limit: float = WAIT
    ) -> ServerFrame:
        """Read until a frame satisfies `predicate`; return it."""
        with anyio.fail_after(limit):
            while True:
                frame = await self.recv(limit)
                if predicate(frame):
                    return frame

    async def reply_to(self, request_id: int) -> Result | Error | Pong:
        frame = await self.until(
            lambda f: isinstance(f, Result | Error | Pong) and f.id == request_id
        )
        assert isinstance(frame, Result | Error | Pong)
        return frame

    async def until_seq(self, seq: int, limit: float = WAIT) -> None:
        """Read until the item at `seq`; `limit` bounds the whole read, not one frame."""
        if self.items and self.items[-1].seq >= seq:
            return
        await self.until(lambda f: isinstance(f, STREAM_TYPES) and f.seq >= seq, limit)

    async def until_ended(self) -> EndedItem:
        """The `ended` item (already received, or the next one to come)."""
        for seen in self.frames:
            if isinstance(seen, EndedItem):
                return seen
        frame = await self.until(lambda f: isinstance(f, EndedItem))
        assert isinstance(frame, EndedItem)
        return frame

    async def closed(self, limit: float = WAIT) -> tuple[int | None, str]:
        """Read (and keep) frames until the server closes; the close code and reason."""
        with anyio.fail_after(limit):
            try:
                while True:
                    await self.recv(limit)
            except ConnectionClosed as exc:
                if exc.rcvd is None:
                    return None, ""
                return exc.rcvd.code, exc.rcvd.reason

    @property
    def items(self) -> list[StreamItem]:
        return [f for f in self.frames if isinstance(f, STREAM_TYPES)]

    @property
    def seqs(self) -> list[int]:
        return [item.seq for item in self.items]


@asynccontextmanager
async def attach(
    service: Service,
    role: Role | str,
    *,
    session: str = TUTORIAL,
    token: str = ADMIN,
    since: int | None = None,
    epoch: str | None = None,
    encoding: Encoding = Encoding.JSON,
    **connect_options: Any,
) -> AsyncIterator[Peer]:
    """A connected client that said hello and got its welcome (asserted)."""
    async with connect(service.ws_url(session), **connect_options) as ws:
        peer = Peer(ws, encoding)
        await peer.send(Hello(id=0, role=Role(role), token=token, since=since, epoch=epoch))
        welcome = await peer.recv()
        assert isinstance(welcome, Welcome), f"expected a welcome, got {welcome!r}"
        peer.welcome = welcome
        yield peer


@asynccontextmanager
async def raw(service: Service, session: str = TUTORIAL) -> AsyncIterator[Peer]:
    """A connected client that has sent nothing yet."""
    async with connect(service.ws_url(session)) as ws:
        yield Peer(ws, Encoding.JSON)


def tokens(service: Service, session: str = TUTORIAL) -> dict[Role, str]:
    found = service.registry.get(session)
    assert found is not None
    return found.tokens


async def http_get(
    service: Service, target: str, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    """A plain HTTP/1.1 GET over a real socket: status, headers (lower-case names), body."""
    return await http_request(service, "GET", target, headers)


async def http_request(
    service: Service,
    method: str,
    target: str,
    headers: dict[str, str | None] | dict[str, str] | None = None,
    body: bytes = b"",
) -> tuple[int, dict[str, str], bytes]:
    """Any HTTP/1.1 request over a real socket, sent as given (a header set to None is left
    out; Host defaults to the server's address): status, headers (lower-case names), body."""
    fields: dict[str, str | None] = {"Host": f"127.0.0.1:{service.port}", "Connection": "close"}
    fields.update(headers or {})
    lines = [f"{method} {target} HTTP/1.1"]
    lines += [f"{name}: {value}" for name, value in fields.items() if value is not None]
    request = ("\r\n".join(lines) + "\r\n\r\n").encode() + body
    with anyio.fail_after(WAIT):
        async with await anyio.connect_tcp("127.0.0.1", service.port or 0) as stream:
            await stream.send(request)
            data = b""
            try:
                while True:
                    data += await stream.receive()
            except (anyio.EndOfStream, anyio.BrokenResourceError):
                pass
    head, _, content = data.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    parsed: dict[str, str] = {}
    for line in header_lines:  # a repeated header's values are joined, as HTTP reads them
        name, _, value = line.partition(":")
        key = name.strip().lower()
        parsed[key] = f"{parsed[key]}, {value.strip()}" if key in parsed else value.strip()
    return int(status_line.split()[1]), parsed, content


def json_body(body: bytes) -> Any:
    return json.loads(body)


def json_files(directory: Path) -> list[str]:
    """Names of the JSON files in `directory` (sync: tests call it outside the event loop's way)."""
    return sorted(path.name for path in directory.glob("*.json"))


def plain(value: Any) -> Any:
    """A frame or record as builtins, for equality across encodings."""
    return msgspec.to_builtins(value)


def replace_sync(monkeypatch: Any, before: Callable[[int], None]) -> None:
    """Journals' syncs call `before(fd)` first (`journal.writer.sync_file`, looked up at each
    call): a test holds or fails a sync with it."""
    from areasync.journal import writer as journal_writer

    real = journal_writer.sync_file

    def sync_file(fd: int) -> None:
        before(fd)
        real(fd)

    monkeypatch.setattr(journal_writer, "sync_file", sync_file)
