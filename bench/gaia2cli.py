"""gaia2-cli adapter benchmark: its HTTP+SSE round trips next to the native WebSocket protocol.

    python bench/gaia2cli.py              # prints one JSON document; ~10 s
    python bench/gaia2cli.py --rounds 50  # fewer rounds, for a smoke run

Method: one `Service` (scenario_tutorial, manual mode: time stands still, so only the requests
move anything) with the gaia2-cli adapter on its own port, and, on the same event loop, an echo
agent (areasync's Python client, WebSocket): each user message `bench-...` it sees on its
stream, it answers with `AgentUserInterface__send_message_to_user("ack-bench-...")`. Rounds
alternate between the two ways in, so both see the same machine state:

- `notify_rtt`: the user's message to the agent's answer, as the user sees it. Adapter: `POST
  /notify` (aiohttp client) until the `event: chat` frame arrives on an open `GET /events`.
  Native: a user client's `send_user_message` until the answer's event arrives on its stream.
- `call_tool_rtt`: one tool call (`SystemApp__get_current_time`). Adapter: `POST
  /call_tool` with the agent's URL until its reply. Native: the agent's `call_tool`.
- `delivery`: from the answer's event being appended to the session's stream (timed in the
  server, `perf_counter_ns`, same process) to its arrival at the SSE reader / the user client.

Everything shares one process and one event loop, so the figures include the clients' own
costs on that loop: compare the columns, not the absolute values, with other benchmarks.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp
import anyio

from areasync.client import Client, connect
from areasync.protocol.frames import EventItem, Mode, NotificationItem, Role
from areasync.service import Service, ServiceConfig

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import log, percentile

SESSION = "scenario_tutorial"
TO_USER = "AgentUserInterface__send_message_to_user"
TOOL_APP, TOOL_ACTION = "SystemApp", "get_current_time"


def _summary(values_ns: list[int]) -> dict[str, float]:
    us = [v / 1000 for v in values_ns]
    return {
        "n": len(us),
        "p50_us": round(percentile(us, 50), 1),
        "p90_us": round(percentile(us, 90), 1),
        "p99_us": round(percentile(us, 99), 1),
    }


class Bench:
    def __init__(self, service: Service) -> None:
        self.service = service
        self.appended: dict[int, int] = {}  # stream seq of an answer -> when it was appended
        self.waiting: dict[str, asyncio.Future[tuple[int, int]]] = {}
        self.results: dict[str, list[int]] = {}

    def on_append(self, seq: int, item: object) -> None:
        if type(item) is EventItem and item.event.function == "send_message_to_user":
            self.appended[seq] = time.perf_counter_ns()

    def arrived(self, text: str, seq: int) -> None:
        future = self.waiting.pop(text, None)
        if future is not None and not future.done():
            future.set_result((time.perf_counter_ns(), seq))

    def expect(self, text: str) -> asyncio.Future[tuple[int, int]]:
        future: asyncio.Future[tuple[int, int]] = asyncio.get_running_loop().create_future()
        self.waiting[text] = future
        return future

    def add(self, name: str, value: int) -> None:
        self.results.setdefault(name, []).append(value)


async def _echo(agent: Client) -> None:
    async for item in agent.stream():
        if isinstance(item, NotificationItem) and "bench-" in item.notification.message:
            marker = item.notification.message.split("bench-", 1)[1].split()[0]
            await agent.call_tool(TO_USER, content=f"ack-bench-{marker}")


async def _user_stream(user: Client, bench: Bench) -> None:
    async for item in user.stream():
        if isinstance(item, EventItem) and item.event.function == "send_message_to_user":
            bench.arrived(str(item.event.args.get("content")), item.seq)


async def _sse(http: aiohttp.ClientSession, url: str, bench: Bench) -> None:
    async with http.get(url + "/events") as response:
        event = ""
        async for raw in response.content:
            line = raw.decode().rstrip("\r\n")
            if line.startswith("event:"):
                event = line.split(":", 1)[1].strip()
            elif line.startswith("data:") and event == "chat":
                data = json.loads(line.split(":", 1)[1])
                bench.arrived(data["message"]["content"][0]["text"], data["streamSeq"])


async def _round(bench: Bench, n: int, user: Client, agent: Client, http: Any, urls: Any) -> None:
    # The adapter: POST /notify, the answer on SSE.
    started = time.perf_counter_ns()
    done = bench.expect(f"ack-bench-a{n}")
    async with http.post(urls["user"] + "/notify", json={"message": f"bench-a{n}"}) as r:
        assert (await r.json())["ok"]
    received, seq = await done
    bench.add("notify_rtt.adapter", received - started)
    bench.add("delivery.adapter_sse", received - bench.appended[seq])
    # Native: send_user_message, the answer on the user's stream.
    started = time.perf_counter_ns()
    done = bench.expect(f"ack-bench-w{n}")
    await user.send_user_message(f"bench-w{n}")
    received, seq = await done
    bench.add("notify_rtt.native", received - started)
    bench.add("delivery.native_ws", received - bench.appended[seq])
    # One tool call each way.
    started = time.perf_counter_ns()
    body = {"app": TOOL_APP, "action": TOOL_ACTION, "args": {}, "event_id": f"e{n}"}
    async with http.post(urls["agent"] + "/call_tool", json=body) as r:
        assert (await r.json())["ok"]
    bench.add("call_tool_rtt.adapter", time.perf_counter_ns() - started)
    started = time.perf_counter_ns()
    await agent.call_tool(f"{TOOL_APP}__{TOOL_ACTION}")
    bench.add("call_tool_rtt.native", time.perf_counter_ns() - started)


async def run(rounds: int, warmup: int) -> dict[str, Any]:
    config = ServiceConfig(port=0, gaia2_port=0, mode=Mode.MANUAL, trace_dir=None, rate=None)
    async with Service(config, (SESSION,)) as service:
        bench = Bench(service)
        service.registry.sessions[SESSION].sim.log.listeners.append(bench.on_append)
        tokens = service.tokens.of(SESSION)
        urls = {"user": service.gaia2_url(SESSION), "agent": service.gaia2_url(SESSION, Role.AGENT)}
        ws = service.ws_url(SESSION)
        async with (
            connect(ws, role="agent", token=tokens[Role.AGENT]) as agent,
            connect(ws, role="user", token=tokens[Role.USER]) as user,
            aiohttp.ClientSession() as http,
            anyio.create_task_group() as tg,
        ):
            tg.start_soon(_echo, agent)
            tg.start_soon(_user_stream, user, bench)
            tg.start_soon(_sse, http, urls["user"], bench)
            await anyio.sleep(0.2)  # the SSE stream is open
            for n in range(warmup + rounds):
                if n == warmup:
                    bench.results.clear()
                with anyio.fail_after(10):
                    await _round(bench, n, user, agent, http, urls)
            tg.cancel_scope.cancel()
    return {
        "benchmark": "gaia2cli",
        "rounds": rounds,
        "results": {name: _summary(values) for name, values in sorted(bench.results.items())},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=500)
    parser.add_argument("--warmup", type=int, default=50)
    args = parser.parse_args()
    log(f"gaia2cli: {args.rounds} rounds after {args.warmup} warm-up rounds")
    print(json.dumps(anyio.run(run, args.rounds, args.warmup), indent=2))


if __name__ == "__main__":
    main()
