"""`get_state{at_seq}`: the apps' state where the session's stream had reached a seq, rebuilt as
a fork cut there would start, read and thrown away: what the dashboard compares the state now
with. It costs what a fork costs, so it is admitted as one; a bad request changes nothing."""

from __future__ import annotations

from typing import Any

from areasync.protocol import CallTool, ErrorCode, GetState, Role
from areasync.service.server import Service
from tests.service.support import TUTORIAL, attach, front_lacks, serving

SEND = {
    "tool": "EmailClientApp__send_email",
    "args": {"recipients": ["a@example.com"], "subject": "later", "content": "after the cut"},
}


def seq_now(service: Service) -> int:
    session = service.registry.get(TUTORIAL)
    assert session is not None
    return session.sim.log.seq


def sent(state: dict[str, Any]) -> list[str]:
    """The subjects in the email app's SENT folder."""
    return [mail["subject"] for mail in state["EmailClientApp"]["folders"]["SENT"]["emails"]]


async def test_the_state_at_a_seq_is_the_state_the_session_had_there() -> None:
    async with (
        serving() as service,
        attach(service, Role.AGENT) as agent,
        attach(service, Role.OBSERVER) as observer,
    ):
        before = await observer.call(GetState)
        cut = seq_now(service)
        await agent.call(CallTool, **SEND)
        now = await observer.call(GetState)
        then = await observer.call(GetState, at_seq=cut)
    assert "later" in sent(now) and "later" not in sent(then)
    # The same, but for where its rebuilt file system's copy lived while it was read.
    for state in (then, before):
        del state["SandboxLocalFileSystem"]["tmpdir"]
    assert then == before


async def test_an_observer_may_read_the_state_at_a_seq_of_only_the_apps_it_names() -> None:
    async with serving() as service, attach(service, Role.OBSERVER) as observer:
        then = await observer.call(GetState, apps=["EmailClientApp"], at_seq=seq_now(service))
    assert list(then) == ["EmailClientApp"]


async def test_reading_a_state_at_a_seq_leaves_no_session_behind() -> None:
    async with serving() as service, attach(service, Role.OBSERVER) as observer:
        await observer.call(GetState, at_seq=0)
        assert list(service.registry.sessions) == [TUTORIAL]
        assert service.registry._importing == 0


async def test_a_seq_past_the_end_is_refused_saying_where_the_end_is() -> None:
    async with serving() as service, attach(service, Role.OBSERVER) as observer:
        end = seq_now(service)
        error = await observer.fail(GetState, at_seq=end + 5)
    assert error.code == ErrorCode.INVALID_FIELD
    assert f"give a seq up to {end}" in error.message


async def test_an_unknown_app_at_a_seq_is_refused_naming_the_apps() -> None:
    async with serving() as service, attach(service, Role.OBSERVER) as observer:
        error = await observer.fail(GetState, apps=["NoSuchApp"], at_seq=0)
    assert error.code in (ErrorCode.INVALID_FIELD, ErrorCode.INVALID_ARGS)
    assert "unknown app(s) NoSuchApp" in error.message and "EmailClientApp" in error.message


@front_lacks("max_sessions 1 cannot be split over two workers (refused at start)")
async def test_a_state_at_a_seq_is_refused_when_the_server_has_no_room_for_a_fork() -> None:
    async with (
        serving(max_sessions=1) as service,
        attach(service, Role.OBSERVER) as observer,
    ):
        error = await observer.fail(GetState, at_seq=0)
        now = await observer.call(GetState, apps=["EmailClientApp"])  # the state now still is
    assert error.code == ErrorCode.CAPACITY and "max_sessions" in error.message
    assert list(now) == ["EmailClientApp"]
