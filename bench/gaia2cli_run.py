"""A gaia2-cli-style run, its wall time: areasync's adapter against upstream's design.

    python bench/gaia2cli_run.py                  # prints one JSON document; ~6 min
    python bench/gaia2cli_run.py --event-at 30    # the ENV event 30 s in: ~1 min

The scenario: Gaia2 JSON (`tiny_time_wait`'s shape, `areasync/gaia2/dataset.py`): the user asks
the agent to wait for Bob's email, which the environment sends `--event-at` simulated seconds
after the task, then answer it and say so. The agent does what the oracle does: it waits for a
notification, emails Bob back, tells the user. The runner is gaia2-cli's: `/health` until
connected, `/status` every 2 s until terminal, then the artifacts
(`tests/service/adapters/gaia2cli/runner.py` has the same sequence). `wall_s` is from the session's
creation to the runner holding its result; `session_ended_s` to the session's end (the runner's 2 s
poll adds up to 2 s after it).

- `areasync`: the session in fast mode at the root of its own port (`--gaia2-ports`); the agent
  speaks only HTTP (`POST /call_tool` with the agent's token: the wait is
  `SystemApp__wait_for_notification`, which moves the virtual clock to Bob's email), then
  `POST /idle`; the session ends when its simulated time is up, at once.
- `upstream design`: the same scenario on the same server with upstream's timing. gaia2-cli's
  daemon moves simulated time by `poll_interval x time_increment` per poll (1 s per 1 s by
  default: the wall's pace), learns of the agent's actions by reading `events.jsonl` once a
  second, and ends the run at the first poll that finds the last turn's message; its agent
  learns of notifications from the daemon's writes. Here: the session runs in realtime mode at
  speed 1, the agent polls `/notifications` once a second instead of waiting, and a daemon
  polls `/events.jsonl` once a second and stops the session (`stop_session`) when it finds the
  agent's message to the user. The judging is areasync's in both (no model: ARE's hard checks).

Both ways share one process and event loop with the server, and the runner's 2 s poll; the
difference is the clock's pace and the file polls.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from areasync.client import connect
from areasync.gaia2.dataset import DONE_REPLY, REPLY, SPECS, TIME_TURN, scenario_json
from areasync.protocol.frames import Mode, Role
from areasync.service import Service, ServiceConfig
from bench.common import log

ADMIN = "bench-admin"
RUNNER_POLL_S = 2.0  # gaia2-cli's runner
FILE_POLL_S = 1.0  # gaia2-cli's daemon, and its agent's notifications
TERMINAL = ("complete", "stopped", "error")


def _http(url: str, body: dict[str, Any] | None = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method="GET" if data is None else "POST")
    request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=3600) as response:
        text = response.read()
        kind = response.headers.get("Content-Type", "")
    return json.loads(text) if kind.startswith("application/json") else text.decode()


async def http(url: str, body: dict[str, Any] | None = None) -> Any:
    return await anyio.to_thread.run_sync(_http, url, body)


def scenario(event_at: float) -> str:
    spec = SPECS["tiny_time_wait"]
    turn = dataclasses.replace(TIME_TURN, env_delay=event_at)
    return scenario_json(dataclasses.replace(spec, scenario_id="bench_gaia2cli_run", turns=(turn,)))


async def call(agent: str, action: dict[str, Any]) -> None:
    app, _, function = action["action"].partition("__")
    body = {"app": app, "action": function, "args": action["action_input"]}
    answer = await http(agent + "/call_tool", body)
    assert answer["ok"], answer


async def agent_areasync(agent: str) -> None:
    await call(
        agent, {"action": "SystemApp__wait_for_notification", "action_input": {"timeout": 3600}}
    )  # the task
    await call(
        agent, {"action": "SystemApp__wait_for_notification", "action_input": {"timeout": 3600}}
    )  # Bob's email
    await call(agent, REPLY)
    await call(agent, DONE_REPLY)
    await http(agent + "/idle", {})


def _told(wanted: int, answer: dict[str, Any]) -> bool:
    return bool(answer["lastSeq"] >= wanted)


async def agent_upstream(agent: str) -> None:
    """Learns of notifications by polling once a second, as from the daemon's file."""
    for wanted in (1, 2):  # the task, then Bob's email
        await poll(agent + "/notifications", functools.partial(_told, wanted), FILE_POLL_S)
    await call(agent, REPLY)
    await call(agent, DONE_REPLY)


async def daemon_upstream(service: Service, bare: str, session_id: str) -> None:
    """Reads events.jsonl once a second; ends the run at the agent's message to the user."""

    def told_user(text: str) -> bool:
        return any(json.loads(line)["fn"] == "send_message_to_user" for line in text.splitlines())

    await poll(bare + "/events.jsonl", told_user, FILE_POLL_S)
    async with connect(service.ws_url(session_id), role="admin", token=ADMIN) as admin:
        await admin.stop_session(session_id)


async def poll(url: str, done: Callable[[Any], bool], interval: float) -> Any:
    """GET `url` every `interval` wall seconds until `done` says so (the polls measured)."""
    while True:
        answer = await http(url)
        if done(answer):
            return answer
        await anyio.sleep(interval)


async def runner(bare: str) -> dict[str, Any]:
    await poll(bare + "/health", lambda health: health["connected"], RUNNER_POLL_S)
    status = await poll(bare + "/status", lambda s: s["status"] in TERMINAL, RUNNER_POLL_S)
    await http(bare + "/events.jsonl")
    await http(bare + "/daemon_status.json")
    return status


async def one_run(way: str, event_at: float, ports: tuple[int, int]) -> dict[str, Any]:
    upstream = way == "upstream"
    mode = Mode.REALTIME if upstream else Mode.FAST
    config = ServiceConfig(port=0, gaia2_port=0, gaia2_ports=ports, admin_token=ADMIN, mode=mode)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench_gaia2cli_run.json"
        path.write_text(scenario(event_at))
        # The tutorial is the admin's way in (a connection names a session).
        async with Service(config, ["scenario_tutorial"]) as service:
            started = time.perf_counter()
            way_in = service.ws_url("scenario_tutorial")
            async with connect(way_in, role="admin", token=ADMIN) as admin:
                created = await admin.create_session(scenario_json=path.read_text(), mode=mode)
            sid = created.session_id
            assert created.gaia2_cli_url is not None
            bare = created.gaia2_cli_url
            agent = service.gaia2.url(created.tokens[Role.AGENT.value])
            ended: list[float] = []

            async def watch() -> None:
                await service.registry.sessions[sid].done.wait()
                ended.append(time.perf_counter() - started)

            async with anyio.create_task_group() as tg:
                tg.start_soon(watch)
                if upstream:
                    tg.start_soon(agent_upstream, agent)
                    tg.start_soon(daemon_upstream, service, bare, sid)
                else:
                    tg.start_soon(agent_areasync, agent)
                status = await runner(bare)
            wall = time.perf_counter() - started
            sim = service.registry.sessions[sid].sim.clock_state(peek=True)
    return {
        "wall_s": round(wall, 2),
        "session_ended_s": round(ended[0], 2),
        "status": status["status"],
        "success": (status.get("judgment") or {}).get("success"),
        "sim_elapsed_s": round(sim.time - sim.start_time, 1),
    }


async def main_async(event_at: float, ports: tuple[int, int]) -> dict[str, Any]:
    results = {}
    for way in ("areasync", "upstream"):
        log(f"{way}: running (event {event_at:g} s in)")
        results[way] = await one_run(way, event_at, ports)
        log(f"{way}: {results[way]}")
    return {"benchmark": "gaia2cli_run", "event_at_s": event_at, "results": results}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--event-at", type=float, default=300.0)
    parser.add_argument("--ports", default="43900-43999", help="the sessions' ports (FIRST-LAST)")
    args = parser.parse_args()
    first, _, last = args.ports.partition("-")
    print(json.dumps(anyio.run(main_async, args.event_at, (int(first), int(last))), indent=2))


if __name__ == "__main__":
    main()
