"""Journal benchmark: durable appends per policy, loop lag, bytes per input, decode speed, and
the store choice (a file per session against SQLite in WAL mode), side by side in one run.

    python bench/journal.py [--seconds 1.5] [--sessions 4] [--dir /path/on/the/real/disk]

Prints one JSON document (~20 s at the defaults):
- `policies`: for `every`, `group(0ms)`, `group(1ms)`, `group(5ms)`: `--sessions` writers,
  each with one task that appends a typical tool-call input and awaits its ticket, in a loop,
  for `--seconds`
  (`burst` 1: one record in flight per session, as an agent's tool calls are; `burst` 16: 16
  appended at once, then awaited). Append-to-ack latency p50/p99 (ms), the synchronous cost of
  `append()` on the loop (us), acknowledged appends/s, fdatasyncs/s, and the event loop's lag
  meanwhile (a 1 ms ticker's lateness, p50/p99/max ms), against an idle baseline.
- `threads`: the cost of a round trip to a worker thread: `anyio.to_thread.run_sync` against a
  dedicated thread fed by a queue, each for a no-op and for an fdatasync of a one-record append.
- `bytes_per_input`: a typical tool-call input framed, and on disk per input.
- `decode`: records/s decoding a 100,000-input journal.
- `history`: a new journal holding a session's history (a fork's records up to its cut) of
  0, 1,000 and 10,000 inputs, until durable: created with it in one write and sync (what a
  fork's journal does) against created, then appended as one group commit (ms p50).
- `store_choice`: per-append latency of SQLite (WAL, synchronous=FULL, one commit per insert, and
  100 inserts per commit) against the file journal (one write + fdatasync per append, and 100
  appends per write), in the same directory, from the same thread.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import sqlite3
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `bench` and `areasync` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
import msgspec

from areasync.journal import (
    Created,
    Durability,
    Input,
    JournalStore,
    RegisteredScenario,
    decode_journal,
    hash_token,
    new_salt,
)
from areasync.journal.format import encode_record
from areasync.journal.writer import sync_file
from bench.common import log, percentile

POLICIES = (Durability.every(), Durability.group(0), Durability.group(1), Durability.group(5))


def tool_call(seq: int) -> Input:
    """A typical agent tool call, as the simulation logs it."""
    return Input(
        time=1_700_000_000.0 + seq * 0.5,
        seq=seq,
        source="call_tool",
        payload={
            "tool": "EmailClientApp__send_email",
            "args": {
                "recipients": ["kaitlyn.nguyen@example.com"],
                "subject": "Re: dinner on Friday",
                "content": "Sounds good, see you at 7pm at the usual place.",
                "attachment_paths": [],
            },
        },
    )


def created(session_id: str) -> Created:
    salt = new_salt()
    return Created(
        session_id=session_id,
        scenario=RegisteredScenario("scenario_find_image_file"),
        mode="fast",
        speed=1.0,
        oracle=False,
        import_mode="linear",
        seed=0,
        token_salt=salt,
        token_hashes={role: hash_token(salt, role) for role in ("agent", "user", "controller")},
        epoch="0123456789abcdef",
        created=time.time(),
    )


def ms(values: list[float]) -> dict[str, float]:
    return {
        "p50_ms": round(percentile(values, 50) * 1e3, 3),
        "p99_ms": round(percentile(values, 99) * 1e3, 3),
        "max_ms": round(max(values, default=float("nan")) * 1e3, 3),
    }


async def ticker(lags: list[float], stop: anyio.Event) -> None:
    """How late a 1 ms sleep wakes: the time the loop was busy elsewhere."""
    while not stop.is_set():
        start = time.perf_counter()
        await anyio.sleep(0.001)
        lags.append(time.perf_counter() - start - 0.001)


async def loop_lag_idle(seconds: float) -> dict[str, float]:
    lags: list[float] = []
    stop = anyio.Event()
    async with anyio.create_task_group() as tg:
        tg.start_soon(ticker, lags, stop)
        await anyio.sleep(seconds)
        stop.set()
    return ms(lags)


async def run_policy(
    root: Path, policy: Durability, sessions: int, seconds: float, burst: int
) -> dict[str, Any]:
    name = str(policy).replace("(", "_").replace(")", "")
    store = JournalStore(root / f"{name}-burst{burst}")
    latencies: list[float] = []
    calls: list[float] = []
    lags: list[float] = []
    stop = anyio.Event()
    syncs = [0]
    real_sync = os.fdatasync

    def counting_sync(fd: Any) -> None:
        syncs[0] += 1
        real_sync(fd)

    async def producer(index: int) -> None:
        async with store.create(created(f"s{index}"), policy) as writer:
            seq = 0
            while not stop.is_set():
                start = time.perf_counter()
                tickets = []
                for _ in range(burst):
                    before = time.perf_counter()
                    tickets.append(writer.append(tool_call(seq)))
                    calls.append(time.perf_counter() - before)
                    seq += 1
                for ticket in tickets:
                    await ticket
                    latencies.append(time.perf_counter() - start)

    os.fdatasync = counting_sync
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(ticker, lags, stop)
            for index in range(sessions):
                tg.start_soon(producer, index)
            await anyio.sleep(seconds)
            stop.set()
    finally:
        os.fdatasync = real_sync
    return {
        "policy": str(policy),
        "burst": burst,
        "append_call_us": {k.replace("ms", "us"): v * 1e3 for k, v in ms(calls).items()},
        "appends_per_s": round(len(latencies) / seconds),
        "fdatasyncs_per_s": round(syncs[0] / seconds),
        "ack_latency": ms(latencies),
        "loop_lag": ms(lags),
    }


def dedicated_thread_round_trip(n: int, work: Callable[[], None]) -> list[float]:
    """Round trips to one long-lived thread fed by a queue, answered on the loop."""

    async def main() -> list[float]:
        jobs: queue.SimpleQueue[tuple[Callable[[], None], Callable[[], None]] | None] = (
            queue.SimpleQueue()
        )

        def worker() -> None:
            while (job := jobs.get()) is not None:
                job[0]()
                job[1]()

        thread = threading.Thread(target=worker, daemon=True)
        thread.start()
        token = anyio.lowlevel.current_token()
        times = []
        for _ in range(n):
            done = anyio.Event()
            start = time.perf_counter()
            jobs.put((work, partial(anyio.from_thread.run_sync, done.set, token=token)))
            await done.wait()
            times.append(time.perf_counter() - start)
        jobs.put(None)
        thread.join()
        return times

    return anyio.run(main)


def to_thread_round_trip(n: int, work: Callable[[], None]) -> list[float]:
    async def main() -> list[float]:
        limiter = anyio.CapacityLimiter(4)
        times = []
        for _ in range(n):
            start = time.perf_counter()
            await anyio.to_thread.run_sync(work, limiter=limiter)
            times.append(time.perf_counter() - start)
        return times

    return anyio.run(main)


def bench_threads(root: Path, n: int) -> dict[str, Any]:
    fd = os.open(root / "threads.bin", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    frame = encode_record(tool_call(0))

    def append_sync() -> None:
        os.write(fd, frame)
        sync_file(fd)

    def noop() -> None:
        pass

    try:
        return {
            "noop": {
                "to_thread": ms(to_thread_round_trip(n, noop)),
                "dedicated_thread": ms(dedicated_thread_round_trip(n, noop)),
            },
            "append_fdatasync": {
                "to_thread": ms(to_thread_round_trip(n // 4, append_sync)),
                "dedicated_thread": ms(dedicated_thread_round_trip(n // 4, append_sync)),
            },
        }
    finally:
        os.close(fd)


def bench_bytes(root: Path, n: int) -> dict[str, Any]:
    async def write() -> int:
        store = JournalStore(root / "bytes")
        async with store.create(created("b"), Durability.group(5)) as writer:
            empty = writer.durable_bytes
            for seq in range(n):
                writer.append(tool_call(seq))
        return store.path("b").stat().st_size - empty

    on_disk = anyio.run(write)
    record = encode_record(tool_call(0))
    return {
        "framed_record_bytes": len(record),
        "frame_overhead_bytes": 12,
        "payload_json_bytes": len(msgspec.json.encode(tool_call(0).payload)),
        "on_disk_bytes_per_input": round(on_disk / n, 1),
    }


def bench_decode(root: Path, n: int) -> dict[str, Any]:
    async def write() -> Path:
        store = JournalStore(root / "decode")
        async with store.create(created("d"), Durability.group(50)) as writer:
            for seq in range(n):
                writer.append(tool_call(seq))
        return store.path("d")

    path = anyio.run(write)
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        data = path.read_bytes()
        journal = decode_journal(data, str(path))
        best = min(best, time.perf_counter() - start)
    assert len(journal.records) == n + 1
    return {"records": n + 1, "bytes": len(data), "records_per_s": round((n + 1) / best)}


def bench_history(root: Path, rounds: int) -> dict[str, Any]:
    async def with_history(store: JournalStore, sid: str, frames: list[bytes]) -> None:
        async with store.create(created(sid), Durability.group(0), frames):
            pass

    async def appended(store: JournalStore, sid: str, frames: list[bytes]) -> None:
        async with store.create(created(sid), Durability.group(0)) as writer:
            tickets = [writer.append_frame(frame) for frame in frames]
            if tickets:
                await tickets[-1]  # one batch: every ticket completes with the last

    async def timed(ways: dict[str, Any], frames: list[bytes]) -> dict[str, Any]:
        times: dict[str, list[float]] = {name: [] for name in ways}
        for i in range(rounds):
            for name, way in ways.items():
                start = time.perf_counter()
                await way(JournalStore(root / "history"), f"h{len(frames)}-{name}-{i}", frames)
                times[name].append(time.perf_counter() - start)
        return {name: round(percentile(t, 50) * 1e3, 2) for name, t in times.items()}

    ways = {"created_with_it_ms": with_history, "created_then_appended_ms": appended}
    out: dict[str, Any] = {}
    for n in (0, 1_000, 10_000):
        frames = [encode_record(tool_call(seq)) for seq in range(n)]
        out[str(n)] = anyio.run(timed, ways, frames)
    return out


def bench_store_choice(root: Path, n: int) -> dict[str, Any]:
    payload = msgspec.msgpack.encode(tool_call(0))
    db = sqlite3.connect(root / "choice.sqlite3", isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute("CREATE TABLE inputs (session TEXT, seq INTEGER, record BLOB)")
    fd = os.open(root / "choice.journal", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    frame = encode_record(tool_call(0))

    def sqlite_commit(batch: int) -> None:
        db.execute("BEGIN")
        db.executemany(
            "INSERT INTO inputs VALUES (?, ?, ?)", [("s", i, payload) for i in range(batch)]
        )
        db.execute("COMMIT")

    def file_append(batch: int) -> None:
        os.write(fd, frame * batch)
        sync_file(fd)

    def per_append(op: Callable[[int], None], batch: int, rounds: int) -> dict[str, float]:
        times = []
        for _ in range(rounds):
            start = time.perf_counter()
            op(batch)
            times.append((time.perf_counter() - start) / batch)
        return ms(times)

    try:
        out: dict[str, Any] = {}
        for name, op in (("sqlite_wal", sqlite_commit), ("file", file_append)):
            out[name] = {
                "one_per_sync": per_append(op, 1, n),
                "hundred_per_sync": per_append(op, 100, n // 10),
            }
        return out
    finally:
        db.close()
        os.close(fd)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.5, help="per policy")
    parser.add_argument("--sessions", type=int, default=4, help="concurrent writers")
    parser.add_argument("--dir", default=None, help="where to write (default: a temp dir)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir, prefix="journal-bench-") as tmp:
        root = Path(tmp)
        out: dict[str, Any] = {"dir": str(root), "sessions": args.sessions}
        log("loop lag, idle")
        out["loop_lag_idle"] = anyio.run(loop_lag_idle, 1.0)
        out["policies"] = []
        for burst in (1, 16):
            for policy in POLICIES:
                log(f"policy {policy}, bursts of {burst}")
                result = anyio.run(run_policy, root, policy, args.sessions, args.seconds, burst)
                out["policies"].append(result)
        log("threads")
        out["threads"] = bench_threads(root, 2000)
        log("bytes per input")
        out["bytes_per_input"] = bench_bytes(root, 10_000)
        log("decode")
        out["decode"] = bench_decode(root, 100_000)
        log("history")
        out["history"] = bench_history(root, 9)
        log("store choice")
        out["store_choice"] = bench_store_choice(root, 500)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
