"""Creating, stopping and listing sessions with the admin token: the async client, the sync
client and `areasync session ...`, over a real loopback server."""

from __future__ import annotations

import json
import sys

import anyio
import pytest

from areasync.client import (
    CreatedSession,
    ForbiddenError,
    ListedSession,
    admin_url,
    connect,
    connect_sync,
    list_sessions,
)
from areasync.protocol import Role
from areasync.testing import AreasyncServer
from tests.bounds import PROCESS_S

WAIT = PROCESS_S


def server_url(server: AreasyncServer) -> str:
    return f"ws://127.0.0.1:{server.port}"


async def test_create_session_returns_the_url_and_a_token_per_role(
    areasync_server: AreasyncServer,
) -> None:
    async with connect(areasync_server.url, role="admin", token=areasync_server.token) as admin:
        created = await admin.create_session(scenario="scenario_tutorial", mode="fast")
    areasync_server.session_ids.append(created.session_id)
    assert isinstance(created, CreatedSession)
    assert created.url.endswith(f"/sessions/{created.session_id}")
    assert created.mode == "fast"
    assert set(created.tokens) == {"agent", "user", "observer", "controller"}
    async with connect(created.url, role="agent", token=created.tokens["agent"]) as agent:
        assert agent.session_id == created.session_id


async def test_stop_session_ends_it_with_its_validation(areasync_server: AreasyncServer) -> None:
    async with connect(areasync_server.url, role="admin", token=areasync_server.token) as admin:
        created = await admin.create_session("scenario_tutorial", mode="manual")
        stopped = await admin.stop_session(created.session_id)
    assert stopped.session_id == created.session_id
    assert stopped.state == "stopped"
    assert stopped.validation is not None


async def test_create_session_needs_the_admin_token(areasync_server: AreasyncServer) -> None:
    token = areasync_server.tokens()[Role.CONTROLLER]
    async with connect(areasync_server.url, role="controller", token=token) as controller:
        with pytest.raises(ForbiddenError):
            await controller.create_session("scenario_tutorial")


async def test_admin_url_finds_a_session_from_the_servers_address(
    areasync_server: AreasyncServer,
) -> None:
    url = await admin_url(server_url(areasync_server), token=areasync_server.token)
    assert url == areasync_server.url
    [listed] = await list_sessions(server_url(areasync_server), token=areasync_server.token)
    assert listed["id"] == areasync_server.session_id


async def test_list_sessions_gives_typed_sessions_that_still_read_by_name(
    areasync_server: AreasyncServer,
) -> None:
    [listed] = await list_sessions(server_url(areasync_server), token=areasync_server.token)
    assert isinstance(listed, ListedSession)
    assert listed.id == listed["id"] == listed.get("id") == areasync_server.session_id
    assert listed.worker is None and listed.get("no_such_field", "absent") == "absent"
    with pytest.raises(KeyError):
        listed["no_such_field"]


async def test_the_sync_client_creates_and_stops_sessions(areasync_server: AreasyncServer) -> None:
    def blocking() -> tuple[str, str]:
        with connect_sync(areasync_server.url, role="admin", token=areasync_server.token) as a:
            created = a.create_session("scenario_tutorial", mode="manual", timeout=30)
            stopped = a.stop_session(created.session_id, timeout=30)
            return created.session_id, stopped.state

    with anyio.fail_after(WAIT):
        session_id, state = await anyio.to_thread.run_sync(blocking)
    assert session_id != areasync_server.session_id
    assert state == "stopped"


async def areasync_session(*args: str) -> tuple[int, str, str]:
    command = [sys.executable, "-m", "areasync.cli", "session", *args]
    with anyio.fail_after(WAIT):
        done = await anyio.run_process(command, check=False)
    return done.returncode, done.stdout.decode(), done.stderr.decode()


async def test_areasync_session_create_list_and_stop(areasync_server: AreasyncServer) -> None:
    where = ["--url", server_url(areasync_server), "--token", areasync_server.token]
    code, out, err = await areasync_session("create", *where, "scenario_tutorial", "--mode", "fast")
    assert code == 0, err
    created = json.loads(out)
    assert set(created["tokens"]) == {"agent", "user", "observer", "controller"}
    code, out, err = await areasync_session("list", *where)
    assert code == 0, err
    assert created["session_id"] in {session["id"] for session in json.loads(out)}
    code, out, err = await areasync_session("stop", *where, created["session_id"])
    assert code == 0, err
    assert json.loads(out)["state"] == "stopped"


async def test_areasync_session_says_when_the_token_is_wrong(
    areasync_server: AreasyncServer,
) -> None:
    where = ["--url", server_url(areasync_server), "--token", "not-the-token"]
    code, _, err = await areasync_session("create", *where, "scenario_tutorial")
    assert code == 1
    assert "token was refused" in err and "--token" in err
