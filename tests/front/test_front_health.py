"""The front before its start-up sessions are placed: it listens already, so a client that
waits for a healthy server (a load balancer, the dashboard's tests) or reconnects to a restarted
one (the dashboard) must be told to wait or retry, never that its session does not exist."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from websockets.asyncio.client import connect
from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request

from areasync.front.server import Front
from areasync.protocol import CloseCode
from areasync.service.config import ServiceConfig
from tests.front.support import ADMIN, WAIT


async def test_health_is_503_starting_until_the_start_up_sessions_are_placed() -> None:
    front = Front(ServiceConfig(port=0, trace_dir=None), 2, ["scenario_tutorial"])
    front.routes.bound("127.0.0.1", 8765, "127.0.0.1")
    request = Request("/health", Headers({"Host": "127.0.0.1:8765"}))
    response = await front.routes(None, request)
    assert response is not None
    assert response.status_code == 503
    assert json.loads(response.body)["status"] == "starting"


async def test_a_hello_before_the_start_up_sessions_are_placed_is_told_to_retry(
    tmp_path: Path,
) -> None:
    # The front's start-up up to its listening port, its workers not started: the window in
    # which a client reconnecting to a restarted server (the dashboard) sends its hello.
    config = ServiceConfig(port=0, trace_dir=None, state_dir=tmp_path, admin_token=ADMIN)
    front = Front(config, 2, ["scenario_tutorial"])
    await front._open_state_dir()
    front._confine()
    await front._listen()
    try:
        url = f"ws://127.0.0.1:{front.port}/sessions/scenario_tutorial"
        with anyio.fail_after(WAIT):
            async with connect(url) as ws:
                await ws.send(
                    json.dumps({"type": "hello", "id": 0, "role": "admin", "token": ADMIN})
                )
                with pytest.raises(ConnectionClosed) as closed:
                    await ws.recv()
    finally:
        await front._shutdown()
    assert closed.value.rcvd is not None and closed.value.rcvd.code == CloseCode.CAPACITY
    assert "retry" in closed.value.rcvd.reason
