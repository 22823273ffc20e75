"""Sessions at run time: an admin creates them (registered id or inline JSON) and stops them."""

from __future__ import annotations

import pytest

from areasync.conformance.scenario_json import export_scenario_json
from areasync.conformance.scenarios import GAIA2_SHAPED_ID
from areasync.protocol import CreateSession, ErrorCode, Role, StopSession
from tests.service.support import attach, front_lacks, serving


async def test_create_session_from_a_registered_id_returns_its_id_url_and_tokens() -> None:
    async with serving() as service, attach(service, Role.ADMIN) as admin:
        created = await admin.call(CreateSession, scenario="scenario_validation_tutorial")
        sid = created["session_id"]
        async with attach(service, Role.AGENT, session=sid, token=created["tokens"]["agent"]) as a:
            assert a.welcome is not None and a.welcome.scenario_id == "scenario_validation_tutorial"
    assert sid == "scenario_validation_tutorial" and created["url"] == service.ws_url(sid)
    assert set(created["tokens"]) == {"agent", "user", "observer", "controller"}
    assert created["mode"] == "realtime"  # create_session's default


async def test_a_second_session_of_a_scenario_gets_a_fresh_id() -> None:
    async with serving() as service, attach(service, Role.ADMIN) as admin:
        created = await admin.call(CreateSession, scenario="scenario_tutorial", mode="manual")
    assert created["session_id"] == "scenario_tutorial-2"


async def test_create_session_from_inline_are_json() -> None:
    # A Gaia2-shaped scenario exported by ARE's own JsonScenarioExporter (ARE's importer cannot
    # rebuild the tutorials' MessagingApp, so they do not round-trip through JSON).
    text = export_scenario_json(GAIA2_SHAPED_ID)
    async with serving() as service, attach(service, Role.ADMIN) as admin:
        created = await admin.call(CreateSession, scenario_json=text, mode="fast", oracle=True)
        async with attach(service, Role.OBSERVER, session=created["session_id"], since=0) as peer:
            ended = await peer.until_ended()
    assert created["session_id"] == created["scenario_id"] == GAIA2_SHAPED_ID
    assert ended.validation is not None and ended.validation.success is True


@pytest.mark.parametrize(
    "fields",
    [
        {"scenario": "no_such_scenario"},
        {"scenario": "/etc/passwd.json"},
        {"scenario_json": "[1, 2, 3]"},
        {"scenario_json": '{"not": "a scenario"}'},
    ],
)
async def test_create_session_refuses_what_is_not_a_scenario(fields: dict[str, str]) -> None:
    async with serving() as service, attach(service, Role.ADMIN) as admin:
        error = await admin.fail(CreateSession, **fields)
        assert error.code == ErrorCode.INVALID_FIELD and len(service.registry.sessions) == 1


@front_lacks("max_sessions 1 cannot be split over two workers (refused at start)")
async def test_create_session_beyond_max_sessions_is_capacity() -> None:
    async with serving(max_sessions=1) as service, attach(service, Role.ADMIN) as admin:
        error = await admin.fail(CreateSession, scenario="scenario_tutorial")
    assert error.code == ErrorCode.CAPACITY and error.retryable


async def test_stop_session_of_an_unknown_id_is_session_not_found() -> None:
    async with serving() as service, attach(service, Role.ADMIN) as admin:
        error = await admin.fail(StopSession, session_id="nope")
    assert error.code == ErrorCode.SESSION_NOT_FOUND


async def test_ended_sessions_beyond_keep_ended_are_discarded() -> None:
    async with serving(keep_ended=0) as service, attach(service, Role.ADMIN) as admin:
        created = await admin.call(CreateSession, scenario="scenario_tutorial", mode="manual")
        await admin.call(StopSession, session_id=created["session_id"])
        assert created["session_id"] not in service.registry.sessions
        assert service.tokens.identify(created["tokens"]["agent"]) is None
