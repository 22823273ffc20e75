"""gaia2-cli's runner, its calls in its order (`runner.py`), against a session's own port."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio

from areasync.client import connect
from areasync.protocol.frames import Mode, Role
from areasync.service import Service
from areasync.service.adapters.gaia2cli.artifacts import sim_t
from tests.service.adapters.gaia2cli.harness import Harness
from tests.service.adapters.gaia2cli.runner import Runner, get
from tests.service.adapters.gaia2cli.support import finish, notified
from tests.service.support import ADMIN, TUTORIAL, config, http_get

# A range the tests' sessions take ports from (one held by another process is skipped).
PORTS = (43100, 43299)
UPSTREAM_STATUS_KEYS = {"status", "turn", "nb_turns", "num_events", "last_response", "judgment"}
UPSTREAM_LINE_KEYS = ["t", "app", "fn", "args", "w", "ret"]


@asynccontextmanager
async def served(**overrides: Any) -> AsyncIterator[Service]:
    """scenario_tutorial in fast mode (it waits for its agent), each session on a port."""
    fields: dict[str, Any] = {"gaia2_ports": PORTS, "mode": Mode.FAST}
    fields.update(overrides)
    async with Service(config(**fields), (TUTORIAL,)) as service:
        yield service


def own_url(service: Service, session_id: str = TUTORIAL) -> str:
    url = service.registry.sessions[session_id].links.gaia2_cli_url
    assert url is not None, f"session {session_id} has no gaia2-cli port of its own"
    return url


async def play_to_the_end(service: Service) -> None:
    """The tutorial's agent, over its socket: it takes the user's message, idles to the end,
    and leaves; the session is over before the runner's first call."""
    token = service.tokens.of(TUTORIAL)[Role.AGENT]
    async with connect(service.ws_url(TUTORIAL), role="agent", token=token) as agent:
        await finish(agent)
        await agent.wait_ended()
    with anyio.fail_after(30):
        await service.registry.sessions[TUTORIAL].done.wait()


async def test_each_session_is_served_at_the_bare_root_of_a_port_of_its_own() -> None:
    async with served() as service:
        url = own_url(service)
        status, body = await anyio.to_thread.run_sync(get, url, "/health")
    assert url.startswith("http://127.0.0.1:")
    assert status == 200 and json.loads(body)["session"] == TUTORIAL


async def test_create_session_and_the_session_list_give_each_session_its_own_port() -> None:
    async with served() as service:
        async with connect(service.ws_url(TUTORIAL), role="admin", token=ADMIN) as admin:
            created = await admin.create_session(scenario="scenario_tutorial", mode="manual")
        auth = {"Authorization": f"Bearer {ADMIN}"}
        listed = json.loads((await http_get(service, "/api/sessions", auth))[2])
        urls = {s["id"]: s.get("gaia2_cli_url") for s in listed["sessions"]}
        assert created.gaia2_cli_url is not None
        status, body = await anyio.to_thread.run_sync(get, created.gaia2_cli_url, "/status")
    assert urls[created.session_id] == created.gaia2_cli_url != urls[TUTORIAL]
    assert status == 200 and json.loads(body)["session"] == created.session_id


async def test_the_banner_shows_each_sessions_own_port() -> None:
    async with served() as service:
        assert f"gaia2-cli   {own_url(service)}" in service.banner()


async def test_a_session_ended_between_two_health_polls_is_seen_connected_and_judged() -> None:
    async with served() as service:
        await play_to_the_end(service)  # the agent only waited: the tutorial fails it
        run = await Runner(own_url(service)).run()
    assert run.health["connected"] is True
    assert run.statuses[-1]["status"] == "stopped"
    assert run.result()["success"] is False


async def test_the_runners_result_counts_the_sessions_events_from_events_jsonl() -> None:
    async with served() as service:
        await play_to_the_end(service)
        run = await Runner(own_url(service)).run()
        completed = [
            e for e in service.registry.sessions[TUTORIAL].sim.events() if e.exception is None
        ]
    actions = [e for e in completed if e.event_type in ("AGENT", "ENV", "USER")]
    assert run.result()["num_agent_events"] == len(actions) > 0


async def test_events_jsonl_lines_are_upstreams_entries_in_its_order() -> None:
    async with served() as service:
        await play_to_the_end(service)
        run = await Runner(own_url(service)).run()
    assert run.events and all(list(line)[:6] == UPSTREAM_LINE_KEYS for line in run.events)
    assert all(line["sim_t"] == sim_t(line["t"]) for line in run.events)


async def test_a_registered_scenarios_env_events_get_upstreams_env_ids() -> None:
    async with served() as service:
        await play_to_the_end(service)
        run = await Runner(own_url(service)).run()
        ids = {e.event_id for e in service.registry.sessions[TUTORIAL].sim.events()}
    env = [line for line in run.events if "event_id" in line]
    assert env and all(line["event_id"].startswith("Event-ENV-") for line in env)
    assert all(line["event_id"].replace("Event-", "", 1) in ids for line in env)


async def test_daemon_status_json_has_upstreams_fields_only() -> None:
    async with served() as service:
        await play_to_the_end(service)
        run = await Runner(own_url(service)).run()
    assert set(run.daemon_status) <= UPSTREAM_STATUS_KEYS
    assert run.daemon_status["status"] == "stopped"
    assert run.daemon_status["num_events"] == sum(
        not line.get("event_id", "").startswith("Event-ENV-") for line in run.events
    )


async def test_the_artifacts_are_written_beside_the_trace_when_the_session_ends(
    tmp_path: Path,
) -> None:
    async with served(trace_dir=tmp_path) as service:
        await play_to_the_end(service)
        run = await Runner(own_url(service)).run()
        trace = service.registry.sessions[TUTORIAL].trace_path
    assert trace is not None
    directory = trace.with_name(trace.stem + ".gaia2-cli")
    assert (directory / "events.jsonl").read_text() == run.events_raw
    assert json.loads((directory / "daemon_status.json").read_text()) == run.daemon_status


async def test_execute_action_is_refused_501_saying_areasync_fires_env_events_itself() -> None:
    async with served() as service:
        before = service.registry.sessions[TUTORIAL].sim.log.seq
        body = {"app": "EmailClientApp", "action": "send_email_to_user_only", "args": {}}
        status, answer = await Harness(own_url(service)).call("POST", "/execute_action", body)
        after = service.registry.sessions[TUTORIAL].sim.log.seq
    assert status == 501 and answer["ok"] is False
    assert "execute_action not configured" in answer["error"] and "/call_tool" in answer["error"]
    assert after == before


async def test_the_user_sends_the_agent_a_message_at_the_bare_port() -> None:
    async with served() as service:
        token = service.tokens.of(TUTORIAL)[Role.AGENT]
        async with connect(service.ws_url(TUTORIAL), role="agent", token=token) as agent:
            await Harness(own_url(service)).notify("hello from the runner")
            await agent.wait_for_notification(timeout=60)
        texts = notified(service)
    assert "hello from the runner" in texts


async def test_the_bare_port_may_not_call_the_agents_tools() -> None:
    async with served() as service:
        body = {"app": "AgentUserInterface", "action": "send_message_to_user", "args": {}}
        status, answer = await Harness(own_url(service)).call("POST", "/call_tool", body)
    assert status == 403 and "agent" in answer["error"]
