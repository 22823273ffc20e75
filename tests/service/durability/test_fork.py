"""`fork_session`: a new session replayed from another's creation and records up to a cut.

Its stream up to the cut is the source's, frame for frame; after it, the fork goes its own way.
In memory (no --state-dir): the records are the live session's own. With a state dir, the
fork's journal is created with its records up to the cut, so its welcome is at the cut and every
item up to it is shown at once, whatever later syncs do.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from areasync.journal import JournalStore
from areasync.protocol import CallTool, ErrorCode, Role, Tick
from areasync.protocol.codec import Encoding, encode_server_frame
from areasync.protocol.frames import EventItem, ForkedFrom, ForkSession
from areasync.service.durability.restore import inputs_of
from areasync.service.server import Service
from tests.service.support import TUTORIAL, WAIT, attach, replace_sync, serving

INBOX = {"tool": "EmailClientApp__list_emails", "args": {"folder_name": "INBOX"}}


def stream(service: Service, session_id: str) -> list[bytes]:
    session = service.registry.get(session_id)
    assert session is not None
    return [encode_server_frame(item, Encoding.MSGPACK) for item in session.sim.log.items]


def agent_calls(service: Service, session_id: str) -> list[Any]:
    session = service.registry.get(session_id)
    assert session is not None
    return [
        item.event.args["folder_name"]
        for item in session.sim.log.items
        if isinstance(item, EventItem) and item.event.function == "list_emails"
    ]


async def test_a_fork_at_a_seq_repeats_the_stream_up_to_it_then_goes_its_own_way() -> None:
    async with (
        serving() as service,
        attach(service, Role.AGENT) as agent,
        attach(service, Role.CONTROLLER) as controller,
        attach(service, Role.ADMIN) as admin,
    ):
        await agent.call(CallTool, **INBOX)
        await controller.call(Tick, n=2)
        cut = len(stream(service, TUTORIAL))
        await agent.call(CallTool, tool=INBOX["tool"], args={"folder_name": "SENT"})
        created = await admin.call(ForkSession, session_id=TUTORIAL, at_seq=cut)
        fork = created["session_id"]
        assert fork != TUTORIAL and set(created["tokens"]) == {
            "agent",
            "user",
            "observer",
            "controller",
        }
        assert stream(service, fork) == stream(service, TUTORIAL)[:cut]
        async with attach(
            service, Role.AGENT, session=fork, token=created["tokens"]["agent"]
        ) as other:
            assert other.welcome.epoch != agent.welcome.epoch
            await other.call(CallTool, tool=INBOX["tool"], args={"folder_name": "DRAFT"})
        assert agent_calls(service, TUTORIAL)[1:] == ["SENT"]
        assert agent_calls(service, fork)[1:] == ["DRAFT"]


async def test_only_the_admin_may_fork_a_session() -> None:
    async with serving() as service, attach(service, Role.CONTROLLER) as controller:
        error = await controller.fail(ForkSession, session_id=TUTORIAL)
        assert error.code == ErrorCode.FORBIDDEN
        assert list(service.registry.sessions) == [TUTORIAL]


async def test_forking_an_unknown_session_says_so_and_changes_nothing() -> None:
    async with serving() as service, attach(service, Role.ADMIN) as admin:
        error = await admin.fail(ForkSession, session_id="no_such_session")
        assert error.code == ErrorCode.SESSION_NOT_FOUND and "/api/sessions" in error.message
        assert list(service.registry.sessions) == [TUTORIAL]


async def test_a_cut_past_the_end_says_where_the_end_is_and_changes_nothing() -> None:
    async with serving() as service, attach(service, Role.ADMIN) as admin:
        end = len(stream(service, TUTORIAL))
        error = await admin.fail(ForkSession, session_id=TUTORIAL, at_seq=end + 5)
        assert error.code == ErrorCode.INVALID_FIELD
        assert f"up to {end}" in error.message
        assert list(service.registry.sessions) == [TUTORIAL]


async def test_a_fork_on_a_state_dir_has_its_own_journal_of_its_records(tmp_path: Path) -> None:
    async with (
        serving(state_dir=tmp_path) as service,
        attach(service, Role.AGENT) as agent,
        attach(service, Role.ADMIN) as admin,
    ):
        await agent.call(CallTool, **INBOX)
        created = await admin.call(ForkSession, session_id=TUTORIAL)
        fork = service.registry.get(created["session_id"])
        assert fork is not None and fork.journal is not None
        # The reply waits for the fork's `Created` and the records it was replayed from.
        assert fork.journal.durable == fork.journal.appended
        journal = JournalStore(tmp_path).read(fork.id)
        assert journal.created is not None and journal.created.epoch == fork.epoch
        assert inputs_of(journal) == fork.sim.records


async def test_a_forks_welcome_names_its_source_and_cut_and_a_plain_sessions_names_none() -> None:
    async with (
        serving() as service,
        attach(service, Role.AGENT) as agent,
        attach(service, Role.ADMIN) as admin,
    ):
        await agent.call(CallTool, **INBOX)
        assert agent.welcome.forked_from is None
        cut = len(stream(service, TUTORIAL))
        created = await admin.call(ForkSession, session_id=TUTORIAL, at_seq=cut)
        async with attach(
            service, Role.AGENT, session=created["session_id"], token=created["tokens"]["agent"]
        ) as other:
            assert other.welcome.restored
            assert other.welcome.forked_from == ForkedFrom(session_id=TUTORIAL, seq=cut)


async def test_a_journaled_forks_welcome_and_stream_hold_its_whole_cut_with_later_syncs_held(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    armed, released = threading.Event(), threading.Event()
    replace_sync(monkeypatch, lambda fd: armed.is_set() and released.wait(WAIT))
    async with (
        serving(state_dir=tmp_path) as service,
        attach(service, Role.AGENT) as agent,
        attach(service, Role.ADMIN) as admin,
    ):
        await agent.call(CallTool, **INBOX)  # records at seqs below the cut
        cut = len(stream(service, TUTORIAL))
        armed.set()  # from here on, a journal's sync waits until the test ends
        try:
            created = await admin.call(ForkSession, session_id=TUTORIAL, at_seq=cut)
            fork, observer_token = created["session_id"], created["tokens"]["observer"]
            # A client resuming at the cut it forked at is welcomed there.
            async with attach(
                service, Role.OBSERVER, session=fork, token=observer_token, since=cut
            ) as resumed:
                assert resumed.welcome.seq == cut
                assert resumed.welcome.forked_from == ForkedFrom(session_id=TUTORIAL, seq=cut)
            # A client replaying it all gets every item up to the cut, as its source showed them.
            async with attach(
                service, Role.OBSERVER, session=fork, token=observer_token, since=0
            ) as observer:
                assert observer.welcome.seq == cut
                await observer.until_seq(cut)
                shown = [encode_server_frame(item, Encoding.MSGPACK) for item in observer.items]
                assert shown == stream(service, TUTORIAL)[:cut]
        finally:
            released.set()
