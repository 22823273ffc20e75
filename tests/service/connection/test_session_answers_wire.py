"""The exact bytes of the admin's session answers: `create_session`'s and `fork_session`'s
result, `stop_session`'s, `GET /api/sessions`, and the admin's `GET /api/scenarios`,
`/api/sessions/<id>/agent` and `/api/sessions/<id>/source`.

Each expected answer is written out key by key, in order, and encoded by msgspec as a plain
dict: what the server sends must be those bytes, over JSON and over msgpack. Values that are
measurements (tokens, epochs, times, bytes used) are read from the answer itself; every key,
its place and every other value are pinned. These answers are typed Structs on the server
(`protocol/sessions.py`): the bytes did not change when they stopped being dicts.
"""

from __future__ import annotations

import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import msgspec
import pytest

from areasync.bridge.scenarios.loading import registered_ids
from areasync.conformance.scenario_json import export_scenario_json
from areasync.conformance.scenarios import GAIA2_SHAPED_ID
from areasync.protocol import (
    ClientFrame,
    CreateSession,
    Encoding,
    ForkSession,
    Result,
    Role,
    StopSession,
    decode_server_frame,
)
from areasync.service import Service
from tests.service.support import ADMIN, Peer, attach, in_process_only, serving

BOUNDS = ("max_session_input_bytes", "max_session_memory_bytes")


async def raw_result(peer: Peer, frame: ClientFrame) -> bytes | str:
    """The bytes (or text) of the result of `frame`, as the server sent them."""
    await peer.send(frame)
    while True:
        data = await peer.ws.recv()
        reply = decode_server_frame(data)
        if isinstance(reply, Result) and reply.id == getattr(frame, "id", None):
            return data


def encoded(value: Any, encoding: Encoding) -> bytes | str:
    if encoding is Encoding.MSGPACK:
        return msgspec.msgpack.encode(value)
    return msgspec.json.encode(value).decode()


def decoded(data: bytes | str, encoding: Encoding) -> Any:
    if encoding is Encoding.MSGPACK:
        return msgspec.msgpack.decode(data)
    return msgspec.json.decode(data)


def result(request_id: int, value: dict[str, Any]) -> dict[str, Any]:
    return {"type": "result", "id": request_id, "value": value}


def created(service: Service, sent: dict[str, Any], session_id: str) -> dict[str, Any]:
    """`create_session`'s result for `session_id` (a manual session of scenario_tutorial), its
    epoch and tokens those `sent`."""
    return {
        "session_id": session_id,
        "scenario_id": "scenario_tutorial",
        "import_mode": None,
        "judge": None,
        "url": service.ws_url(session_id),
        "epoch": sent["epoch"],
        "mode": "manual",
        "tokens": {
            "agent": sent["tokens"]["agent"],
            "user": sent["tokens"]["user"],
            "observer": sent["tokens"]["observer"],
            "controller": sent["tokens"]["controller"],
        },
    }


async def create_and_stop(service: Service, encoding: Encoding) -> tuple[Any, ...]:
    """Create a manual session of scenario_tutorial and stop it: both answers' bytes."""
    async with attach(service, Role.ADMIN, encoding=encoding) as admin:
        create = CreateSession(id=1, scenario="scenario_tutorial", mode="manual")
        created_bytes = await raw_result(admin, create)
        session_id = decoded(created_bytes, encoding)["value"]["session_id"]
        stopped_bytes = await raw_result(admin, StopSession(id=2, session_id=session_id))
    return session_id, created_bytes, stopped_bytes


def stopped(session_id: str) -> dict[str, Any]:
    validation = {"success": False, "exception": None, "rationale": None}
    return {"session_id": session_id, "state": "stopped", "validation": validation, "trace": None}


@pytest.mark.parametrize("encoding", [Encoding.JSON, Encoding.MSGPACK])
async def test_create_and_stop_session_results_are_these_bytes(encoding: Encoding) -> None:
    async with serving() as service:
        session_id, created_bytes, stopped_bytes = await create_and_stop(service, encoding)
        sent = decoded(created_bytes, encoding)["value"]
        assert created_bytes == encoded(result(1, created(service, sent, session_id)), encoding)
    assert stopped_bytes == encoded(result(2, stopped(session_id)), encoding)


async def test_a_stopped_session_with_a_trace_names_its_trace_file(tmp_path: Path) -> None:
    async with serving(trace_dir=tmp_path) as service:
        session_id, _, stopped_bytes = await create_and_stop(service, Encoding.JSON)
        session = service.registry.sessions[session_id]
        assert session.trace_path is not None
        expected = {**stopped(session_id), "trace": str(session.trace_path)}
    assert stopped_bytes == encoded(result(2, expected), Encoding.JSON)


@in_process_only("a front adds each session's worker to the listing")
async def test_a_fork_result_is_a_created_session_with_its_own_tokens(tmp_path: Path) -> None:
    async with (
        serving(state_dir=tmp_path) as service,
        attach(service, Role.ADMIN, encoding=Encoding.JSON) as admin,
    ):
        data = await raw_result(admin, ForkSession(id=1, session_id="scenario_tutorial", at_seq=1))
        sent = decoded(data, Encoding.JSON)["value"]
        expected = created(service, sent, sent["session_id"])
    assert data == encoded(result(1, expected), Encoding.JSON)


async def http_body(service: Service, path: str, token: str = ADMIN) -> bytes:
    """The body of GET `path` with `token` (a 200 asserted)."""

    def get() -> bytes:
        url = service.http_url + path
        request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
        with urllib.request.urlopen(request, timeout=10) as response:
            body: bytes = response.read()
            return body

    with anyio.fail_after(30):
        return await anyio.to_thread.run_sync(get)


def use_and_limit(shown: dict[str, Any]) -> dict[str, Any]:
    return {"used": shown["used"], "limit": shown["limit"]}


def listed(ws_url: Callable[[str], str], shown: dict[str, Any], **pinned: Any) -> dict[str, Any]:
    """A session of scenario_tutorial as `/api/sessions` lists it: `pinned` values, the
    measured ones (`shown`'s epoch, times and bytes used) and the defaults of a session that
    nobody has moved in manual mode."""
    session_id = shown["id"]
    entry: dict[str, Any] = {
        "id": session_id,
        "scenario_id": "scenario_tutorial",
        "url": ws_url(session_id),
        "epoch": shown["epoch"],
        "state": "running",
        "ended": False,
        "oracle": False,
        "import_mode": None,
        "judge": None,
        "waiting_for_agent": False,
        "next_due": 5.0,
        "agents_busy": 0,
        "end_reason": None,
        "restartable": True,
        "clock": {
            "state": "running",
            "time": 0.0,
            "tick": 0,
            "mode": "manual",
            "speed": 1.0,
            "start_time": 0.0,
            "duration": 20.0,
            "lag": 0.0,
        },
        "seq": 1,
        "events": 0,
        "connections": {"agent": 0, "user": 0, "observer": 0, "controller": 0, "admin": 0},
        "validation": None,
        "trace": None,
        "trace_error": None,
        "created_at": shown["created_at"],
        "ended_at": None,
        "restored": False,
        "durable": False,
        "journal_error": None,
        "bounds": {bound: use_and_limit(shown["bounds"][bound]) for bound in BOUNDS},
    }
    entry.update(pinned)
    return entry


@in_process_only("a front adds each session's worker to the listing")
async def test_the_admins_session_listing_is_these_bytes() -> None:
    async with serving() as service:
        _, _, _ = await create_and_stop(service, Encoding.JSON)
        body = await http_body(service, "/api/sessions")
        shown = msgspec.json.decode(body)["sessions"]
        live = listed(service.ws_url, shown[0])
        ended = listed(
            service.ws_url,
            shown[1],
            state="stopped",
            ended=True,
            next_due=None,
            end_reason="stopped by an admin (stop_session)",
            clock={**live["clock"], "state": "stopped"},
            seq=5,
            validation={"success": False, "exception": None, "rationale": None},
            ended_at=shown[1]["ended_at"],
        )
    access = {"role": "admin", "session_id": None}
    expected = {"protocol": "areasync/1", "access": access, "sessions": [live, ended]}
    assert body == msgspec.json.encode(expected)


@in_process_only("a front adds each session's worker to the listing")
async def test_a_session_tokens_listing_is_its_own_session_in_these_bytes() -> None:
    async with serving() as service:
        token = service.tokens.of("scenario_tutorial")[Role.OBSERVER]
        body = await http_body(service, "/api/sessions", token)
        shown = msgspec.json.decode(body)["sessions"]
        expected = {
            "protocol": "areasync/1",
            "access": {"role": "observer", "session_id": "scenario_tutorial"},
            "sessions": [listed(service.ws_url, shown[0])],
        }
    assert body == msgspec.json.encode(expected)


@in_process_only("a front adds each session's worker to the listing")
async def test_a_durable_servers_listing_has_its_journal_bound_and_refused_journals(
    tmp_path: Path,
) -> None:
    async with serving(state_dir=tmp_path) as service:
        body = await http_body(service, "/api/sessions")
        shown = msgspec.json.decode(body)["sessions"]
        bounds = {bound: use_and_limit(used) for bound, used in shown[0]["bounds"].items()}
        assert list(bounds) == [*BOUNDS, "max_session_journal_bytes"]
        entry = listed(service.ws_url, shown[0], durable=True, bounds=bounds)
    expected = {
        "protocol": "areasync/1",
        "access": {"role": "admin", "session_id": None},
        "sessions": [entry],
        "refused_journals": {},
    }
    assert body == msgspec.json.encode(expected)


@in_process_only("a front adds each session's worker to the listing")
async def test_a_sessions_mcp_url_follows_its_fields_in_both_answers() -> None:
    async with serving(mcp_port=0) as service:
        session_id, created_bytes, _ = await create_and_stop(service, Encoding.JSON)
        sent = decoded(created_bytes, Encoding.JSON)["value"]
        mcp_url = service.mcp.url(session_id)
        expected = {**created(service, sent, session_id), "mcp_url": mcp_url}
        assert created_bytes == encoded(result(1, expected), Encoding.JSON)
        body = await http_body(service, "/api/sessions")
        shown = msgspec.json.decode(body)["sessions"]
    assert list(shown[1])[-1] == "mcp_url" and shown[1]["mcp_url"] == mcp_url


async def test_the_scenario_listing_is_these_bytes() -> None:
    async with serving(max_scenario_bytes=12345) as service:
        body = await http_body(service, "/api/scenarios")
    expected = {"scenarios": registered_ids(), "max_scenario_bytes": 12345}
    assert body == msgspec.json.encode(expected)


async def test_a_sessions_agent_access_is_these_bytes() -> None:
    async with serving() as service:
        body = await http_body(service, "/api/sessions/scenario_tutorial/agent")
        token = service.tokens.of("scenario_tutorial")[Role.AGENT]
        url = service.ws_url("scenario_tutorial")
    expected = {"session_id": "scenario_tutorial", "url": url, "token": token}
    assert body == msgspec.json.encode(expected)


async def test_a_registered_sessions_source_is_these_bytes() -> None:
    async with serving() as service:
        body = await http_body(service, "/api/sessions/scenario_tutorial/source")
    expected = {
        "session_id": "scenario_tutorial",
        "scenario": "scenario_tutorial",
        "mode": "manual",
        "speed": 1.0,
        "oracle": False,
    }
    assert body == msgspec.json.encode(expected)


async def test_an_imported_sessions_source_is_its_json_and_import_mode_in_these_bytes() -> None:
    text = export_scenario_json(GAIA2_SHAPED_ID)
    async with serving() as service:
        async with attach(service, Role.ADMIN) as admin:
            create = CreateSession(id=1, scenario_json=text, mode="manual", import_mode="plain")
            created_bytes = await raw_result(admin, create)
        session_id = msgspec.json.decode(created_bytes)["value"]["session_id"]
        body = await http_body(service, f"/api/sessions/{session_id}/source")
    expected = {
        "session_id": session_id,
        "scenario_json": text,
        "mode": "manual",
        "speed": 1.0,
        "oracle": False,
        "import_mode": "plain",
    }
    assert body == msgspec.json.encode(expected)
