"""The front's token-protected HTTP routes refuse as a server's do (`service/http/answers.py`'s
`protected_refusal`, one rule on both): a token nobody holds is "not valid" (401), a session's
token on a route of the admin's is 403 naming the admin token, and a session's token opens
`/api/schema`; a journal that does not read back makes `/health` degraded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from websockets.datastructures import Headers
from websockets.http11 import Request

from areasync.front.server import Front
from areasync.protocol.frames import Mode, Role
from areasync.service.config import ServiceConfig
from tests.front.support import ADMIN

TUTORIAL = "scenario_tutorial"


def _config(tmp_path: Path) -> ServiceConfig:
    return ServiceConfig(
        port=0, mode=Mode.MANUAL, trace_dir=None, state_dir=tmp_path / "state", admin_token=ADMIN
    )


async def _get(front: Front, path: str) -> tuple[int, dict[str, Any]]:
    assert front.port is not None
    host = f"127.0.0.1:{front.port}"
    response = await front.routes(None, Request(path, Headers({"Host": host})))
    assert response is not None
    return response.status_code, json.loads(response.body)


async def test_a_token_nobody_holds_is_not_valid_on_every_protected_route(tmp_path: Path) -> None:
    async with Front(_config(tmp_path), 2, [TUTORIAL]) as front:
        answers = [
            await _get(front, f"{path}?token=wrong")
            for path in ("/metrics", "/api/sessions", "/api/schema")
        ]
    for status, body in answers:
        assert status == 401 and "the token is not valid" in body["error"]["message"]


async def test_a_sessions_token_on_an_admin_route_is_403_naming_the_admin_token(
    tmp_path: Path,
) -> None:
    async with Front(_config(tmp_path), 2, [TUTORIAL]) as front:
        observer = front.tokens.of(TUTORIAL)[Role.OBSERVER]
        answers = [
            await _get(front, f"{path}?token={observer}")
            for path in ("/metrics", "/api/scenarios", f"/api/sessions/{TUTORIAL}/source")
        ]
        schema, _ = await _get(front, f"/api/schema?token={observer}")
    for status, body in answers:
        assert status == 403 and "needs the admin token" in body["error"]["message"]
    assert schema == 200


async def test_a_journal_that_does_not_read_back_makes_health_degraded(tmp_path: Path) -> None:
    sessions = tmp_path / "state" / "sessions"
    sessions.mkdir(parents=True)
    (sessions / "broken.journal").write_bytes(b"not a journal")
    async with Front(_config(tmp_path), 2, [TUTORIAL]) as front:
        status, health = await _get(front, "/health")
    assert status == 200 and health["status"] == "degraded"
    assert health["journal"]["refused_journals"] == 1
