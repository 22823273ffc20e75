"""The relay of an admin's connection (`front/admin.py`): nothing a worker sends is carried out.

Real WebSocket connections: a client on a loopback port, and a worker's end of a socketpair
served as a handed-over socket is (`handoff.adopt`). The front's side is recorded: what a
worker sends must reach the client as it came, and never become a control of the front.
"""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from websockets.asyncio.client import connect
from websockets.asyncio.server import ServerConnection, serve

from areasync.front.admin import AdminControls, relay, worker_end
from areasync.front.seats import Seats
from areasync.protocol.codec import Encoding
from areasync.protocol.frames import Role
from areasync.service.connection.handoff import Handoff, adopt, adopting_server
from areasync.service.gate.auth import Tokens

WAIT = 10.0
FROM_THE_WORKER = [
    {"type": "stop_session", "id": 7, "session_id": "someone_elses"},
    {"type": "fork_session", "id": 8, "session_id": "someone_elses"},
    {"type": "create_session", "id": 9, "scenario": "scenario_tutorial"},
]


class Recorded:
    """The front as the controls see it, recording every call it is asked for."""

    def __init__(self) -> None:
        self.seats = Seats(Tokens("admin"))
        self.restoring: set[str] = set()
        self.asked: list[str] = []

    async def locate(self, session_id: str) -> Any:
        self.asked.append(f"locate {session_id}")

    async def call(self, worker: Any, method: str, *args: Any) -> Any:
        self.asked.append(method)

    async def create_session(self, **request: Any) -> dict[str, Any]:
        self.asked.append("create_session")
        return {}

    async def create_on(self, worker: Any, method: str, *args: Any) -> dict[str, Any]:
        self.asked.append(method)
        return {}


@asynccontextmanager
async def relayed(front: Recorded) -> AsyncIterator[str]:
    """A loopback port whose every connection is relayed to a worker's end that sends
    `FROM_THE_WORKER`, then echoes what it receives."""

    async def worker(ws: ServerConnection) -> None:
        for frame in FROM_THE_WORKER:
            await ws.send(json.dumps(frame))
        async for data in ws:
            await ws.send(data)

    async def handler(client: ServerConnection) -> None:
        mine, theirs = socket.socketpair()
        handoff = Handoff(session_id="s", role=Role.ADMIN, hello=b"", text=True, rest=b"", path="/")
        await adopt(
            adopting_server(worker, client.logger),
            theirs,
            handoff,
            max_size=1 << 20,
            max_queue=4,
            write_limit=1 << 15,
            ping_interval=None,
            close_timeout=1.0,
        )
        upstream = await worker_end(mine, max_size=1 << 20, close_timeout=1.0, write_limit=1 << 15)
        await relay(client, upstream, Encoding.JSON, AdminControls(front), 1 << 20)

    async with serve(handler, "127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        yield f"ws://127.0.0.1:{port}/"


async def test_admin_controls_a_worker_sends_reach_the_client_as_they_came_and_do_nothing() -> None:
    front = Recorded()
    async with relayed(front) as url, connect(url) as client:
        with anyio.fail_after(WAIT):
            received = [json.loads(await client.recv()) for _ in FROM_THE_WORKER]
            await client.send(json.dumps({"type": "ping", "id": 1}))
            echoed = json.loads(await client.recv())
    assert received == FROM_THE_WORKER
    assert echoed == {"type": "ping", "id": 1}  # the client's other frames reach the worker
    assert front.asked == []


async def test_an_admin_control_the_client_sends_is_the_fronts_and_not_the_workers() -> None:
    front = Recorded()
    async with relayed(front) as url, connect(url) as client:
        with anyio.fail_after(WAIT):
            for _ in FROM_THE_WORKER:
                await client.recv()
            await client.send(json.dumps({"type": "stop_session", "id": 3, "session_id": "x"}))
            answer = json.loads(await client.recv())
    assert answer["type"] == "error" and answer["id"] == 3
    assert answer["code"] == "session_not_found"  # the recorded front holds no session
    assert front.asked == ["locate x"]
