"""Durable sessions: the tool-call round trip without a journal and with each durability policy.

    python bench/durable.py             # prints one JSON document; ~1 min
    python bench/durable.py --quick     # smaller counts, for a smoke run

Method: `bench/service.py`'s `rtt` client (another process, a plain `websockets` client,
msgpack, sequential `SystemApp__get_current_time` calls, each carrying its AGENT event, then
pings), against four services in this process side by side: no `--state-dir`, and a state dir
with `every`, `group:0` and `group:5`. Rounds are interleaved in a rotating order (the machine
is noisy); the median round by call_tool p50 is reported. With a journal, each call's reply (and
its AGENT event) waits until its record is written and fdatasync'ed, in a worker thread: the
difference to "none" is the price of "durable before acknowledged". Also the journal's bytes per
input (frame head plus the msgpack `Input`; the `Created` record is not counted), and what kind
of file system the state dir is on (the sync's cost is the disk's).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.service import _service, log, run_client, settle

POLICIES: list[str | None] = [None, "every", "group:0", "group:5"]


def _name(policy: str | None) -> str:
    return "none" if policy is None else policy


async def bench(calls: int, rounds: int, state: Path) -> dict[str, Any]:
    runs: dict[str, list[dict[str, Any]]] = {_name(p): [] for p in POLICIES}
    sizes: dict[str, list[float]] = {_name(p): [] for p in POLICIES if p is not None}
    warmup = min(200, calls // 4)
    services = {}
    for policy in POLICIES:
        extra: dict[str, Any] = {}
        if policy is not None:
            extra = {"state_dir": state / policy.replace(":", "_"), "durability": policy}
        services[_name(policy)] = _service(**extra)
    async with contextlib.AsyncExitStack() as stack:
        for name, service in services.items():
            services[name] = await stack.enter_async_context(service)
        for round_number in range(rounds):
            shift = round_number % len(POLICIES)
            for policy in POLICIES[shift:] + POLICIES[:shift]:
                name = _name(policy)
                service = services[name]
                session = await service.registry.create_async("scenario_tutorial", mode="manual")
                journal = session.journal
                start_bytes, start_records = 0, 0
                settle()
                log(f"durable: round {round_number + 1}, {calls} tool calls and pings, {name}")
                if journal is not None and journal.writer is not None:
                    start_bytes = journal.writer.durable_bytes
                    start_records = journal.appended
                spec = {
                    "kind": "rtt",
                    "url": service.ws_url(session.id),
                    "encoding": "msgpack",
                    "batch": False,
                    "calls": calls,
                    "warmup": warmup,
                }
                runs[name].append(await run_client(spec))
                if journal is not None and journal.writer is not None:
                    await service.registry.stop(session.id)
                    await journal.finished.wait()
                    records = journal.appended - start_records
                    sizes[name].append((journal.writer.durable_bytes - start_bytes) / records)
    results = {}
    for name, rows in runs.items():
        median = sorted(rows, key=lambda row: row["call_tool"]["p50_us"])[len(rows) // 2]
        results[name] = {
            **median,
            "rounds_call_tool_p50_us": [row["call_tool"]["p50_us"] for row in rows],
            "rounds_call_tool_p99_us": [row["call_tool"]["p99_us"] for row in rows],
            "bytes_per_record": round(sum(sizes[name]) / len(sizes[name]), 1)
            if name in sizes
            else None,
        }
    return results


def _filesystem(path: Path) -> str:
    try:
        out = subprocess.run(
            ["df", "-T", str(path)], capture_output=True, text=True, check=True
        ).stdout
        return out.splitlines()[-1].split()[1]
    except (OSError, subprocess.CalledProcessError, IndexError):
        return "unknown"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--dir", default=None, help="where the journals go (default: a temp dir)")
    args = parser.parse_args()
    calls, rounds = (300, 2) if args.quick else (2000, 3)
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        state = Path(tmp)
        results = anyio.run(bench, calls, rounds, state)
        document = {
            "what": (
                "tool-call round trips (msgpack, client in another process), no journal vs "
                f"each durability policy; median of {rounds} interleaved rounds by call_tool "
                "p50; bytes per journal record (each tool call's record, and the lease "
                "records of its turn)"
            ),
            "calls": calls,
            "filesystem": _filesystem(state),
            "cpus": os.cpu_count(),
            "results": results,
        }
    print(json.dumps(document, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
