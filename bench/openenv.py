"""OpenEnv benchmark: a step's round trip and episodes per second, side by side in one run.

    python bench/openenv.py            # one JSON document on stdout
    python bench/openenv.py --quick    # smaller counts, for a smoke run

Three servers, each driven by OpenEnv's real client (`GenericEnvClient` over `/ws`) or
areasync's own, every client in a separate process (`python bench/openenv.py client SPEC`):

- `areasync_openenv`: areasync's `/openenv/<token>/ws` (manual mode, a fresh session per
  connection);
- `areasync_native`: the same server's own protocol (`areasync.client`, msgpack; `tick` as a
  controller control);
- `threaded_openenv`: an OpenEnv-style server built the way the ARE environment planned for
  OpenEnv would be: ARE's own threaded `Environment` started with `run(wait_for_end=False)` and
  paused, each tool call run in a worker thread (as OpenEnv's server runs a synchronous
  environment), and time moved per tick by resume, add offset, tick, pause.

Measured: a step's round trip (`SystemApp__get_current_time`), without and with one tick after
it; episodes per second for reset (a new scenario_tutorial episode) + 10 steps that each call
the tool and tick once.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `bench` and `areasync` importable
    # ...and not this file as `openenv`: the name is OpenEnv's package.
    _here = Path(__file__).resolve().parent
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _here]
    sys.path.insert(0, str(_here.parent))

from bench.common import (
    client_process,
    load_average,
    log,
    main_client,
    print_report,
    round_trips,
)

SCRIPT = str(Path(__file__).resolve())
TOKEN = "bench-admin"
SCENARIO = "scenario_tutorial"
TOOL = ("SystemApp", "get_current_time")
STEPS_PER_EPISODE = 10


summary = round_trips


# -- clients (each in a process of its own) ---------------------------------------------------


def _openenv_client() -> Any:
    from tests.service.adapters.openenv.client import GenericEnvClient

    return GenericEnvClient


def _call(advance: bool) -> dict[str, Any]:
    app, tool = TOOL
    return {"action_type": "call_tool", "app_name": app, "tool_name": tool, "advance_time": advance}


async def openenv_rtt(base: str, calls: int, ticking: bool) -> dict[str, Any]:
    async with _openenv_client()(base_url=base) as env:
        await env.reset(scenario=SCENARIO, mode="manual")
        times = []
        for i in range(calls + calls // 10):
            started = time.perf_counter()
            result = await env.step(_call(ticking))
            if i >= calls // 10:
                times.append(time.perf_counter() - started)
            if result.done:  # the scenario's duration is over: a new episode, not timed
                await env.reset(scenario=SCENARIO, mode="manual")
        return summary(times)


async def openenv_episodes(base: str, episodes: int) -> dict[str, Any]:
    async with _openenv_client()(base_url=base) as env:
        started = time.perf_counter()
        for _ in range(episodes):
            await env.reset(scenario=SCENARIO, mode="manual")
            for _ in range(STEPS_PER_EPISODE):
                await env.step(_call(True))
        elapsed = time.perf_counter() - started
    return {
        "episodes": episodes,
        "seconds": round(elapsed, 3),
        "per_s": round(episodes / elapsed, 2),
    }


async def native_rtt(url: str, token: str, calls: int, ticking: bool) -> dict[str, Any]:
    from areasync.client import connect

    name = "__".join(TOOL)
    times: list[float] = []
    i = 0
    while i < calls + calls // 10:
        async with connect(url, role="admin", token=token, encoding="msgpack") as client:
            while i < calls + calls // 10:
                started = time.perf_counter()
                await client.call_tool(name, {})
                clock = await client.tick(1) if ticking else None
                if i >= calls // 10:
                    times.append(time.perf_counter() - started)
                i += 1
                if clock is not None and clock.state != "running":
                    # The scenario's duration is over: a new session, not timed.
                    url = (await client.create_session(SCENARIO, mode="manual")).url
                    break
    return summary(times)


async def run_spec(spec: dict[str, Any]) -> Any:
    kind = spec["kind"]
    if kind == "openenv_rtt":
        return await openenv_rtt(spec["url"], spec["calls"], spec["ticking"])
    if kind == "openenv_episodes":
        return await openenv_episodes(spec["url"], spec["episodes"])
    if kind == "native_rtt":
        return await native_rtt(spec["url"], spec["token"], spec["calls"], spec["ticking"])
    raise ValueError(kind)


async def in_process(spec: dict[str, Any]) -> Any:
    """Run a client spec in another process; its JSON result."""
    return await client_process(SCRIPT, spec)


# -- the threaded OpenEnv-style server --------------------------------------------------------


class ThreadedAre:
    """One OpenEnv environment on ARE's threaded `Environment` (the plan's way)."""

    def __init__(self) -> None:
        self.env: Any = None

    def reset(self) -> dict[str, Any]:
        from are.simulation.environment import Environment, EnvironmentConfig

        from areasync.conformance.scenarios import load_scenario

        self.close()
        scenario = load_scenario(SCENARIO)
        config = EnvironmentConfig(
            start_time=scenario.start_time or 0,
            duration=scenario.duration,
            time_increment_in_seconds=scenario.time_increment_in_seconds,
            oracle_mode=False,
            exit_when_no_events=False,
            verbose=False,
        )
        self.env = Environment(config)
        self.env.run(scenario, wait_for_end=False)
        self.env.pause()
        return self.observe(None)

    def step(self, action: dict[str, Any]) -> dict[str, Any]:
        env = self.env
        app = env.get_app(action["app_name"])
        value = getattr(app, action["tool_name"])(**action.get("tool_args", {}))
        if action.get("advance_time", True):
            env.resume()
            env.time_manager.add_offset(env.time_increment_in_seconds)
            env.tick()
            env.pause()
        return self.observe(value)

    def observe(self, value: Any) -> dict[str, Any]:
        env = self.env
        return {
            "current_time": env.time_manager.time(),
            "tick_count": env.tick_count,
            "action_result": {"value": str(value)},
            "environment_state": str(env.state.value),
            "event_log_length": len(env.event_log),
        }

    def close(self) -> None:
        if self.env is not None:
            self.env.stop()
            # ARE's stop() leaves the pause flag set, and its loop thread waits on that flag
            # before it looks at the stop: a paused environment's thread would never end.
            self.env.pause_event.clear()
            self.env.join()
            self.env = None


async def threaded_server() -> Any:
    """A websockets server speaking OpenEnv's `/ws` over `ThreadedAre` (port 0)."""
    from websockets.asyncio.server import serve

    async def handler(ws: Any) -> None:
        are = ThreadedAre()
        try:
            async for raw in ws:
                message = json.loads(raw)
                if message["type"] == "close":
                    break
                if message["type"] == "reset":
                    obs = await asyncio.to_thread(are.reset)
                else:
                    obs = await asyncio.to_thread(are.step, message["data"])
                done = obs["environment_state"] in ("STOPPED", "FAILED")
                data = {"observation": obs, "reward": None, "done": done}
                await ws.send(json.dumps({"type": "observation", "data": data}))
        finally:
            await asyncio.to_thread(are.close)

    return await serve(handler, "127.0.0.1", 0, compression=None)


# -- the run ----------------------------------------------------------------------------------


async def run_all(calls: int, episodes: int) -> dict[str, Any]:
    from areasync.protocol.frames import Mode
    from areasync.service import Service, ServiceConfig

    config = ServiceConfig(port=0, admin_token=TOKEN, mode=Mode.MANUAL, trace_dir=None, rate=None)
    results: dict[str, Any] = {}
    threaded = await threaded_server()
    threaded_url = f"http://127.0.0.1:{threaded.sockets[0].getsockname()[1]}"
    async with Service(config, scenarios=[]) as service:
        base = service.openenv_url()
        for ticking in (False, True):
            key = "step_and_tick" if ticking else "step"
            log(f"openenv: {key} round trips, {calls} each")
            native_session = service.registry.create(SCENARIO, mode="manual")
            results[key] = {
                "areasync_openenv": await in_process(
                    {"kind": "openenv_rtt", "url": base, "calls": calls, "ticking": ticking}
                ),
                "areasync_native": await in_process(
                    {
                        "kind": "native_rtt",
                        "url": service.ws_url(native_session.id),
                        "token": TOKEN,
                        "calls": calls,
                        "ticking": ticking,
                    }
                ),
                "threaded_openenv": await in_process(
                    {"kind": "openenv_rtt", "url": threaded_url, "calls": calls, "ticking": ticking}
                ),
            }
            if not native_session.ended:
                await service.registry.stop(native_session.id)
        log(f"openenv: {episodes} episodes of reset + {STEPS_PER_EPISODE} steps")
        results["episodes"] = {
            "areasync_openenv": await in_process(
                {"kind": "openenv_episodes", "url": base, "episodes": episodes}
            ),
            "threaded_openenv": await in_process(
                {"kind": "openenv_episodes", "url": threaded_url, "episodes": episodes}
            ),
        }
    threaded.close()
    await threaded.wait_closed()
    return results


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if main_client(argv, run_spec):
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--calls", type=int, default=None, help="round trips per measurement")
    parser.add_argument("--episodes", type=int, default=None, help="episodes per server")
    args = parser.parse_args(argv)
    calls, episodes = (200, 5) if args.quick else (2000, 30)
    calls = args.calls or calls
    episodes = args.episodes or episodes
    load = load_average()
    started = time.perf_counter()
    results = asyncio.run(run_all(calls, episodes))
    summary = {"calls": calls, "steps_per_episode": STEPS_PER_EPISODE, "results": results}
    return print_report("openenv", load, summary, started)


if __name__ == "__main__":
    raise SystemExit(main())
