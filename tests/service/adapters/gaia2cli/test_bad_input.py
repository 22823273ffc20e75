"""Bad requests to the adapter get gaia2-cli's error shape, say what to do, and change nothing."""

from __future__ import annotations

import gzip
import http.client
import json
from typing import Any
from urllib.parse import urlsplit

import anyio
import pytest

from areasync.protocol.frames import Role
from tests.service.adapters.gaia2cli.harness import Harness
from tests.service.adapters.gaia2cli.support import adapter, agent, harness, stream_seq
from tests.service.support import TUTORIAL

# (role of the URL's token, method, route, body, status, words the error must hold)
CASES: list[tuple[Role, str, str, Any, int, str]] = [
    (Role.USER, "POST", "/notify", b"{not json", 400, "Invalid JSON"),
    (Role.USER, "POST", "/notify", b"[1, 2]", 400, "JSON object"),
    (Role.USER, "POST", "/notify", {"text": "hi"}, 400, '"message"'),
    (Role.USER, "POST", "/notify", {"message": "   "}, 400, '"message"'),
    (Role.USER, "POST", "/send_notifications", {"message": 3}, 400, '"message"'),
    (Role.AGENT, "POST", "/call_tool", b"nope", 400, "Invalid JSON"),
    (Role.AGENT, "POST", "/call_tool", {"action": "send_email"}, 400, "'app'"),
    (Role.AGENT, "POST", "/call_tool", {"app": "EmailClientApp"}, 400, "'action'"),
    (Role.AGENT, "POST", "/call_tool", {"app": "A", "action": "b", "args": [1]}, 400, "args"),
    (Role.AGENT, "POST", "/idle", b"{not json", 400, "Invalid JSON"),
    (Role.AGENT, "POST", "/idle", {"seen": "1"}, 400, "'seen' must be the lastSeq"),
    (Role.AGENT, "POST", "/idle", {"seen": -1}, 400, "'seen' must be the lastSeq"),
    (Role.AGENT, "POST", "/idle", {"seen": True}, 400, "'seen' must be the lastSeq"),
    (Role.AGENT, "POST", "/idle", {"seen": 1}, 400, "0 notifications have been shown"),
    (Role.USER, "GET", "/messages?after=x", None, 400, "'after'"),
    (Role.USER, "GET", "/nowhere", None, 404, "/notify"),
    (Role.USER, "GET", "/notify", None, 405, "POST"),
    (Role.AGENT, "POST", "/notify", {"message": "hi"}, 403, "user token"),
    (Role.OBSERVER, "POST", "/notify", {"message": "hi"}, 403, "user token"),
    (Role.USER, "POST", "/call_tool", {"app": "A", "action": "b"}, 403, "agent token"),
    (Role.CONTROLLER, "POST", "/call_tool", {"app": "A", "action": "b"}, 403, "agent token"),
]


@pytest.mark.parametrize(("role", "method", "route", "body", "status", "words"), CASES)
async def test_a_bad_request_is_refused_with_gaia2_clis_error_shape_and_changes_nothing(
    role: Role, method: str, route: str, body: Any, status: int, words: str
) -> None:
    async with adapter() as service, agent(service):
        before = stream_seq(service)
        got, answer = await harness(service, role).call(method, route, body)
        assert stream_seq(service) == before
    assert got == status and answer["ok"] is False and words in answer["error"]


@pytest.mark.parametrize(
    ("app", "action", "args", "words"),
    [
        ("NoSuchApp", "send_email", {}, "unknown app 'NoSuchApp'"),
        ("AgentUserInterface", "no_such_action", {}, "unknown action 'no_such_action'"),
        ("AgentUserInterface", "send_message_to_user", {"nope": 1}, "invalid arguments"),
    ],
)
async def test_an_action_that_cannot_run_is_a_failed_action_and_changes_nothing(
    app: str, action: str, args: dict[str, Any], words: str
) -> None:
    async with adapter() as service, agent(service):
        before = stream_seq(service)
        status, body = await harness(service, Role.AGENT).call_tool(app, action, args)
        assert stream_seq(service) == before
    assert status == 200 and body["ok"] is False and words in body["error"]


async def test_a_wrong_token_is_refused_without_naming_any_session() -> None:
    async with adapter() as service, agent(service):
        before = stream_seq(service)
        base = service.gaia2_url(TUTORIAL).rsplit("/", 1)[0] + "/not-a-token"
        status, body = await Harness(base).call("POST", "/notify", {"message": "hi"})
        assert stream_seq(service) == before
    assert status == 401 and body["ok"] is False and "not valid" in body["error"]
    assert TUTORIAL not in body["error"]


async def test_the_admin_token_names_its_session_in_the_url() -> None:
    async with adapter() as service, agent(service):
        status, body = await harness(service, Role.ADMIN).call("GET", "/status")
        base = service.gaia2_url("no-such-session", Role.ADMIN)
        missing, refusal = await Harness(base).call("GET", "/status")
    assert status == 200 and body["session"] == TUTORIAL
    assert missing == 404 and "no session 'no-such-session'" in refusal["error"]


async def test_input_past_the_rate_limit_is_refused_429_and_changes_nothing() -> None:
    async with adapter(rate=0.001, burst=1) as service:  # no new token within the test
        runner = harness(service)
        await runner.notify("first")  # the burst's one request
        before = stream_seq(service)
        status, body = await runner.call("POST", "/notify", {"message": "second"})
        assert status == 429 and body["ok"] is False and "slow down" in body["error"]
        assert stream_seq(service) == before


async def test_input_past_the_sessions_bound_is_refused_413_naming_it_and_changes_nothing() -> None:
    async with adapter(max_session_input_bytes=100) as service:
        runner = harness(service)
        before = stream_seq(service)
        status, body = await runner.call("POST", "/notify", {"message": "x" * 200})
        assert status == 413 and body["ok"] is False
        assert "--max-session-input-bytes" in body["error"]
        assert stream_seq(service) == before


async def test_a_compressed_body_is_not_inflated_and_changes_nothing() -> None:
    # A few MiB of gzip can hold gigabytes: the adapter reads the bytes its head announced,
    # as they are (harnesses send plain JSON).
    body = gzip.compress(json.dumps({"message": "hi"}).encode())
    async with adapter() as service, agent(service):
        before = stream_seq(service)
        url = urlsplit(service.gaia2_url(TUTORIAL))
        connection = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
        headers = {"Content-Type": "application/json", "Content-Encoding": "gzip"}
        await anyio.to_thread.run_sync(
            lambda: connection.request("POST", url.path + "/notify", body, headers)
        )
        response = await anyio.to_thread.run_sync(connection.getresponse)
        status, answer = response.status, json.loads(response.read())
        connection.close()
        assert stream_seq(service) == before
    assert status == 400 and answer["ok"] is False and "Invalid JSON" in answer["error"]
