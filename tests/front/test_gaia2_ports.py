"""gaia2-cli's port per session (`--gaia2-ports`) with `serve --workers 2`, as real processes.

The front binds each session's port and hands every connection accepted there, unread, to the
session's worker, whose adapter serves it (`front/ports.py`): the runner's requests of one
keep-alive connection are answered by the worker, and the front holds no descriptor of it. A
worker's loss does not lose the port: its sessions come back on another worker at the same URL.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import socket
from pathlib import Path
from typing import Any

import anyio

from tests.front.support import (
    REAL_PROCESSES,
    WAIT,
    Front,
    front,
    held_by_worker_only,
    hello_past_restore,
    process_end,
)

pytestmark = REAL_PROCESSES

TUTORIAL = "scenario_tutorial"


def _free_range(size: int) -> tuple[int, int]:
    """A range of loopback ports starting at one free now (a port taken meanwhile by another
    process is skipped by the front, as by a server)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        first = int(sock.getsockname()[1])
    first = min(first, 65535 - size)
    return first, first + size - 1


def _gaia2_url(served: Front, session_id: str) -> str:
    block = served.banner.split(f"session {session_id} ", 1)[1]
    found = re.search(r"gaia2-cli\s+(http://127\.0\.0\.1:\d+)", block)
    assert found, served.banner
    return found[1]


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


def _request(conn: http.client.HTTPConnection, method: str, path: str, body: Any = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    headers = {} if data is None else {"Content-Type": "application/json"}
    conn.request(method, path, body=data, headers=headers)
    response = conn.getresponse()
    return response.status, json.loads(response.read())


async def test_a_sessions_gaia2_cli_port_is_served_by_its_worker_over_one_keep_alive_connection(
    tmp_path: Path,
) -> None:
    first, last = _free_range(16)
    async with front("--gaia2-ports", f"{first}-{last}", log=tmp_path / "log") as served:
        url = _gaia2_url(served, TUTORIAL)
        conn = http.client.HTTPConnection("127.0.0.1", _port(url), timeout=WAIT)
        try:
            status, health = await anyio.to_thread.run_sync(_request, conn, "GET", "/health")
            assert status == 200 and health["session"] == TUTORIAL, health
            message = {"message": "hello from the runner"}
            status, sent = await anyio.to_thread.run_sync(
                _request, conn, "POST", "/notify", message
            )
            assert status == 200 and sent["ok"] is True, sent
            assert sent["runId"].startswith(f"{TUTORIAL}:"), sent
            status, _ = await anyio.to_thread.run_sync(_request, conn, "GET", "/status")
            assert status == 200
            assert conn.sock is not None  # the same connection served all three
            peer = conn.sock.getsockname()[1]
            assert await held_by_worker_only(served, TUTORIAL, _port(url), peer)
        finally:
            conn.close()


async def test_a_killed_workers_session_keeps_its_gaia2_cli_port_on_the_worker_that_restores_it(
    tmp_path: Path,
) -> None:
    first, last = _free_range(16)
    state = ("--state-dir", str(tmp_path / "state"))
    ports = ("--gaia2-ports", f"{first}-{last}")
    async with front(*ports, *state, log=tmp_path / "log") as served:
        url = _gaia2_url(served, TUTORIAL)
        killed = await served.holder(TUTORIAL)
        os.kill(killed, signal.SIGKILL)
        with anyio.fail_after(WAIT):
            await process_end(killed)
        token = served.token(TUTORIAL, "observer")
        ws, answer = await hello_past_restore(served.url(TUTORIAL), "observer", token, since=0)
        assert answer.get("restored") is True, (answer, served.said())
        await ws.close()
        assert await served.holder(TUTORIAL) != killed
        conn = http.client.HTTPConnection("127.0.0.1", _port(url), timeout=WAIT)
        try:
            status, health = await anyio.to_thread.run_sync(_request, conn, "GET", "/health")
        finally:
            conn.close()
        assert status == 200 and health["session"] == TUTORIAL, (health, served.said())
