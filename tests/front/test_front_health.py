"""The front's `/health` before its start-up sessions are placed: a client that waits for a
healthy server (as the dashboard's tests and a load balancer do) must not then find no session."""

from __future__ import annotations

import json

from websockets.datastructures import Headers
from websockets.http11 import Request

from areasync.front.server import Front
from areasync.service.config import ServiceConfig


async def test_health_is_503_starting_until_the_start_up_sessions_are_placed() -> None:
    front = Front(ServiceConfig(port=0, trace_dir=None), 2, ["scenario_tutorial"])
    front.routes.bound("127.0.0.1", 8765, "127.0.0.1")
    request = Request("/health", Headers({"Host": "127.0.0.1:8765"}))
    response = await front.routes(None, request)
    assert response is not None
    assert response.status_code == 503
    assert json.loads(response.body)["status"] == "starting"
