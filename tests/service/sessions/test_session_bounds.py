"""What one session may take over its life (`service/sessions/budget.py`), over real sockets.

A tool call or user message above `max_call_bytes` is `too_large`; a request that would take
its session past its bytes of input, of journal or of memory is `session_limit_exceeded`, naming
the bound, its value and the option that raises it: nothing runs, the connection and the session
go on, and `stop` is always accepted. A session that gets past a bound on its own (a small call
with a large result) is stopped, its `ended.reason` naming the bound.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from areasync.protocol import CallTool, ErrorCode, Ping, Role, SendUserMessage, Stop
from areasync.protocol.frames import Pong
from areasync.service.server import Service
from areasync.service.sessions.session import Session
from tests.service.support import TUTORIAL, attach, http_get, json_body, serving
from tests.waiting import eventually

INBOX = {"tool": "EmailClientApp__list_emails", "args": {"folder_name": "INBOX"}}
SEED = 7


def tutorial(service: Service) -> Session:
    session = service.registry.get(TUTORIAL)
    assert session is not None
    return session


def send_email(content: str) -> dict[str, Any]:
    return {
        "tool": "EmailClientApp__send_email",
        "args": {"recipients": ["a@b.com"], "subject": "s", "content": content},
    }


def used(session: Session, field: str) -> int:
    return session.budget.describe()[field].used


async def test_a_tool_call_above_max_call_bytes_is_too_large_and_the_connection_stays() -> None:
    async with serving(max_call_bytes=1000) as service, attach(service, Role.AGENT) as agent:
        records = len(tutorial(service).sim.records)
        error = await agent.fail(CallTool, **send_email("x" * 1500))
        assert isinstance(await agent.request(Ping), Pong)
        assert len(tutorial(service).sim.records) == records
    assert error.code == ErrorCode.TOO_LARGE
    assert "1,000-byte limit" in error.message and "--max-call-bytes" in error.message


async def test_a_user_message_above_max_call_bytes_is_too_large() -> None:
    async with serving(max_call_bytes=1000) as service, attach(service, Role.USER) as user:
        error = await user.fail(SendUserMessage, content="x" * 1500)
        assert tutorial(service).sim.inputs == []
    assert error.code == ErrorCode.TOO_LARGE and "max_call_bytes" in error.message


async def test_input_past_the_sessions_bound_is_refused_naming_it_and_changes_nothing() -> None:
    bound = 3000
    async with (
        serving(max_session_input_bytes=bound) as service,
        attach(service, Role.AGENT) as agent,
    ):
        session = tutorial(service)
        for _ in range(3):
            await agent.call(CallTool, **send_email("x" * 800))
        before = (len(session.sim.records), session.sim.log.seq)
        error = await agent.fail(CallTool, **send_email("x" * 800))
        assert (len(session.sim.records), session.sim.log.seq) == before
        taken = used(session, "max_session_input_bytes")
        await agent.call(CallTool, **INBOX)  # what still fits goes through
    assert error.code == ErrorCode.SESSION_LIMIT_EXCEEDED and not error.retryable
    assert f"{bound:,} bytes of input" in error.message
    assert "max_session_input_bytes" in error.message
    assert "--max-session-input-bytes" in error.message
    assert taken <= bound


async def test_stop_is_accepted_past_every_bound() -> None:
    async with (
        serving(max_session_input_bytes=100) as service,
        attach(service, Role.AGENT) as agent,
        attach(service, Role.CONTROLLER) as controller,
    ):
        refused = await agent.fail(CallTool, **send_email("x" * 200))
        await controller.call(Stop)
        assert tutorial(service).ended
    assert refused.code == ErrorCode.SESSION_LIMIT_EXCEEDED


async def test_a_journal_past_its_bound_is_refused_more_input_and_stays_within_it(
    tmp_path: Path,
) -> None:
    bound = 4000
    async with (
        serving(state_dir=tmp_path, max_session_journal_bytes=bound) as service,
        attach(service, Role.AGENT) as agent,
    ):
        session = tutorial(service)
        error = None
        for _ in range(10):
            reply = await agent.request(CallTool, **send_email("x" * 600))
            if not hasattr(reply, "value"):
                error = reply
                break
        assert session.journal is not None
        journal = session.journal
        await eventually(lambda: journal.durable >= journal.appended)
        on_disk = (tmp_path / "sessions" / f"{TUTORIAL}.journal").stat().st_size
    assert error is not None and error.code == ErrorCode.SESSION_LIMIT_EXCEEDED
    assert "max_session_journal_bytes" in error.message
    assert "--max-session-journal-bytes" in error.message
    assert on_disk <= bound + 200  # the journal's preamble is not counted


async def held_once_an_agent_attached() -> int:
    """What the tutorial weighs in memory once its agent attached (the same every time with
    the same seed): where a memory bound is set from."""
    async with serving(seed=SEED) as service, attach(service, Role.AGENT):
        return used(tutorial(service), "max_session_memory_bytes")


async def test_a_call_whose_records_would_pass_the_memory_bound_is_refused() -> None:
    held = await held_once_an_agent_attached()
    async with (
        serving(seed=SEED, max_session_memory_bytes=held + 1000) as service,
        attach(service, Role.AGENT) as agent,
    ):
        error = await agent.fail(CallTool, **send_email("x" * 600))
        assert tutorial(service).sim.inputs == []
    assert error.code == ErrorCode.SESSION_LIMIT_EXCEEDED
    assert "max_session_memory_bytes" in error.message


async def test_a_session_past_its_memory_bound_on_its_own_is_stopped_naming_it() -> None:
    held = await held_once_an_agent_attached()
    async with (
        serving(seed=SEED, max_session_memory_bytes=held + 400) as service,
        attach(service, Role.AGENT) as agent,
        attach(service, Role.OBSERVER) as observer,
    ):
        # Its frame fits in what is left; the event ARE logs for it (the call, its result,
        # ids and times) does not.
        await agent.call(CallTool, **INBOX)
        ended = await observer.until_ended()
        assert used(tutorial(service), "max_session_memory_bytes") > held + 400
    assert ended.state == "stopped" and ended.reason is not None
    assert "max_session_memory_bytes" in ended.reason
    assert "--max-session-memory-bytes" in ended.reason


async def test_calls_within_the_bounds_never_wake_the_sessions_watch() -> None:
    # The bounds are checked after each stretch that logged a record, by a callback; the task
    # that stops a session past one (`Session._keep_within_bounds`) is woken only then. Each
    # time it wakes it waits again on a new event: the same event after the calls means it
    # was never woken.
    async with serving(seed=SEED) as service, attach(service, Role.AGENT) as agent:
        await agent.call(CallTool, **INBOX)
        budget = tutorial(service).budget
        waited_on = budget.changed
        for _ in range(10):
            await agent.call(CallTool, **INBOX)
        assert len(tutorial(service).sim.inputs) == 11
        assert budget.changed is waited_on and not waited_on.is_set()


async def test_the_session_list_shows_each_bound_and_what_is_used_of_it(tmp_path: Path) -> None:
    async with serving(state_dir=tmp_path) as service, attach(service, Role.AGENT) as agent:
        await agent.call(CallTool, **INBOX)
        status, _, body = await http_get(
            service, "/api/sessions", {"Authorization": "Bearer test-admin-token"}
        )
    (listed,) = json_body(body)["sessions"]
    bounds = listed["bounds"]
    assert status == 200
    assert set(bounds) == {
        "max_session_input_bytes",
        "max_session_journal_bytes",
        "max_session_memory_bytes",
    }
    assert all(0 < b["used"] <= b["limit"] for b in bounds.values())
