"""The front before its start-up sessions are placed: it listens already, so a client that
waits for a healthy server (a load balancer, the dashboard's tests) or reconnects to a restarted
one (the dashboard) must be told to wait or retry, never that its session does not exist."""

from __future__ import annotations

import json
import resource
from pathlib import Path
from typing import Any

import anyio
import pytest
from websockets.asyncio.client import connect
from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request

from areasync.front.server import Front
from areasync.protocol import CloseCode
from areasync.protocol.frames import Mode, Role
from areasync.service.config import ServiceConfig
from tests.front.support import ADMIN, WAIT
from tests.waiting import eventually

TUTORIAL = "scenario_tutorial"
SEND = "AgentUserInterface__send_message_to_user"


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


async def test_a_session_ended_by_its_failed_journal_makes_health_degraded_through_the_front(
    tmp_path: Path,
) -> None:
    # The journal's next append fails as a full disk would: the worker's file size limit is
    # set to the journal's size (Python ignores SIGXFSZ, so the write fails with EFBIG).
    config = ServiceConfig(
        port=0, mode=Mode.MANUAL, trace_dir=None, state_dir=tmp_path, admin_token=ADMIN
    )
    async with Front(config, 1, [TUTORIAL]) as front:
        worker = front.pool.workers[0]
        assert worker.pid is not None
        journal = tmp_path / "sessions" / f"{TUTORIAL}.journal"
        size = journal.stat().st_size
        resource.prlimit(worker.pid, resource.RLIMIT_FSIZE, (size, resource.RLIM_INFINITY))
        agent = front.tokens.of(TUTORIAL)[Role.AGENT]
        with anyio.fail_after(WAIT):
            async with connect(front.ws_url(TUTORIAL)) as ws:
                await ws.send(
                    json.dumps({"type": "hello", "id": 0, "role": "agent", "token": agent})
                )
                await ws.recv()  # welcome
                frame = {"type": "call_tool", "id": 1, "tool": SEND, "args": {"content": "hi"}}
                await ws.send(json.dumps(frame))
                with pytest.raises(ConnectionClosed) as closed:
                    while True:
                        await ws.recv()
        assert closed.value.rcvd is not None and "journal failed" in closed.value.rcvd.reason

        async def health() -> dict[str, Any]:
            response = await front.routes(
                None, Request("/health", Headers({"Host": f"127.0.0.1:{front.port}"}))
            )
            assert response is not None
            body: dict[str, Any] = json.loads(response.body)
            return body if body["journal"].get("failed_sessions") else {}

        degraded = await eventually(health)
    assert degraded["status"] == "degraded"
    assert degraded["journal"] == {"failed_sessions": 1, "refused_journals": 0}
