"""A server started on a state directory restores every live session of its journals.

A crash is taken here as what it leaves on disk: a copy of a running server's state directory
(its journals are durable before any reply, `test_durable_journal.py`), which a second,
in-process service then starts from. `test_durable_restore.py` kills a real server instead.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import anyio
import anyio.to_thread

from areasync.journal import RegisteredScenario
from areasync.protocol import CallTool, Mode, Role
from areasync.protocol.frames import Welcome
from areasync.service.durability.state_dir import created_record
from areasync.service.gate.auth import Tokens, new_token
from tests.service.support import ADMIN, TUTORIAL, attach, http_get, serving, tokens


async def crash_copy(source: Path, target: Path) -> None:
    await anyio.to_thread.run_sync(shutil.copytree, source, target)


async def test_a_restored_session_keeps_its_id_epoch_stream_and_tokens(tmp_path: Path) -> None:
    async with serving(state_dir=tmp_path / "a") as service, attach(service, Role.AGENT) as agent:
        await agent.call(
            CallTool, tool="EmailClientApp__list_emails", args={"folder_name": "INBOX"}
        )
        minted = tokens(service)
        before = service.registry.get(TUTORIAL)
        assert before is not None
        epoch, seq = before.epoch, before.hub.seq
        await crash_copy(tmp_path / "a", tmp_path / "b")
    async with (
        serving(state_dir=tmp_path / "b") as service,
        attach(service, Role.AGENT, token=minted[Role.AGENT], since=0, epoch=epoch) as again,
    ):
        welcome = again.welcome
        assert isinstance(welcome, Welcome)
        assert (welcome.session_id, welcome.epoch, welcome.seq) == (TUTORIAL, epoch, seq)
        assert welcome.restored and welcome.replay == "full"
        assert list(service.registry.sessions) == [TUTORIAL]  # not started a second time


async def test_a_restored_realtime_session_comes_back_paused(tmp_path: Path) -> None:
    async with serving(state_dir=tmp_path / "a", mode=Mode.REALTIME) as service:
        async with attach(service, Role.AGENT) as agent:
            await agent.call(CallTool, tool="EmailClientApp__list_emails", args={})
        await crash_copy(tmp_path / "a", tmp_path / "b")
    async with (
        serving(state_dir=tmp_path / "b", mode=Mode.REALTIME) as service,
        attach(service, Role.OBSERVER) as observer,
    ):
        assert isinstance(observer.welcome, Welcome)
        assert observer.welcome.restored and observer.welcome.clock.state == "paused"


async def test_a_journal_that_does_not_read_back_is_reported_and_the_others_restore(
    tmp_path: Path,
) -> None:
    async with serving(state_dir=tmp_path / "a"):
        await crash_copy(tmp_path / "a", tmp_path / "b")
    (tmp_path / "b" / "sessions" / "broken.journal").write_bytes(b"not a journal")
    async with serving(state_dir=tmp_path / "b") as service:
        status, _, body = await http_get(service, "/health")
        health = json.loads(body)
        _, _, body = await http_get(service, f"/api/sessions?token={ADMIN}")
        listed = json.loads(body)
    assert status == 200 and health["status"] == "degraded"
    assert health["journal"]["refused_journals"] == 1
    assert list(listed["refused_journals"]) == ["broken"]
    assert [s["id"] for s in listed["sessions"]] == [TUTORIAL] and listed["sessions"][0]["restored"]


async def test_a_restored_sessions_tokens_are_checked_against_their_salted_hashes(
    tmp_path: Path,
) -> None:
    async with serving(state_dir=tmp_path) as service:
        session = service.registry.get(TUTORIAL)
        assert session is not None
        created = created_record(session, RegisteredScenario(TUTORIAL), "auto")
        minted = tokens(service)
    restored = Tokens("admin")
    restored.restore(TUTORIAL, created)
    assert restored.allows(minted[Role.AGENT], TUTORIAL, Role.AGENT)
    assert not restored.allows(minted[Role.AGENT], TUTORIAL, Role.CONTROLLER)
    assert not restored.allows(new_token(), TUTORIAL, Role.AGENT)
    assert not restored.allows(minted[Role.AGENT], "another", Role.AGENT)
    assert restored.identify(minted[Role.OBSERVER]) == (Role.OBSERVER, TUTORIAL)
