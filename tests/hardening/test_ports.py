"""Every port and route passes the same screens (`areasync/service/gate/screens.py`): one table.

The routes are every kind the server opens - the main port's plain HTTP, its WebSocket
handshake, OpenEnv's GET and POST routes; gaia2-cli's adapter port (aiohttp) and its event
stream and POSTs; a cluster's router (its real HTTP server, started without Ray: the screens
are the same code, and the router's routes never need a node to refuse) - and each screen runs
against each of them with real HTTP requests on loopback:

- a foreign Host is refused 421 and a foreign Origin 403, each naming what it refused;
- every answer carries the security headers (`headers.API_HEADERS`), refusals included;
- a request for a route with a body is judged by its head: a wrong or missing token gets 401,
  a Content-Length over the route's limit 413, a chunked body 411 - answered while the body has
  not been sent at all, so a server that waited for the body would fail the bounded wait;
- a token's bodies in flight past `max_bodies_per_token` are refused 429 naming the bound;
- a socket that sends nothing is closed by the server.

Waits are bounded (`anyio.fail_after`); nothing asserts how fast anything happens.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import pytest

from areasync.cluster.router import Router
from areasync.protocol import Role
from areasync.service import Service
from areasync.service.gate.screens import PortScreen
from areasync.service.http.headers import API_HEADERS
from tests.hardening.faults import watch_faults
from tests.service.support import ADMIN, TUTORIAL, WAIT, config
from tests.waiting import eventually

UPGRADE = {
    "Upgrade": "websocket",
    "Connection": "Upgrade",
    "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
    "Sec-WebSocket-Version": "13",
}
SECURITY = {name.lower(): value for name, value in API_HEADERS}
BODY = b'{"message": "hello", "action": {"action_type": "list_apps"}}'


@dataclasses.dataclass
class Ports:
    """A server (main port, gaia2-cli port) and a router, each with its screens."""

    service: Service
    router: Router

    def address(self, port: str) -> int:
        numbers = {"main": self.service.port, "gaia2": self.service.gaia2.port}
        numbers["router"] = self.router.port
        number = numbers[port]
        assert number is not None
        return number

    def screen(self, port: str) -> PortScreen:
        screens = {"main": self.service.http.screen, "gaia2": self.service.gaia2.screen}
        screens["router"] = self.router.routes.screen
        return screens[port]

    def token(self, role: Role) -> str:
        return ADMIN if role is Role.ADMIN else self.service.tokens.of(TUTORIAL)[role]


@asynccontextmanager
async def ports(tmp_path: Path, **overrides: Any) -> AsyncIterator[Ports]:
    """A server with its gaia2-cli port and a router; whatever the test sends them, neither
    may log an error or lose a task's exception (`watch_faults`)."""
    fields: dict[str, Any] = {"gaia2_port": 0, "max_bodies_per_token": 2, **overrides}
    with watch_faults() as faults:
        async with Service(config(**fields), (TUTORIAL,)) as service:
            router = Router(config(state_dir=tmp_path / "cluster", **fields))
            await router.listen()
            try:
                yield Ports(service, router)
            finally:
                await router.stop()
    assert faults.problems == []


@dataclasses.dataclass(frozen=True)
class Target:
    """A route of a port: how to request it, and with which credential."""

    name: str
    port: str
    method: str
    path: str  # with {token} where the credential rides in the path
    role: Role | None = None  # the credential's role (None: the route needs none)
    in_header: bool = False  # the credential is an Authorization header, not in the path
    headers: tuple[tuple[str, str], ...] = ()
    body: bool = False  # a route that takes a body

    def __str__(self) -> str:
        return self.name

    def request(
        self, ports: Ports, *, token: str | None = None, headers: dict[str, str] | None = None
    ) -> tuple[str, dict[str, str]]:
        """The target and headers of a request with `token` (default: the right one)."""
        if token is None and self.role is not None:
            token = ports.token(self.role)
        fields = {"Host": f"127.0.0.1:{ports.address(self.port)}", "Connection": "close"}
        fields.update(dict(self.headers))
        if self.in_header and token:
            fields["Authorization"] = f"Bearer {token}"
        fields.update(headers or {})
        return self.path.format(token="" if self.in_header else token or ""), fields


TARGETS = [
    Target("main GET /health", "main", "GET", "/health"),
    Target("main GET /api/sessions", "main", "GET", "/api/sessions", Role.ADMIN, True),
    Target("main WebSocket", "main", "GET", f"/sessions/{TUTORIAL}", headers=(*UPGRADE.items(),)),
    Target("main OpenEnv GET", "main", "GET", "/openenv/{token}/health", Role.AGENT),
    Target("main OpenEnv POST", "main", "POST", "/openenv/{token}/step", Role.AGENT, body=True),
    Target("gaia2 GET /health", "gaia2", "GET", "/gaia2/{token}/health", Role.USER),
    Target("gaia2 GET /events", "gaia2", "GET", "/gaia2/{token}/events", Role.USER),
    Target("gaia2 POST /notify", "gaia2", "POST", "/gaia2/{token}/notify", Role.USER, body=True),
    Target(
        "gaia2 POST /call_tool",
        "gaia2",
        "POST",
        "/gaia2/{token}/call_tool",
        Role.AGENT,
        body=True,
    ),
    Target("router GET /health", "router", "GET", "/health"),
    Target("router WebSocket", "router", "GET", "/sessions/s1", headers=(*UPGRADE.items(),)),
    Target(
        "router POST /api/sessions", "router", "POST", "/api/sessions", Role.ADMIN, True, body=True
    ),
]
BODY_TARGETS = [target for target in TARGETS if target.body]
PORTS = ("main", "gaia2", "router")


# -- raw HTTP over loopback ------------------------------------------------------------------


@dataclasses.dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    def message(self) -> str:
        """The refusal's message, in the main port's shape or gaia2-cli's."""
        error = self.json()["error"]
        return str(error["message"] if isinstance(error, dict) else error)

    def code(self) -> str:
        data = self.json()
        return str(data["error"]["code"] if isinstance(data["error"], dict) else data["code"])


async def send_head(
    port: int, method: str, target: str, headers: dict[str, str], body: bytes = b""
) -> anyio.abc.SocketStream:
    """A connection that has sent a request line, `headers` and `body` (perhaps partial)."""
    stream = await anyio.connect_tcp("127.0.0.1", port)
    lines = [f"{method} {target} HTTP/1.1", *(f"{k}: {v}" for k, v in headers.items())]
    await stream.send(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
    return stream


async def read_answer(stream: anyio.abc.SocketStream, *, head_only: bool = False) -> Answer:
    """The response on `stream`: its head, and its body (by Content-Length, else to EOF)."""
    data = b""
    with anyio.fail_after(WAIT):
        while b"\r\n\r\n" not in data:
            data += await stream.receive()
        head, _, rest = data.partition(b"\r\n\r\n")
        status_line, *lines = head.decode("latin-1").split("\r\n")
        headers = {}
        for line in lines:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = headers.get("content-length")
        if not head_only:
            try:
                while length is None or len(rest) < int(length):
                    rest += await stream.receive()
            except (anyio.EndOfStream, anyio.BrokenResourceError):
                pass
    return Answer(int(status_line.split()[1]), headers, rest)


async def ask(
    ports: Ports,
    target: Target,
    *,
    token: str | None = None,
    headers: dict[str, str] | None = None,
    body: bytes | None = None,
    head_only: bool = False,
) -> Answer:
    path, fields = target.request(ports, token=token, headers=headers)
    data = b""
    if target.body:
        data = BODY if body is None else body
        fields.setdefault("Content-Length", str(len(data)))
    stream = await send_head(ports.address(target.port), target.method, path, fields, data)
    async with stream:
        return await read_answer(stream, head_only=head_only or target.name.endswith("/events"))


async def ask_head(
    ports: Ports, target: Target, *, token: str | None = None, **headers: str
) -> Answer:
    """Send a request's head alone (its body announced, never sent) and read the answer."""
    path, fields = target.request(ports, token=token, headers=headers)
    stream = await send_head(ports.address(target.port), target.method, path, fields)
    async with stream:
        return await read_answer(stream)


def assert_secure(answer: Answer) -> None:
    assert {name: answer.headers.get(name) for name in SECURITY} == SECURITY


# -- Host and Origin -------------------------------------------------------------------------


@pytest.mark.parametrize("target", TARGETS, ids=str)
async def test_a_foreign_host_is_refused_421_naming_it(tmp_path: Path, target: Target) -> None:
    async with ports(tmp_path) as p:
        answer = await ask(p, target, headers={"Host": "rebind.example:80"})
    assert answer.status == 421 and answer.code() == "host_not_allowed"
    assert "'rebind.example:80'" in answer.message() and "--allow-host" in answer.message()
    assert_secure(answer)


@pytest.mark.parametrize("target", TARGETS, ids=str)
async def test_a_foreign_origin_is_refused_403_naming_it(tmp_path: Path, target: Target) -> None:
    async with ports(tmp_path) as p:
        answer = await ask(p, target, headers={"Origin": "http://evil.example"})
    assert answer.status == 403 and answer.code() == "origin_not_allowed"
    assert "'http://evil.example'" in answer.message() and "--allow-origin" in answer.message()
    assert_secure(answer)


# -- security headers ------------------------------------------------------------------------


@pytest.mark.parametrize("target", [t for t in TARGETS if t.name != "main WebSocket"], ids=str)
async def test_every_answer_carries_the_security_headers(tmp_path: Path, target: Target) -> None:
    async with ports(tmp_path) as p:
        own = f"http://127.0.0.1:{p.address(target.port)}"
        answer = await ask(p, target, headers={"Origin": own})
    assert answer.status < 500 or answer.status == 503  # answered (503: the router has no node)
    assert_secure(answer)


# -- bodies: judged by their heads -----------------------------------------------------------


@pytest.mark.parametrize("credential", ["wrong", "missing"])
@pytest.mark.parametrize("target", BODY_TARGETS, ids=str)
async def test_a_body_without_a_valid_token_is_refused_401_before_it_is_sent(
    tmp_path: Path, target: Target, credential: str
) -> None:
    token = "not-a-token" if credential == "wrong" else ""
    async with ports(tmp_path) as p:
        answer = await ask_head(p, target, token=token, **{"Content-Length": str(16 << 20)})
        assert p.screen(target.port).bodies.taken == 0
    assert answer.status == 401 and answer.code() == "unauthorized"
    assert "token" in answer.message()
    assert_secure(answer)


@pytest.mark.parametrize("target", BODY_TARGETS, ids=str)
async def test_a_body_longer_than_the_route_takes_is_refused_413_before_it_is_sent(
    tmp_path: Path, target: Target
) -> None:
    async with ports(tmp_path, max_frame_bytes=1024) as p:
        answer = await ask_head(p, target, **{"Content-Length": "1025"})
    assert answer.status == 413 and answer.code() == "too_large"
    assert "1024" in answer.message() and "max_frame_bytes" in answer.message()
    assert_secure(answer)


@pytest.mark.parametrize("target", BODY_TARGETS, ids=str)
async def test_a_chunked_body_is_refused_411_before_it_is_read(
    tmp_path: Path, target: Target
) -> None:
    async with ports(tmp_path) as p:
        answer = await ask_head(p, target, **{"Transfer-Encoding": "chunked"})
    assert answer.status == 411 and "Content-Length" in answer.message()
    assert_secure(answer)


@pytest.mark.parametrize("target", BODY_TARGETS, ids=str)
async def test_a_tokens_bodies_past_its_bound_are_refused_429_naming_it(
    tmp_path: Path, target: Target
) -> None:
    async with ports(tmp_path) as p:
        again, answer = await _past_the_bound(p, target)
    assert answer.status == 429 and answer.code() == "capacity"
    assert "max_bodies_per_token" in answer.message() and answer.headers["retry-after"]
    assert_secure(answer)
    assert again.status != 429


async def _past_the_bound(p: Ports, target: Target) -> tuple[Answer, Answer]:
    """Hold two requests mid-body and ask a third; let the two go and ask again."""
    path, fields = target.request(p)
    fields["Content-Length"] = "1000"
    port = p.address(target.port)
    bodies = p.screen(target.port).bodies
    held = [await send_head(port, target.method, path, fields, b"{") for _ in range(2)]
    try:
        await eventually(lambda: bodies.taken == 2)  # both admitted, their bodies awaited
        answer = await ask(p, target)
    finally:
        for stream in held:
            await stream.aclose()
    await eventually(lambda: bodies.taken == 0)  # each slot given back with its socket
    return await ask(p, target), answer


# -- idle sockets ----------------------------------------------------------------------------


@pytest.mark.parametrize("port", PORTS)
async def test_a_socket_that_sends_nothing_is_closed(tmp_path: Path, port: str) -> None:
    limits = {"handshake_timeout": 0.5, "http_idle_timeout": 0.5}
    async with ports(tmp_path, **limits) as p:
        stream = await anyio.connect_tcp("127.0.0.1", p.address(port))
        async with stream:
            with anyio.fail_after(60):  # generous: the server's own timer closes it
                try:
                    while await stream.receive():
                        pass
                except (anyio.EndOfStream, anyio.BrokenResourceError, ConnectionError):
                    pass


async def test_a_keep_alive_socket_with_nothing_more_to_ask_is_closed(tmp_path: Path) -> None:
    # The main port and the router close after each answer; gaia2-cli's port keeps the
    # socket for the next request, for at most http_idle_timeout.
    async with ports(tmp_path, http_idle_timeout=0.5) as p:
        target = TARGETS[5]  # gaia2 GET /health
        path, fields = target.request(p, headers={"Connection": "keep-alive"})
        stream = await send_head(p.address("gaia2"), "GET", path, fields)
        async with stream:
            answer = await read_answer(stream)
            assert answer.status == 200 and "close" not in answer.headers.get("connection", "")
            with anyio.fail_after(60):
                try:
                    while await stream.receive():
                        pass
                except (anyio.EndOfStream, anyio.BrokenResourceError, ConnectionError):
                    pass
