"""A value a session's journal cannot hold is refused before anything records it, on every route.

The attack: an integer above 2**64 in a tool call's arguments entered the session's records,
then the journal's encoder refused it; the next `fork_session` journaled the fork's records in
a task of the server's task group, which raised, and the process exited 1. Each route (the
WebSocket, gaia2-cli's adapter, OpenEnv) now gets `invalid_args` naming the value and what is
allowed, the session records nothing, a fork afterwards works and the server answers on.

A fork whose journal cannot take a record all the same (a bug elsewhere) ends alone.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import anyio
import pytest

from areasync.protocol import CallTool, Encoding, Error, ErrorCode, Result, Role
from areasync.protocol.frames import ForkSession
from areasync.service import Service
from areasync.simulation.input_records import Steps
from tests.hardening.faults import watch_faults
from tests.service.adapters.gaia2cli.harness import Harness
from tests.service.adapters.openenv.client import GenericEnvClient
from tests.service.support import TUTORIAL, WAIT, attach, http_get, serving, tokens

HUGE = 2**70
INBOX = {"tool": "EmailClientApp__list_emails", "args": {"folder_name": "INBOX"}}
ALLOWED = "integers from -2**63 to 2**64-1"


def deep(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


def records(service: Service, session: str = TUTORIAL) -> int:
    found = service.registry.get(session)
    assert found is not None
    return len(found.sim.records)


async def a_fork_works_and_the_server_answers(service: Service) -> None:
    """Fork the tutorial, call a tool as the fork's agent, and GET /health."""
    async with attach(service, Role.ADMIN) as admin:
        created = await admin.call(ForkSession, session_id=TUTORIAL)
    fork = created["session_id"]
    async with attach(service, Role.AGENT, session=fork, token=created["tokens"]["agent"]) as agent:
        assert isinstance(await agent.request(CallTool, **INBOX), Result)
    status, _, _ = await http_get(service, "/health")
    assert status == 200


@pytest.mark.parametrize("value", [HUGE, -HUGE, deep(40)], ids=["huge", "huge negative", "deep"])
async def test_a_websocket_tool_call_with_a_value_no_journal_holds_is_refused(
    tmp_path: Path, value: Any
) -> None:
    with watch_faults() as faults:
        async with serving(state_dir=tmp_path) as service:
            async with attach(service, Role.AGENT) as agent:
                before = records(service)
                reply = await agent.request(
                    CallTool, tool=INBOX["tool"], args={"folder_name": "INBOX", "offset": value}
                )
                assert records(service) == before
            assert isinstance(reply, Error) and reply.code == ErrorCode.INVALID_ARGS, reply
            assert "`$.offset" in reply.message and ALLOWED in reply.message
            await a_fork_works_and_the_server_answers(service)
    assert faults.problems == []


@pytest.mark.parametrize(
    "value",
    [float("nan"), float("inf"), b"bytes", dt.datetime(2024, 1, 1, tzinfo=dt.UTC), {"k": {1: 2}}],
    ids=["nan", "infinity", "bytes", "timestamp", "integer key"],
)
async def test_a_msgpack_tool_call_with_a_value_json_has_not_is_refused(
    tmp_path: Path, value: Any
) -> None:
    # msgpack carries them; a record would keep other values than the call had (text for
    # bytes, timestamps and keys), and JSON subscribers would see null for NaN.
    with watch_faults() as faults:
        async with (
            serving(state_dir=tmp_path) as service,
            attach(service, Role.AGENT, encoding=Encoding.MSGPACK) as agent,
        ):
            before = records(service)
            reply = await agent.request(CallTool, tool=INBOX["tool"], args={"x": value})
            assert records(service) == before
        assert isinstance(reply, Error) and reply.code == ErrorCode.INVALID_ARGS, reply
        assert "`$.x" in reply.message
    assert faults.problems == []


def adapter(service: Service, role: Role) -> Harness:
    return Harness(service.gaia2_url(TUTORIAL, role))


@pytest.mark.parametrize(
    "raw",
    [b"1180591620717411303424", b"NaN", b"-Infinity", b'"\\ud800"'],
    ids=["huge", "nan", "infinity", "lone surrogate"],
)
async def test_a_gaia2_cli_action_with_a_value_no_journal_holds_is_refused(
    tmp_path: Path, raw: bytes
) -> None:
    # gaia2-cli's adapter reads bodies with Python's json, which takes all of these.
    body = b'{"app": "EmailClientApp", "action": "list_emails", "args": {"offset": %s}}' % raw
    with watch_faults() as faults:
        async with serving(state_dir=tmp_path, gaia2_port=0) as service:
            before = records(service)
            status, answer = await adapter(service, Role.AGENT).call("POST", "/call_tool", body)
            assert records(service) == before
            assert answer["ok"] is False and "offset`" in answer["error"], (status, answer)
            assert ALLOWED in answer["error"]
            await a_fork_works_and_the_server_answers(service)
    assert faults.problems == []


async def test_a_gaia2_cli_user_message_that_is_not_text_is_refused(tmp_path: Path) -> None:
    with watch_faults() as faults:
        async with serving(state_dir=tmp_path, gaia2_port=0) as service:
            before = records(service)
            status, answer = await adapter(service, Role.USER).call(
                "POST", "/notify", b'{"message": "hi \\ud800"}'
            )
            assert records(service) == before
            assert answer["ok"] is False and "lone surrogate" in answer["error"], (status, answer)
            await a_fork_works_and_the_server_answers(service)
    assert faults.problems == []


async def test_an_openenv_step_with_a_huge_integer_is_refused(tmp_path: Path) -> None:
    with watch_faults() as faults:
        async with serving(state_dir=tmp_path) as service:
            url = service.openenv_url(tokens(service)[Role.AGENT])
            async with GenericEnvClient(base_url=url) as env:
                with anyio.fail_after(WAIT):
                    await env.reset()
                    before = records(service)
                    action = {
                        "action_type": "call_tool",
                        "app_name": "EmailClientApp",
                        "tool_name": "list_emails",
                        "tool_args": {"offset": HUGE},
                        "advance_time": False,
                    }
                    with pytest.raises(
                        RuntimeError,
                        match=r"offset` is the integer 1180591620717411303424, outside",
                    ):
                        await env.step(action)
                    assert records(service) == before
            await a_fork_works_and_the_server_answers(service)
    assert faults.problems == []


async def test_a_fork_whose_journal_cannot_take_a_record_ends_alone(tmp_path: Path) -> None:
    # A record no journal can hold in the source's records, as a bug elsewhere would leave it
    # (the journal's own is not told): a fork copies it, and its journal refuses it.
    async with (
        serving(state_dir=tmp_path) as service,
        attach(service, Role.AGENT) as agent,
        attach(service, Role.ADMIN) as admin,
    ):
        source = service.registry.get(TUTORIAL)
        assert source is not None
        source.sim.records.append(Steps(0.0, source.sim.log.seq, n=HUGE))
        created = await admin.request(ForkSession, session_id=TUTORIAL)
        assert isinstance(created, Result), created
        fork = service.registry.get(created.value["session_id"])
        assert fork is not None
        with anyio.fail_after(WAIT):
            await fork.done.wait()
        assert "cannot be encoded" in (fork.sim.end_reason or "")
        status, _, _ = await http_get(service, "/health")
        assert status == 200
        assert isinstance(await agent.request(CallTool, **INBOX), Result)  # the source goes on
