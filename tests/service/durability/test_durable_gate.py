"""What is not durable is not shown, and a journal that cannot be written fails only its session.

The journal's sync (`areasync.journal.writer.sync_file`, looked up at each call) is replaced by
one that waits on a threading event, or fails for one session's file: the order of things is
forced by events, never by timings.
"""

from __future__ import annotations

import errno
import json
import threading
from pathlib import Path

import anyio
import pytest

from areasync.journal import JournalStore
from areasync.protocol import CallTool, CloseCode, EventItem, Hello, Result, Role
from areasync.service.durability.restore import inputs_of
from areasync.simulation import input_records as kinds
from tests.service.support import ADMIN, TUTORIAL, attach, http_get, raw, replace_sync, serving

OTHER = f"{TUTORIAL}-2"  # a second session of the same scenario
TOOL = "SystemApp__get_current_time"


def last_call(state_dir: Path, session_id: str) -> kinds.CallTool:
    records = inputs_of(JournalStore(state_dir).read(session_id))
    return [r for r in records if isinstance(r, kinds.CallTool)][-1]


async def test_no_subscriber_gets_a_tool_calls_agent_event_before_the_call_is_durable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    armed, syncing, release = threading.Event(), threading.Event(), threading.Event()

    def hold(fd: int) -> None:
        if armed.is_set():
            syncing.set()
            release.wait(10)

    replace_sync(monkeypatch, hold)
    async with (
        serving(state_dir=tmp_path) as service,
        attach(service, Role.AGENT) as agent,
        attach(service, Role.OBSERVER) as observer,
    ):
        session = service.registry.get(TUTORIAL)
        assert session is not None
        await agent.call(CallTool, tool=TOOL, args={})  # everything so far is durable
        armed.set()
        await agent.send(CallTool(id=agent.next_id(), tool=TOOL, args={}))
        await anyio.to_thread.run_sync(syncing.wait, 10)
        # The call has run (its AGENT event is in the log) and its record is being synced.
        event = session.sim.log.items[-1]
        assert isinstance(event, EventItem) and event.event.event_type == "AGENT"
        assert event.event.function == "get_current_time"
        assert session.hub.seq < event.seq
        assert all(client.position < event.seq for client in session.connections)
        assert not any(getattr(f, "seq", 0) >= event.seq for f in observer.frames)
        release.set()
        seen = await observer.until(lambda f: isinstance(f, EventItem) and f.seq == event.seq)
        # When it arrives, the call that caused it is on disk.
        assert seen is not None
        assert last_call(tmp_path, TUTORIAL).seq == event.seq - 1


async def test_a_failing_disk_ends_only_its_session_and_its_clients_are_told_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    failing = {-2}

    def fail(fd: int) -> None:
        if fd in failing:
            raise OSError(errno.EIO, "Input/output error")

    replace_sync(monkeypatch, fail)
    async with (
        serving(TUTORIAL, TUTORIAL, state_dir=tmp_path) as service,
        attach(service, Role.AGENT) as agent,
        attach(service, Role.AGENT, session=OTHER) as other,
    ):
        session = service.registry.get(TUTORIAL)
        assert session is not None and session.journal is not None
        assert session.journal.writer is not None
        failing.add(session.journal.writer.fileno())
        await agent.send(CallTool(id=agent.next_id(), tool=TOOL, args={}))
        code, reason = await agent.closed()
        assert code == CloseCode.INTERNAL_ERROR
        assert "journal failed" in reason and "session has ended" in reason
        assert not any(isinstance(f, Result) for f in agent.frames[1:])
        assert session.ended and session.sim.state == "failed"
        assert session.journal_error is not None and "Input/output error" in session.journal_error
        status, _, body = await http_get(service, "/health")
        assert status == 200
        assert json.loads(body) == {
            "status": "degraded",
            "protocol": "areasync/1",
            "journal": {"failed_sessions": 1, "refused_journals": 0},
        }
        # A new client of the failed session is closed at once, saying why.
        async with raw(service) as late:
            await late.send(Hello(id=0, role=Role.OBSERVER, token=ADMIN))
            code, reason = await late.closed()
            assert code == CloseCode.INTERNAL_ERROR and "journal failed" in reason
        # The other session goes on, durably.
        await other.call(CallTool, tool=TOOL, args={})
        assert last_call(tmp_path, OTHER).tool == TOOL
