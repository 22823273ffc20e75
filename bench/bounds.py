"""What a session may cost the server, with and without its bounds (`service/sessions/budget.py`),
and the figures behind the bounds' defaults.

Each part runs an in-process `Service` (manual mode: nothing moves but requests) in a process
of its own, so that the resident memory it reports is that part's alone:

- `flood`: an agent sends `EmailClientApp__send_email` calls with 900 KiB of content, as fast
  as they are answered, for `--flood-mib` MiB of arguments: with the bounds off (the attack as
  it was) and with the defaults (refused after `max_session_input_bytes`). Reported: calls
  answered and refused, resident memory added, the session's bounds as `/api/sessions` lists
  them, and the largest reply time;
- `shapes`: the same bytes in two shapes, long strings (the flood's) and 100,000 short strings
  in one argument: resident memory added per byte of the session's weighed memory
  (`budget.weight`), what `max_session_memory_bytes` counts;
- `scenario`: a fast oracle run of the synthetic Gaia2-shaped scenario of `--events` events:
  its weighed memory when it has ended (what a large scenario holds with no agent at all);
- `churn`: six such runs one after the other with `keep_ended=0`: resident memory after each,
  then after a collection (what the memory ceiling reads once sessions are gone).

    .venv/bin/python bench/bounds.py              # a few minutes, prints JSON
    .venv/bin/python bench/bounds.py --quick      # a smoke run
    .venv/bin/python bench/bounds.py --parts "flood unbounded,flood bounded" --flood-mib 600
"""

from __future__ import annotations

import argparse
import gc
import json
import multiprocessing
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `bench` and `areasync` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import anyio
import msgspec
from websockets.asyncio.client import connect

from areasync.protocol import (
    CallTool,
    Encoding,
    Error,
    Hello,
    Result,
    Role,
    decode_server_frame,
    encode_client_frame,
)
from areasync.service import Service, ServiceConfig
from bench.common import log, rss_bytes
from bench.synthetic import synthetic_scenario_json

TOKEN = "bench-admin"
SESSION = "scenario_tutorial"
MIB = 2**20
UNBOUNDED = {
    "max_call_bytes": 2**40,
    "max_session_input_bytes": 2**40,
    "max_session_journal_bytes": 2**40,
    "max_session_memory_bytes": 2**40,
}


def config(**overrides: Any) -> ServiceConfig:
    fields: dict[str, Any] = {
        "port": 0,
        "admin_token": TOKEN,
        "mode": "manual",
        "trace_dir": None,
        "ping_interval": None,
        "max_frame_bytes": 4 * MIB,
        "rate": None,
    }
    return ServiceConfig(**{**fields, **overrides})


def email(content: Any, recipients: Any = ("a@b.com",)) -> dict[str, Any]:
    return {
        "tool": "EmailClientApp__send_email",
        "args": {"recipients": list(recipients), "subject": "s", "content": content},
    }


async def send_calls(service: Service, calls: list[dict[str, Any]]) -> dict[str, Any]:
    """An agent sends `calls` one after the other; what became of them."""
    answered = refused = 0
    codes: dict[str, int] = {}
    slowest = 0.0
    async with connect(service.ws_url(SESSION), max_size=16 * MIB) as ws:
        await ws.send(encode_client_frame(Hello(id=0, role=Role.AGENT, token=TOKEN), Encoding.JSON))
        await ws.recv()
        for n, call in enumerate(calls, start=1):
            started = time.perf_counter()
            await ws.send(encode_client_frame(CallTool(id=n, **call), Encoding.JSON))
            while True:
                frame = decode_server_frame(await ws.recv())
                if isinstance(frame, Result | Error) and frame.id == n:
                    break
            slowest = max(slowest, time.perf_counter() - started)
            if isinstance(frame, Result):
                answered += 1
            else:
                refused += 1
                codes[frame.code] = codes.get(frame.code, 0) + 1
    return {"answered": answered, "refused": refused, "codes": codes, "slowest_reply_s": slowest}


async def flood(bounded: bool, mib: int) -> dict[str, Any]:
    content = "x" * (900 * 1024)
    calls = [email(content)] * max(1, mib * 1024 // 900)
    async with Service(config(**({} if bounded else UNBOUNDED)), [SESSION]) as service:
        gc.collect()
        before = rss_bytes()
        outcome = await send_calls(service, calls)
        gc.collect()
        session = service.registry.get(SESSION)
        assert session is not None
        return {
            "arguments_mib": round(len(calls) * 900 / 1024, 1),
            **outcome,
            "rss_added_mib": round((rss_bytes() - before) / MIB, 1),
            "bounds": msgspec.to_builtins(session.budget.describe()),
        }


async def shape(which: str, calls: int) -> dict[str, Any]:
    if which == "long strings":
        call = email("x" * (900 * 1024))
    else:  # ARE refuses the addresses (tool_failed), but logs the call, arguments and all
        call = email("c", [f"{n:06d}" for n in range(100_000)])
    async with Service(config(**UNBOUNDED), [SESSION]) as service:
        gc.collect()
        before = rss_bytes()
        await send_calls(service, [call] * calls)
        gc.collect()
        session = service.registry.get(SESSION)
        assert session is not None
        bounds = session.budget.describe()
        weighed = bounds["max_session_memory_bytes"].used
        added = rss_bytes() - before
        return {
            "shape": which,
            "input_mib": round(bounds["max_session_input_bytes"].used / MIB, 1),
            "weighed_mib": round(weighed / MIB, 1),
            "rss_added_mib": round(added / MIB, 1),
            "rss_per_weighed_byte": round(added / weighed, 2),
        }


async def scenario(events: int) -> dict[str, Any]:
    text = synthetic_scenario_json(events)
    async with Service(config(mode="fast", oracle=True), []) as service:
        gc.collect()
        before = rss_bytes()
        session = await service.registry.create_async(text, oracle=True, mode="fast")
        with anyio.fail_after(600):
            await session.done.wait()
        gc.collect()
        weighed = session.budget.describe()["max_session_memory_bytes"].used
        return {
            "events": events,
            "scenario_json_mib": round(len(text) / MIB, 1),
            "stream_items": session.sim.log.seq,
            "weighed_mib": round(weighed / MIB, 1),
            "rss_added_mib": round((rss_bytes() - before) / MIB, 1),
        }


async def churn(events: int, runs: int) -> dict[str, Any]:
    text = synthetic_scenario_json(events)
    async with Service(config(mode="fast", oracle=True, keep_ended=0), []) as service:
        gc.collect()
        start = rss_bytes()
        after = []
        for _ in range(runs):
            session = await service.registry.create_async(text, oracle=True, mode="fast")
            with anyio.fail_after(600):
                await session.done.wait()
            after.append(round((rss_bytes() - start) / MIB, 1))
        gc.collect()
        return {
            "events": events,
            "rss_added_after_each_mib": after,
            "sessions_left": len(service.registry.sessions),
            "rss_added_at_the_end_after_gc_mib": round((rss_bytes() - start) / MIB, 1),
        }


PARTS = (
    "flood unbounded",
    "flood bounded",
    "shape long strings",
    "shape short strings",
    "scenario",
    "churn",
)


def run_part(name: str, options: dict[str, Any], out: Any) -> None:
    """One part in this (fresh) process; its JSON goes to `out`."""
    parts = {
        "flood unbounded": lambda: flood(False, options["flood_mib"]),
        "flood bounded": lambda: flood(True, options["flood_mib"]),
        "shape long strings": lambda: shape("long strings", options["shape_calls"]),
        "shape short strings": lambda: shape("short strings", options["shape_calls"]),
        "scenario": lambda: scenario(options["events"]),
        "churn": lambda: churn(options["events"], options["churn_runs"]),
    }
    out.send(anyio.run(parts[name]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--flood-mib", type=int, default=64)
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--quick", action="store_true", help="a smoke run")
    parser.add_argument(
        "--parts", default=",".join(PARTS), help=f"comma-separated, of: {', '.join(PARTS)}"
    )
    options = parser.parse_args()
    settings = {
        "flood_mib": 4 if options.quick else options.flood_mib,
        "shape_calls": 2 if options.quick else 20,
        "events": 500 if options.quick else options.events,
        "churn_runs": 2 if options.quick else 6,
    }
    context = multiprocessing.get_context("spawn")
    results: dict[str, Any] = {"settings": settings}
    for name in options.parts.split(","):
        if name not in PARTS:
            parser.error(f"no part {name!r}: the parts are {', '.join(PARTS)}")
        log(f"{name}...")
        receive, send = context.Pipe(duplex=False)
        process = context.Process(target=run_part, args=(name, settings, send))
        process.start()
        results[name] = receive.recv()
        process.join()
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
