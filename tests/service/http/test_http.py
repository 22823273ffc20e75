"""Plain HTTP on the WebSocket port: health, sessions, schema, metrics, dashboard; tokens."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from areasync.conformance.scenario_json import export_scenario_json
from areasync.conformance.scenarios import GAIA2_SHAPED_ID
from areasync.protocol import CallTool, Jump, Mode, Role, Stop
from areasync.protocol.schema import render_schema
from areasync.service import ServiceError
from tests.service.support import (
    ADMIN,
    TUTORIAL,
    attach,
    http_get,
    in_process_only,
    json_body,
    serving,
    tokens,
)


async def test_health_needs_no_token() -> None:
    async with serving() as service:
        status, headers, body = await http_get(service, "/health")
    assert status == 200 and json_body(body)["status"] == "ok"
    assert headers["content-type"] == "application/json"


PROTECTED = ["/api/sessions", "/api/schema", "/metrics"]


@pytest.mark.parametrize("path", PROTECTED)
async def test_protected_paths_refuse_a_missing_token(path: str) -> None:
    async with serving() as service:
        status, headers, body = await http_get(service, path)
    assert status == 401 and "www-authenticate" in headers
    assert json_body(body)["error"]["code"] == "unauthorized"


@pytest.mark.parametrize("path", PROTECTED)
async def test_protected_paths_refuse_a_wrong_token(path: str) -> None:
    async with serving() as service:
        status, _, body = await http_get(service, f"{path}?token=wrong")
    assert status == 401 and "not valid" in json_body(body)["error"]["message"]


async def test_sessions_lists_every_session_for_the_admin_token() -> None:
    async with serving("scenario_tutorial", "scenario_validation_tutorial") as service:
        status, _, body = await http_get(service, f"/api/sessions?token={ADMIN}")
    listing = json_body(body)
    assert status == 200 and listing["access"] == {"role": "admin", "session_id": None}
    ids = [s["id"] for s in listing["sessions"]]
    assert ids == ["scenario_tutorial", "scenario_validation_tutorial"]
    first = listing["sessions"][0]
    assert (
        first["url"] == service.ws_url("scenario_tutorial") and first["clock"]["mode"] == "manual"
    )
    assert "tokens" not in first


async def test_sessions_shows_a_session_token_only_its_own_session() -> None:
    async with serving("scenario_tutorial", "scenario_validation_tutorial") as service:
        observer = tokens(service, "scenario_validation_tutorial")[Role.OBSERVER]
        _, _, body = await http_get(
            service, "/api/sessions", headers={"Authorization": f"Bearer {observer}"}
        )
    listing = json_body(body)
    assert [s["id"] for s in listing["sessions"]] == ["scenario_validation_tutorial"]
    assert listing["access"] == {"role": "observer", "session_id": "scenario_validation_tutorial"}


async def test_sessions_counts_connected_clients_by_role() -> None:
    async with serving() as service, attach(service, Role.AGENT), attach(service, Role.OBSERVER):
        _, _, body = await http_get(service, f"/api/sessions?token={ADMIN}")
    connections = json_body(body)["sessions"][0]["connections"]
    assert (connections["agent"], connections["observer"], connections["controller"]) == (1, 1, 0)


async def test_schema_is_the_published_protocol_schema() -> None:
    async with serving() as service:
        status, _, body = await http_get(service, f"/api/schema?token={ADMIN}")
    assert status == 200 and json.loads(body) == json.loads(render_schema())


async def test_metrics_refuse_a_session_token() -> None:
    async with serving() as service:
        observer = tokens(service, "scenario_tutorial")[Role.OBSERVER]
        status, _, body = await http_get(service, f"/metrics?token={observer}")
    error = json_body(body)["error"]
    assert status == 403 and error["code"] == "forbidden" and "admin token" in error["message"]


async def test_metrics_are_prometheus_text_with_the_service_counters() -> None:
    async with serving() as service, attach(service, Role.AGENT) as agent:
        await agent.call(CallTool, tool="SystemApp__get_current_time")
        status, headers, body = await http_get(service, f"/metrics?token={ADMIN}")
    text = body.decode()
    assert status == 200 and headers["content-type"].startswith("text/plain; version=0.0.4")
    samples = dict(
        line.rsplit(" ", 1) for line in text.splitlines() if line and not line.startswith("#")
    )
    assert samples['areasync_sessions{state="live"}'] == "1"
    assert samples['areasync_connections{role="agent"}'] == "1"
    assert samples["areasync_tool_call_seconds_count"] == "1"
    assert int(samples["areasync_frames_sent_total"]) >= 2
    assert samples["areasync_slow_consumer_disconnects_total"] == "0"


async def test_metrics_count_what_the_journals_made_durable(tmp_path: Path) -> None:
    async with serving(state_dir=tmp_path) as service, attach(service, Role.AGENT) as agent:
        for _ in range(3):
            await agent.call(CallTool, tool="SystemApp__get_current_time")
        _, _, body = await http_get(service, f"/metrics?token={ADMIN}")
    samples = {
        name: float(value)
        for name, value in (line.rsplit(" ", 1) for line in body.decode().splitlines())
        if name.startswith("areasync_journal_")
    }
    records = samples["areasync_journal_records_total"]
    assert records >= 3  # a reply waits for its call's record
    syncs, rounds = (
        samples["areasync_journal_syncs_total"],
        samples["areasync_journal_sync_rounds_total"],
    )
    assert 1 <= rounds <= syncs <= records
    assert samples["areasync_journal_wait_seconds_total"] > 0


async def test_metrics_count_the_events_among_the_stream_items() -> None:
    async with serving() as service, attach(service, Role.CONTROLLER) as controller:
        await controller.call(Jump, next_event=True)  # the tutorial's first event, at T+5 s
        _, _, body = await http_get(service, f"/metrics?token={ADMIN}")
        events = service.registry.sessions[TUTORIAL].hub.events
    samples = dict(
        line.rsplit(" ", 1) for line in body.decode().splitlines() if not line.startswith("#")
    )
    assert events >= 1 and samples["areasync_events_total"] == str(events)
    assert int(samples["areasync_stream_items_total"]) > events  # its notification, the clock


async def test_the_dashboard_page_is_served_without_a_token_and_holds_no_session_data() -> None:
    # The page is static code; it reads its token from its URL (#token=, which browsers never
    # send) and fetches the data with it. So a reload, with the token gone from the address
    # bar, still gets the page.
    async with serving() as service:
        status, headers, body = await http_get(service, "/")
    assert status == 200 and headers["content-type"].startswith("text/html")
    assert b"<html" in body.lower() or b"<!doctype html" in body.lower()
    assert TUTORIAL.encode() not in body


async def test_an_unknown_path_is_not_found() -> None:
    async with serving() as service:
        status, _, body = await http_get(service, f"/nothing/here?token={ADMIN}")
    assert status == 404 and "/api/sessions" in json_body(body)["error"]["message"]


async def test_the_dashboard_url_of_the_banner_carries_the_token_in_its_fragment() -> None:
    async with serving() as service:
        url = service.dashboard_url()
        assert url in service.banner()
        target, _, fragment = url.removeprefix(service.http_url).partition("#")
        status, _, _ = await http_get(service, target)  # what a browser sends: no fragment
    assert status == 200 and ADMIN not in target and fragment == f"token={ADMIN}"


async def test_http_requests_and_sockets_add_no_info_lines_to_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A dashboard polls /api/sessions every 2 s: at the default level (INFO) that must not be a
    # log line each time, nor must each WebSocket that comes and goes.
    with caplog.at_level(logging.INFO):
        async with serving() as service:
            caplog.clear()  # the start-up lines ("listening on") are wanted
            for _ in range(3):
                await http_get(
                    service, "/api/sessions", headers={"Authorization": f"Bearer {ADMIN}"}
                )
                await http_get(service, "/health")
            async with attach(service, Role.OBSERVER):
                pass
            served = [r for r in caplog.records if r.name.startswith("websockets")]
    # What stays at INFO is the server's own start and stop ("server listening on ...").
    noisy = [
        r.getMessage()
        for r in served
        if r.levelno >= logging.INFO and not r.getMessage().startswith("server ")
    ]
    assert noisy == []


async def test_http_requests_are_still_logged_at_debug(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="websockets.server"):
        async with serving() as service:
            await http_get(service, "/health")
    messages = [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG]
    assert "HTTP response sent (200 OK)" in messages


async def test_scenarios_lists_the_registered_ids_for_the_admin() -> None:
    async with serving() as service:
        status, _, body = await http_get(service, f"/api/scenarios?token={ADMIN}")
    listing = json_body(body)
    assert status == 200 and TUTORIAL in listing["scenarios"]
    assert listing["max_scenario_bytes"] == service.config.max_scenario_bytes


@pytest.mark.parametrize(
    "path",
    ["/api/scenarios", f"/api/sessions/{TUTORIAL}/source", f"/api/sessions/{TUTORIAL}/agent"],
)
async def test_admin_only_paths_refuse_a_session_token_saying_which_token(path: str) -> None:
    async with serving() as service:
        controller = tokens(service)[Role.CONTROLLER]
        status, _, body = await http_get(service, f"{path}?token={controller}")
    assert status == 403 and "needs the admin token" in json_body(body)["error"]["message"]


async def test_source_of_a_registered_scenario_session_is_its_id_and_options() -> None:
    async with serving() as service:
        status, _, body = await http_get(service, f"/api/sessions/{TUTORIAL}/source?token={ADMIN}")
    assert status == 200
    assert json_body(body) == {
        "session_id": TUTORIAL,
        "scenario": TUTORIAL,
        "mode": "manual",
        "speed": 1.0,
        "oracle": False,
    }


async def test_source_of_a_json_session_is_its_json_text() -> None:
    text = export_scenario_json(GAIA2_SHAPED_ID)
    async with serving(text) as service:
        path = f"/api/sessions/{GAIA2_SHAPED_ID}/source?token={ADMIN}"
        status, _, body = await http_get(service, path)
    assert status == 200 and json_body(body)["scenario_json"] == text


@in_process_only("a start-up refusal comes as the service's task group's exception group")
async def test_a_json_file_above_the_limit_is_refused_at_start_up_naming_the_limit(
    tmp_path: Path,
) -> None:
    # The operator's --scenario file is held to max_scenario_bytes as it is read (so a
    # session's kept source never lacks for size).
    scenario = tmp_path / "big.json"
    scenario.write_text(export_scenario_json(GAIA2_SHAPED_ID))
    limit = scenario.stat().st_size - 1
    with pytest.RaisesGroup(pytest.RaisesExc(ServiceError, match=r"\(max_scenario_bytes\)")):
        async with serving(scenario, max_scenario_bytes=limit):
            pass


async def test_source_of_an_unknown_session_is_not_found() -> None:
    async with serving() as service:
        status, _, body = await http_get(service, f"/api/sessions/nope/source?token={ADMIN}")
    assert status == 404 and json_body(body)["error"]["code"] == "session_not_found"


async def test_agent_of_a_session_is_its_agent_token_and_url_for_the_admin() -> None:
    async with serving() as service:
        status, _, body = await http_get(service, f"/api/sessions/{TUTORIAL}/agent?token={ADMIN}")
        expected = tokens(service)[Role.AGENT]
    assert status == 200
    assert json_body(body) == {
        "session_id": TUTORIAL,
        "url": service.ws_url(TUTORIAL),
        "token": expected,
    }


async def test_agent_of_an_unknown_session_is_not_found() -> None:
    async with serving() as service:
        status, _, body = await http_get(service, f"/api/sessions/nope/agent?token={ADMIN}")
    assert status == 404 and json_body(body)["error"]["code"] == "session_not_found"


async def test_the_listing_says_when_a_session_has_nothing_scheduled() -> None:
    async with serving() as service:
        _, _, body = await http_get(service, f"/api/sessions?token={ADMIN}")
        [listed] = json_body(body)["sessions"]
        # scenario_tutorial's first event is due 5 s after its start.
        assert listed["next_due"] == listed["clock"]["start_time"] + 5
        assert listed["end_reason"] is None
        async with attach(service, role=Role.CONTROLLER) as controller:
            await controller.call(Stop)
        _, _, body = await http_get(service, f"/api/sessions?token={ADMIN}")
    [ended] = json_body(body)["sessions"]
    assert ended["next_due"] is None
    assert ended["end_reason"] == "stopped by a controller"


async def test_the_listing_counts_the_agents_holding_a_fast_clock_on_their_turn() -> None:
    async with serving(mode=Mode.FAST) as service:

        async def busy() -> int:
            _, _, body = await http_get(service, f"/api/sessions?token={ADMIN}")
            [listed] = json_body(body)["sessions"]
            return int(listed["agents_busy"])

        assert await busy() == 0  # held for an agent, which is no agent's turn
        async with attach(service, role=Role.AGENT):
            assert await busy() == 1  # its turn from its hello on, until it waits
            async with attach(service, role=Role.CONTROLLER) as controller:
                await controller.call(Stop)
            assert await busy() == 0  # an ended session waits for no one
