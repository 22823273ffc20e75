"""gaia2-cli's shared port (`--gaia2-port`) on a front: each connection handed, unread, to the
worker of the session its first request names, for that one request (`front/gaia2.py`).

A harness's requests reach its session in its worker; a keep-alive connection that names
another session, in another worker, is answered there too (each response closes its
connection, and the client opens the next); what the front reads before a hand-off is
bounded, and refused in gaia2-cli's error shape: an oversized head (431), a head that never
ends (408, while other connections are answered), a token nobody holds (401), a session
nobody holds (404).
"""

from __future__ import annotations

import http.client
import json
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio

from areasync.front.cli import banner
from areasync.front.heads import HEAD_BYTES
from areasync.front.server import Front
from areasync.protocol.frames import Mode, Role
from areasync.service.adapters.gaia2cli.paths import adapter_url
from areasync.service.config import ServiceConfig
from tests.front.support import ADMIN, WAIT
from tests.service.adapters.gaia2cli.harness import Harness

TUTORIAL = "scenario_tutorial"
SECOND = "scenario_tutorial-2"


def _config(tmp_path: Path, **overrides: Any) -> ServiceConfig:
    fields: dict[str, Any] = {
        "port": 0,
        "gaia2_port": 0,
        "mode": Mode.FAST,
        "trace_dir": None,
        "state_dir": tmp_path / "state",
        "admin_token": ADMIN,
    }
    return ServiceConfig(**{**fields, **overrides})


@asynccontextmanager
async def _front(tmp_path: Path) -> AsyncIterator[Front]:
    """A front with two workers and a session on each, the shared port bound."""
    async with Front(_config(tmp_path), 2, [TUTORIAL, TUTORIAL]) as front:
        assert set(front.seats.where.values()) == {"worker-1", "worker-2"}
        yield front


@asynccontextmanager
async def _listening(tmp_path: Path, **overrides: Any) -> AsyncIterator[Front]:
    """A front up to its ports, its workers not started: what it decides alone."""
    front = Front(_config(tmp_path, **overrides), 2, [TUTORIAL])
    await front._open_state_dir()
    front._confine()
    await front._listen()
    try:
        yield front
    finally:
        await front._shutdown()


def _get(port: int, path: str) -> tuple[int, dict[str, Any]]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=WAIT)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


def _raw(port: int, data: bytes) -> bytes:
    """What the port answers to `data`, read until it closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=WAIT) as sock:
        sock.sendall(data)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer


def _status_and_body(answer: bytes) -> tuple[int, dict[str, Any]]:
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), json.loads(body)


async def test_a_harness_on_the_shared_port_reaches_its_session_in_its_worker(
    tmp_path: Path,
) -> None:
    async with _front(tmp_path) as front:
        user = front.tokens.of(SECOND)[Role.USER]
        runner = Harness(adapter_url(front.gaia2_base, user))
        with anyio.fail_after(WAIT):
            sent = await runner.notify("hello through the front")
            status, health = await runner.call("GET", "/health")
    assert sent["ok"] is True
    assert status == 200 and health["session"] == SECOND


async def test_a_keep_alive_connection_that_switches_sessions_is_answered_by_each_worker(
    tmp_path: Path,
) -> None:
    async with _front(tmp_path) as front:
        assert front.gaia2.port is not None

        def one_connection() -> list[tuple[int, str | None, str]]:
            # http.client opens a new connection when the last response said close.
            conn = http.client.HTTPConnection("127.0.0.1", front.gaia2.port, timeout=WAIT)
            answers = []
            try:
                for session_id in (TUTORIAL, SECOND, TUTORIAL):
                    conn.request("GET", f"/gaia2/{ADMIN}/{session_id}/status")
                    response = conn.getresponse()
                    body = json.loads(response.read())
                    answers.append((response.status, response.getheader("Connection"), body))
            finally:
                conn.close()
            return [(status, close, body["session"]) for status, close, body in answers]

        with anyio.fail_after(WAIT):
            answers = await anyio.to_thread.run_sync(one_connection)
    assert answers == [(200, "close", TUTORIAL), (200, "close", SECOND), (200, "close", TUTORIAL)]


async def test_a_session_nobody_holds_is_refused_404_by_the_front(tmp_path: Path) -> None:
    async with _front(tmp_path) as front:
        assert front.gaia2.port is not None
        with anyio.fail_after(WAIT):
            status, body = await anyio.to_thread.run_sync(
                _get, front.gaia2.port, f"/gaia2/{ADMIN}/no-such-session/status"
            )
    assert status == 404 and body["ok"] is False
    assert "no session 'no-such-session'" in body["error"]


async def test_the_banner_gives_each_session_its_shared_port_url(tmp_path: Path) -> None:
    async with _front(tmp_path) as front:
        text = banner(front, await front.banner_words())
        user = front.tokens.of(TUTORIAL)[Role.USER]
    assert f"  gaia2-cli   {adapter_url(front.gaia2_base, user)}  (the user's token)" in text


async def test_a_token_nobody_holds_is_refused_401_by_the_front(tmp_path: Path) -> None:
    async with _listening(tmp_path) as front:
        assert front.gaia2.port is not None
        with anyio.fail_after(WAIT):
            status, body = await anyio.to_thread.run_sync(
                _get, front.gaia2.port, "/gaia2/not-a-token/health"
            )
    assert status == 401 and body["ok"] is False
    assert "/gaia2/<session token>" in body["error"]


async def test_an_oversized_head_is_refused_431_naming_the_bound(tmp_path: Path) -> None:
    async with _listening(tmp_path) as front:
        assert front.gaia2.port is not None
        padding = b"X-Padding: " + b"a" * HEAD_BYTES + b"\r\n"
        request = b"GET /gaia2/t/health HTTP/1.1\r\nHost: 127.0.0.1\r\n" + padding + b"\r\n"
        with anyio.fail_after(WAIT):
            answer = await anyio.to_thread.run_sync(_raw, front.gaia2.port, request)
    status, body = _status_and_body(answer)
    assert status == 431 and f"over {HEAD_BYTES} bytes" in body["error"]


async def test_a_malformed_request_line_is_refused_400(tmp_path: Path) -> None:
    async with _listening(tmp_path) as front:
        assert front.gaia2.port is not None
        with anyio.fail_after(WAIT):
            answer = await anyio.to_thread.run_sync(_raw, front.gaia2.port, b"NONSENSE\r\n\r\n")
    status, body = _status_and_body(answer)
    assert status == 400 and "send HTTP/1.1" in body["error"]


async def test_a_head_that_never_ends_holds_no_other_connection(tmp_path: Path) -> None:
    # Far beyond the test: the slow head is still being read when the other is answered.
    async with _listening(tmp_path, handshake_timeout=3600.0) as front:
        port = front.gaia2.port
        assert port is not None
        with socket.create_connection(("127.0.0.1", port), timeout=WAIT) as slow:
            slow.sendall(b"GET /gaia2/t/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: a")
            with anyio.fail_after(WAIT):
                status, _ = await anyio.to_thread.run_sync(_get, port, "/gaia2/other/health")
            assert front.gaia2.judging == 1  # the slow one, still read
    assert status == 401


async def test_a_head_that_never_ends_is_refused_408_naming_handshake_timeout(
    tmp_path: Path,
) -> None:
    async with _listening(tmp_path, handshake_timeout=0.2) as front:
        assert front.gaia2.port is not None
        with anyio.fail_after(WAIT):
            answer = await anyio.to_thread.run_sync(
                _raw, front.gaia2.port, b"GET /gaia2/t/health HTTP/1.1\r\nX-Slow: a"
            )
    status, body = _status_and_body(answer)
    assert status == 408 and "handshake_timeout" in body["error"]


async def test_a_request_pipelined_after_the_first_is_not_served_on_the_handed_connection(
    tmp_path: Path,
) -> None:
    # The front verified the first request's token only: the worker answers that one, and
    # closes before reading the next as if it held the same credential.
    async with _front(tmp_path) as front:
        assert front.gaia2.port is not None
        user = front.tokens.of(TUTORIAL)[Role.USER]
        first = f"GET /gaia2/{user}/status HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        second = f"GET /gaia2/{ADMIN}/{SECOND}/status HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        with anyio.fail_after(WAIT):
            answer = await anyio.to_thread.run_sync(
                _raw, front.gaia2.port, (first + second).encode()
            )
    assert answer.count(b"HTTP/1.1 ") == 1, answer
    status, body = _status_and_body(answer)
    assert status == 200 and body["session"] == TUTORIAL


async def test_the_admin_token_changes_a_session_through_the_front(tmp_path: Path) -> None:
    # The worker never learns the front's admin token: it acts on the front's verdict.
    async with _front(tmp_path) as front:
        runner = Harness(adapter_url(front.gaia2_base, ADMIN, SECOND))
        with anyio.fail_after(WAIT):
            sent = await runner.notify("from the operator")
    assert sent["ok"] is True and sent.get("runId"), sent
