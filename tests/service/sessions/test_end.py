"""End of a session: `ended` with ARE's validation to everyone, and an ARE trace on disk."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
from are.simulation.data_handler.importer import JsonScenarioImporter

from areasync.protocol import CloseCode, CreateSession, EventItem, Role, StopSession
from areasync.protocol.records import Validation
from tests.service.support import attach, json_files, serving

VALIDATION_TUTORIAL = "scenario_validation_tutorial"  # every app it uses re-imports in ARE


async def test_an_ending_session_sends_ended_with_validation_and_writes_an_are_trace(
    tmp_path: Path,
) -> None:
    async with (
        serving(VALIDATION_TUTORIAL, mode="fast", oracle=True, trace_dir=tmp_path) as service,
        attach(service, Role.OBSERVER, session=VALIDATION_TUTORIAL, since=0) as peer,
    ):
        ended = await peer.until_ended()
        session = service.registry.get(VALIDATION_TUTORIAL)
        assert session is not None
        await session.done.wait()
        trace = session.trace_path
    assert ended.validation == Validation(success=True)
    assert ended.reason is None  # it ran to its end
    assert trace is not None and trace.name in json_files(tmp_path)
    text = await anyio.Path(trace).read_text()
    scenario, completed, _ = JsonScenarioImporter().import_from_json(text)
    assert scenario.scenario_id == VALIDATION_TUTORIAL
    logged = [item.event for item in peer.items if isinstance(item, EventItem)]
    assert sorted(e.event_id for e in completed) == sorted(e.event_id for e in logged)


async def test_stop_session_ends_it_and_returns_its_trace(tmp_path: Path) -> None:
    async with serving(trace_dir=tmp_path) as service, attach(service, Role.ADMIN) as admin:
        result = await admin.call(StopSession, session_id="scenario_tutorial")
        ended = await admin.until_ended()
    assert result["state"] == "stopped" and ended.state == "stopped"
    assert ended.reason is not None and "stop" in ended.reason
    text = await anyio.Path(result["trace"]).read_text()
    scenario, _, _ = JsonScenarioImporter().import_from_json(
        text,
        load_completed_events=False,  # MessagingApp is not in are.simulation.apps
    )
    assert scenario.scenario_id == "scenario_tutorial"


async def test_shutdown_ends_sessions_writes_traces_and_closes_with_going_away(
    tmp_path: Path,
) -> None:
    async with serving(trace_dir=tmp_path) as service, attach(service, Role.OBSERVER) as peer:
        service.shutdown()
        ended = await peer.until_ended()
        code, _ = await peer.closed()
        with anyio.fail_after(10):
            session = service.registry.get("scenario_tutorial")
            assert session is not None
            await session.done.wait()
    assert ended.state == "stopped" and code == CloseCode.GOING_AWAY
    assert session.trace_path is not None
    assert json_files(tmp_path) == [session.trace_path.name]


async def test_the_trace_of_a_gaia2_benchmark_session_reimports_into_are(tmp_path: Path) -> None:
    from tests.client.test_client_oracle_agent import gaia2_json

    async with serving(trace_dir=tmp_path) as service, attach(service, Role.ADMIN) as admin:
        created = await admin.call(
            CreateSession, scenario_json=gaia2_json(), mode="manual", import_mode="benchmark"
        )
        assert created["import_mode"] == "benchmark"
        result = await admin.call(StopSession, session_id=created["session_id"])
    text = await anyio.Path(result["trace"]).read_text()
    importer = JsonScenarioImporter()
    plain, _, _ = importer.import_from_json(text, load_completed_events=False)
    benchmark, _, _ = importer.import_from_json_to_benchmark(text, load_completed_events=False)
    assert (
        plain.scenario_id
        == benchmark.scenario_id
        == json.loads(gaia2_json())["metadata"]["definition"]["scenario_id"]
    )
