"""Soak: many sessions, agents, observers and controllers for a long time; nothing may drift.

The server runs in a process of its own (`bench/soak.py --serve`, a `Service` as `areasync serve`
runs it, garbage-collector freeze included), so that its resident memory and open file
descriptors are measured alone, from /proc. The driver (this process) keeps `--sessions` slots
busy for `--seconds`; each slot, over and over:

1. creates a fast-mode session of `scenario_tutorial` over the socket (admin `create_session`);
2. attaches an oracle agent (areasync.agents.oracle.agent, pace `wait`: ARE's wait tool), an
   observer and a controller, each an areasync `Client` on its own socket;
3. the agent performs the oracle's actions; the controller meanwhile issues random controls
   (pause then resume, set_speed, get_state, ping) every 20-200 ms; the observer follows the
   stream to `ended` and checks it is contiguous from seq 1;
4. closes the three clients (the session has ended; the server keeps the last `keep_ended`).

Beside them, `--churn` workers create sessions and end them early with admin `stop_session`,
with an observer that must see `ended`. Every `--sample` seconds the driver records the
server's RSS and open fds; traces are written to a temporary directory and removed as they come.

Errors (must be 0): server log records at ERROR or above and loop exception-handler calls
(reported by the server at exit), unexpected exceptions in any client, oracle actions that did
not go as in ARE's oracle run, streams with a gap or not starting at 1, sessions whose ARE
validation did not succeed, error frames the server counted (`areasync_errors_total`) and
controls refused other than by the session ending first (a race the driver counts apart).

    .venv/bin/python bench/soak.py                   # 10 minutes (SOAK_SECONDS), 100 sessions
    .venv/bin/python bench/soak.py --seconds 60 --sessions 20
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import logging
import os
import platform
import random
import shutil
import signal
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `bench` and `areasync` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import anyio

from bench.common import log

TOKEN = "soak-admin"
SCENARIO = "scenario_tutorial"
SCRIPT = str(Path(__file__).resolve())


# -- the server process ---------------------------------------------------------------------


class _ErrorCounter(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.ERROR)
        self.count = 0
        self.first: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1
        if len(self.first) < 20:
            self.first.append(f"{record.name}: {record.getMessage()}")


def serve_main(args: argparse.Namespace) -> int:
    """The soak's server: prints {"port"} when listening, its fault counts when it stops."""
    from areasync.protocol import Mode
    from areasync.service import Service, ServiceConfig
    from areasync.service.gc_policy import settle as settle_gc

    logging.basicConfig(level=logging.WARNING, format="server %(levelname)s %(name)s: %(message)s")
    errors = _ErrorCounter()
    logging.getLogger().addHandler(errors)
    loop_faults: list[str] = []
    config = ServiceConfig(
        port=0,
        admin_token=TOKEN,
        trace_dir=Path(args.trace_dir),
        mode=Mode.FAST,
        max_sessions=args.max_sessions,
        keep_ended=32,
        max_connections=4096,
        max_connections_per_session=64,
    )

    async def main() -> dict[str, Any]:
        asyncio.get_running_loop().set_exception_handler(
            lambda loop, context: loop_faults.append(str(context.get("message")))
        )
        service = Service(config, [SCENARIO])
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            async with anyio.create_task_group() as tg:
                await tg.start(service.serve)
                settle_gc()  # the GC policy `areasync serve` applies after start-up
                print(json.dumps({"port": service.port}), flush=True)
                async for _ in signals:
                    service.shutdown()
                    break
        metrics = service.metrics
        return {
            "error_log_records": errors.count,
            "first_error_records": errors.first,
            "loop_exceptions": loop_faults,
            "frames_sent": metrics.frames_sent,
            "frames_received": metrics.frames_received,
            "error_frames": dict(metrics.errors),
            "closes": {str(code): n for code, n in metrics.closes.items()},
            "sessions_created": metrics.sessions_created,
            "slow_consumer_disconnects": metrics.slow_consumer_disconnects,
        }

    result = anyio.run(main)
    print(json.dumps(result), flush=True)
    return 0


# -- probes of the server process -----------------------------------------------------------


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


# -- the driver -----------------------------------------------------------------------------


@dataclass
class Tally:
    sessions_completed: int = 0
    sessions_churned: int = 0
    items_observed: int = 0
    controls: int = 0
    ended_races: int = 0  # a control refused because the session had just ended: expected
    validated: int = 0
    errors: list[str] = field(default_factory=list)

    def error(self, what: str) -> None:
        self.errors.append(what)
        if len(self.errors) <= 20:
            log(f"soak error: {what}")


async def create_session(admin: Any, **fields: Any) -> dict[str, Any]:
    from areasync.protocol import CreateSession, Mode

    value: dict[str, Any] = await admin.request(
        lambda id: CreateSession(id=id, scenario=SCENARIO, mode=Mode.FAST, **fields)
    )
    return value


def contiguous(seqs: list[int]) -> bool:
    return seqs == list(range(1, len(seqs) + 1))


async def controller_loop(controller: Any, rng: random.Random, tally: Tally) -> None:
    """Random valid controls until the session ends."""
    from areasync.client import SessionEndedError

    while controller.ended is None:
        await anyio.sleep(rng.uniform(0.02, 0.2))
        choice = rng.random()
        try:
            if choice < 0.3:
                await controller.pause()
                await anyio.sleep(rng.uniform(0.0, 0.03))
                await controller.resume()
                tally.controls += 2
            elif choice < 0.5:
                await controller.set_speed(rng.choice([0.5, 1.0, 2.0, 10.0]))
                tally.controls += 1
            elif choice < 0.8:
                await controller.get_state()
                tally.controls += 1
            else:
                await controller.ping()
                tally.controls += 1
        except SessionEndedError:
            tally.ended_races += 1
            return


async def one_session(url_of: Any, admin: Any, plan: Any, rng: random.Random, tally: Tally) -> None:
    from areasync.agents.oracle.agent import Pace, run_oracle_agent
    from areasync.client import connect

    created = await create_session(admin)
    url = url_of(created["session_id"])
    async with (
        connect(url, role="agent", token=TOKEN) as agent,
        connect(url, role="observer", token=TOKEN, since=0) as observer,
        connect(url, role="controller", token=TOKEN) as controller,
    ):
        async with anyio.create_task_group() as tg:
            tg.start_soon(controller_loop, controller, rng, tally)
            report = await run_oracle_agent(agent, plan, pace=Pace.WAIT, observer=observer)
            ended = await observer.wait_ended()
            tg.cancel_scope.cancel()
        seqs = [item.seq for item in observer.history]
    if not report.ok:
        tally.error(f"oracle agent: {report.unexpected_failures}")
    if not contiguous(seqs):
        tally.error(f"stream of {created['session_id']} is not contiguous from 1")
    if ended.validation is not None and ended.validation.success is True:
        tally.validated += 1
    else:
        tally.error(f"validation of {created['session_id']}: {ended.validation}")
    tally.items_observed += len(seqs)
    tally.sessions_completed += 1


async def churn_session(url_of: Any, admin: Any, rng: random.Random, tally: Tally) -> None:
    from areasync.client import connect
    from areasync.protocol import StopSession

    created = await create_session(admin)
    sid = created["session_id"]
    async with connect(url_of(sid), role="observer", token=TOKEN, since=0) as observer:
        await anyio.sleep(rng.uniform(0.0, 0.3))
        await admin.request(lambda id: StopSession(id=id, session_id=sid))
        await observer.wait_ended()
        if not contiguous([item.seq for item in observer.history]):
            tally.error(f"churned session {sid}: stream not contiguous")
    tally.sessions_churned += 1


async def slot(work: Any, deadline: float, tally: Tally, name: str) -> None:
    while time.monotonic() < deadline:
        try:
            with anyio.fail_after(120):
                await work()
        except Exception as exc:  # every failure is a finding: count it, keep soaking
            tally.error(f"{name}: {type(exc).__name__}: {exc}")
            await anyio.sleep(0.5)


def remove_traces(directory: Path) -> int:
    """Delete the traces written so far (they would fill the disk); how many there were."""
    removed = 0
    for path in directory.glob("*.json"):
        with contextlib.suppress(OSError):
            path.unlink()
            removed += 1
    return removed


async def drive(args: argparse.Namespace, port: int, pid: int) -> dict[str, Any]:
    from areasync.agents.oracle.agent import oracle_plan
    from areasync.client import connect

    plan = await oracle_plan(SCENARIO)
    tally = Tally()
    base = f"ws://127.0.0.1:{port}/sessions/"
    fds_start = open_fds(pid)
    samples: list[dict[str, float]] = []
    started = time.monotonic()
    deadline = started + args.seconds
    trace_dir = Path(args.trace_dir)
    traces = [0]

    def url_of(session_id: str) -> str:
        return base + session_id

    async def sampler() -> None:
        while True:
            samples.append(
                {
                    "t": round(time.monotonic() - started, 1),
                    "rss_mb": round(rss_mb(pid), 1),
                    "fds": open_fds(pid),
                    "sessions_completed": tally.sessions_completed,
                }
            )
            traces[0] += remove_traces(trace_dir)
            await anyio.sleep(args.sample)

    async with (
        connect(url_of(SCENARIO), role="admin", token=TOKEN) as admin,
        anyio.create_task_group() as tg,
    ):
        tg.start_soon(sampler)
        async with anyio.create_task_group() as workers:
            for n in range(args.sessions):
                rng = random.Random(args.seed * 1_000_003 + n)
                workers.start_soon(
                    slot,
                    lambda rng=rng: one_session(url_of, admin, plan, rng, tally),
                    deadline,
                    tally,
                    f"slot {n}",
                )
            for n in range(args.churn):
                rng = random.Random(args.seed * 7_000_003 + n)
                workers.start_soon(
                    slot,
                    lambda rng=rng: churn_session(url_of, admin, rng, tally),
                    deadline,
                    tally,
                    f"churn {n}",
                )
        tg.cancel_scope.cancel()
    # Every client is closed; give the server a moment to finish closing handshakes.
    await anyio.sleep(2.0)
    gc.collect()
    samples.append(
        {
            "t": round(time.monotonic() - started, 1),
            "rss_mb": round(rss_mb(pid), 1),
            "fds": open_fds(pid),
            "sessions_completed": tally.sessions_completed,
        }
    )
    return {
        "tally": tally,
        "fds_start": fds_start,
        "fds_end": open_fds(pid),
        "samples": samples,
        "traces_removed": traces[0],
        "wall_s": round(time.monotonic() - started, 1),
    }


def memory_trend(samples: list[dict[str, float]], warmup: float) -> dict[str, Any]:
    """RSS after warm-up: first, last, max, and the least-squares slope in MB per minute."""
    after = [s for s in samples if s["t"] >= warmup] or samples
    times = [s["t"] for s in after]
    values = [s["rss_mb"] for s in after]
    slope = 0.0
    if len(after) >= 2 and max(times) > min(times):
        mean_t, mean_v = statistics.fmean(times), statistics.fmean(values)
        var = sum((t - mean_t) ** 2 for t in times)
        slope = sum((t - mean_t) * (v - mean_v) for t, v in zip(times, values, strict=True)) / var
    return {
        "warmup_s": warmup,
        "first_mb": values[0],
        "last_mb": values[-1],
        "max_mb": max(values),
        "slope_mb_per_min": round(slope * 60, 3),
    }


async def soak(args: argparse.Namespace) -> dict[str, Any]:
    """Start the server process, drive it, stop it; the report."""
    trace_dir = tempfile.mkdtemp(prefix="areasync-soak-traces-")
    args.trace_dir = trace_dir
    command = [
        sys.executable,
        SCRIPT,
        "--serve",
        "--trace-dir",
        trace_dir,
        "--max-sessions",
        str(args.sessions + args.churn + 16),
    ]
    process = await asyncio.create_subprocess_exec(
        *command, stdout=asyncio.subprocess.PIPE, stderr=None
    )
    assert process.stdout is not None
    try:
        with anyio.fail_after(120):
            port = json.loads(await process.stdout.readline())["port"]
        log(
            f"soak: server pid {process.pid} on port {port}; {args.sessions} sessions, "
            f"{args.churn} churn workers, {args.seconds:g} s"
        )
        driven = await drive(args, port, process.pid)
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
        with anyio.fail_after(60):
            out, _ = await process.communicate()
        shutil.rmtree(trace_dir, ignore_errors=True)
    lines = [line for line in out.decode().splitlines() if line.startswith("{")]
    server: dict[str, Any] = json.loads(lines[-1]) if lines else {"missing": "no report"}
    tally: Tally = driven["tally"]
    unexpected_frames = dict(server.get("error_frames", {}))
    errors = (
        len(tally.errors)
        + int(server.get("error_log_records", 1))
        + len(server.get("loop_exceptions", []))
        + sum(n for code, n in unexpected_frames.items() if code != "session_ended")
    )
    return {
        "what": f"soak: {args.sessions} oracle-agent sessions + {args.churn} churn workers",
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "seconds": args.seconds,
        "wall_s": driven["wall_s"],
        "sessions_completed": tally.sessions_completed,
        "sessions_churned": tally.sessions_churned,
        "sessions_created": server.get("sessions_created"),
        "validated": tally.validated,
        "items_observed": tally.items_observed,
        "controls": tally.controls,
        "ended_races": tally.ended_races,
        "frames_delivered": server.get("frames_sent"),
        "frames_received": server.get("frames_received"),
        "errors": errors,
        "error_details": {
            "client": tally.errors[:20],
            "server_log": server.get("first_error_records"),
            "loop_exceptions": server.get("loop_exceptions"),
            "error_frames": unexpected_frames,
        },
        "closes": server.get("closes"),
        "traces_written": driven["traces_removed"],
        "fds": {"start": driven["fds_start"], "end": driven["fds_end"]},
        "memory": memory_trend(driven["samples"], warmup=min(60.0, args.seconds / 4)),
        "samples": driven["samples"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--seconds", type=float, default=float(os.environ.get("SOAK_SECONDS", "600"))
    )
    parser.add_argument("--sessions", type=int, default=100, help="concurrent session slots")
    parser.add_argument("--churn", type=int, default=4, help="create-then-stop workers")
    parser.add_argument("--sample", type=float, default=10.0, help="seconds between samples")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--trace-dir", default="", help=argparse.SUPPRESS)
    parser.add_argument("--max-sessions", type=int, default=128, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        return serve_main(args)
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("are").setLevel(logging.ERROR)  # ARE narrates its oracle runs at INFO
    # The client logs every error frame at WARNING; the report counts them (session_ended races).
    logging.getLogger("areasync.client").setLevel(logging.ERROR)
    result = asyncio.run(soak(args))
    print(json.dumps(result, indent=2))
    return 0 if result["errors"] == 0 and result["fds"]["start"] == result["fds"]["end"] else 1


if __name__ == "__main__":
    sys.exit(main())
