"""A tool call's round trip on one session through each way in: WebSocket, OpenEnv, MCP.

    python bench/adapters.py            # one JSON document on stdout
    python bench/adapters.py --quick    # smaller counts, for a smoke run

One server (`--mcp-port` on), one session (scenario_tutorial, manual mode: time never moves,
so every call finds the session as the last left it), its agent's token for every client, each
client in a process of its own (`python bench/adapters.py client SPEC`), one after another:

- `websocket_json`, `websocket_msgpack`: areasync's own client (`areasync.client`);
- `openenv_ws`: today's OpenEnv client (`openenv` 0.10, `GenericEnvClient` over `<base>/ws`,
  the token in `headers=`), a `call_tool` step that does not advance time;
- `openenv_mcp`: today's `MCPToolClient.call_tool` (OpenEnv's JSON-RPC over HTTP, `<base>/mcp`);
- `mcp`: the official `mcp` SDK's client over Streamable HTTP (`/mcp/<session id>`).

Measured: the wall time of one call of `SystemApp__get_current_time`, from the client's call to
its answer, after a tenth as many untimed calls.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `bench` and `areasync` importable
    # ...and not bench/openenv.py as `openenv`: the name is OpenEnv's package.
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
TOOL = "SystemApp__get_current_time"
KINDS = ("websocket_json", "websocket_msgpack", "openenv_ws", "openenv_mcp", "mcp")


summary = round_trips


async def timed(call: Callable[[], Awaitable[Any]], calls: int) -> dict[str, float]:
    for _ in range(calls // 10):
        await call()
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        await call()
        times.append(time.perf_counter() - started)
    return summary(times)


# -- clients (each in a process of its own) ---------------------------------------------------


async def websocket(spec: dict[str, Any], encoding: str) -> dict[str, float]:
    from areasync.client import connect

    async with connect(spec["ws"], role="agent", token=spec["token"], encoding=encoding) as c:
        return await timed(lambda: c.call_tool(TOOL, {}), spec["calls"])


async def openenv_ws(spec: dict[str, Any]) -> dict[str, float]:
    from tests.service.adapters.openenv.today import GenericEnvClient

    headers = {"Authorization": f"Bearer {spec['token']}"}
    action = {"action_type": "call_tool", "tool_name": TOOL, "advance_time": False}
    async with GenericEnvClient(base_url=spec["openenv"], headers=headers) as env:
        await env.reset()
        return await timed(lambda: env.step(action), spec["calls"])


async def openenv_mcp(spec: dict[str, Any]) -> dict[str, float]:
    from tests.service.adapters.openenv.today import MCPToolClient

    headers = {"Authorization": f"Bearer {spec['token']}"}
    async with MCPToolClient(base_url=spec["openenv"], headers=headers) as env:
        return await timed(lambda: env.call_tool(TOOL), spec["calls"])


async def mcp(spec: dict[str, Any]) -> dict[str, float]:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamablehttp_client

    headers = {"Authorization": f"Bearer {spec['token']}"}
    async with (
        streamablehttp_client(spec["mcp"], headers=headers) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        return await timed(lambda: session.call_tool(TOOL, {}), spec["calls"])


async def run_spec(spec: dict[str, Any]) -> dict[str, float]:
    kind = spec["kind"]
    if kind.startswith("websocket_"):
        return await websocket(spec, kind.removeprefix("websocket_"))
    runs = {"openenv_ws": openenv_ws, "openenv_mcp": openenv_mcp, "mcp": mcp}
    return await runs[kind](spec)


async def in_process(spec: dict[str, Any]) -> Any:
    """Run a client spec in another process; its JSON result."""
    return await client_process(SCRIPT, spec)


# -- the run ----------------------------------------------------------------------------------


async def run_all(calls: int) -> dict[str, Any]:
    from areasync.protocol.frames import Mode, Role
    from areasync.service import Service, ServiceConfig

    config = ServiceConfig(
        port=0, mcp_port=0, admin_token=TOKEN, mode=Mode.MANUAL, trace_dir=None, rate=None
    )
    results: dict[str, Any] = {}
    async with Service(config, scenarios=[SCENARIO]) as service:
        session = service.registry.get(SCENARIO)
        assert session is not None
        spec = {
            "calls": calls,
            "token": session.tokens[Role.AGENT],
            "ws": service.ws_url(session.id),
            "openenv": f"{service.http_url}/openenv",
            "mcp": service.mcp.url(session.id),
        }
        for kind in KINDS:
            log(f"adapters: {kind}, {calls} calls")
            results[kind] = await in_process({**spec, "kind": kind})
    return results


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if main_client(argv, run_spec):
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--calls", type=int, default=None, help="round trips per client")
    args = parser.parse_args(argv)
    calls = args.calls or (200 if args.quick else 2000)
    load = load_average()
    started = time.perf_counter()
    results = asyncio.run(run_all(calls))
    return print_report(
        "adapters", load, {"tool": TOOL, "calls": calls, "results": results}, started
    )


if __name__ == "__main__":
    raise SystemExit(main())
