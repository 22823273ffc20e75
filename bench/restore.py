"""Restart and fork: how long a restarted server takes to restore its live sessions, and what a
fork costs next to loading the scenario fresh.

    python bench/restore.py              # prints one JSON document; ~1 min
    python bench/restore.py --quick      # fewer sessions and inputs, for a smoke run
    python bench/restore.py --sessions 20 --inputs 300

Method, all in this process, real journals on disk:

- restart: a service with a state dir runs N sessions of scenario_tutorial (manual mode), each
  given `inputs` inputs (tool calls, user messages and ticks, alternating); once every journal
  is durable the state dir is copied as it is (what a kill -9 leaves), and a second service is
  started on the copy. Side by side in the same run: a service started with the same N
  sessions as `--scenario` sources (fresh loads, nothing replayed). Reported: the wall time of
  each start-up until it serves, and the restore's own time (`restore_sessions`).
- fork vs fresh load: in the restored service, `SessionRegistry.fork` of one session at its
  end, against `create_async` of the same scenario; interleaved, the median of `repeats`.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from areasync.protocol.frames import Mode
from areasync.service.config import ServiceConfig
from areasync.service.durability.restore import restore_sessions
from areasync.service.server import Service

SCENARIO = "scenario_tutorial"


def config(**overrides: Any) -> ServiceConfig:
    fields: dict[str, Any] = {
        "port": 0,
        "admin_token": "bench",
        "mode": Mode.MANUAL,
        "trace_dir": None,
        "max_sessions": 1000,
    }
    fields.update(overrides)
    return ServiceConfig(**fields)


async def drive(service: Service, inputs: int) -> int:
    """Give every session `inputs` inputs; wait until their journals are durable; the records."""
    total = 0
    for session in service.registry.sessions.values():
        sim = session.sim
        for n in range(inputs):
            # No ticks: the scenario must not run to its end, whatever `inputs` is.
            if n % 2:
                await sim.send_user_message(f"message {n}")
            else:
                await sim.call_tool("EmailClientApp__list_emails", {"folder_name": "INBOX"})
        total += len(sim.flush_records())
    for session in service.registry.sessions.values():
        journal = session.journal
        assert journal is not None
        while journal.durable < journal.appended:  # noqa: ASYNC110 - no event per record
            await anyio.sleep(0.005)
    return total


async def timed_start(service: Service) -> tuple[Service, float]:
    started = time.perf_counter()
    await service.__aenter__()
    return service, time.perf_counter() - started


async def bench(sessions: int, inputs: int, repeats: int, root: Path) -> dict[str, Any]:
    sources = [SCENARIO] * sessions
    live, _ = await timed_start(Service(config(state_dir=root / "a"), sources))
    records = await drive(live, inputs)
    await anyio.to_thread.run_sync(shutil.copytree, root / "a", root / "b")
    await live.__aexit__(None, None, None)

    fresh, fresh_s = await timed_start(Service(config(), sources))
    await fresh.__aexit__(None, None, None)

    # Restored: started with no `--scenario` (`restore_only` times the restore alone).
    restored = Service(config(state_dir=root / "b"), ())
    restored, restored_s = await timed_start(restored)
    assert len(restored.registry.live()) == sessions, restored.registry.journals
    registry = restored.registry
    assert registry.journals is not None
    fork_s: list[float] = []
    load_s: list[float] = []
    source_id = next(iter(registry.sessions))
    for _ in range(repeats):
        t0 = time.perf_counter()
        await registry.fork(source_id)
        fork_s.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        await registry.create_async(SCENARIO)
        load_s.append(time.perf_counter() - t0)
    await restored.__aexit__(None, None, None)
    return {
        "sessions": sessions,
        "inputs_per_session": inputs,
        "records_per_session": records / sessions,
        "start_with_fresh_loads_s": round(fresh_s, 3),
        "start_with_restored_sessions_s": round(restored_s, 3),
        "fork_at_end_s_median": round(statistics.median(fork_s), 4),
        "fresh_load_s_median": round(statistics.median(load_s), 4),
        "fork_records_replayed": records / sessions,
    }


async def restore_only(sessions: int, inputs: int, root: Path) -> float:
    """`restore_sessions` alone on a copied state dir (no listening socket, no banner)."""
    live, _ = await timed_start(Service(config(state_dir=root / "x"), [SCENARIO] * sessions))
    await drive(live, inputs)
    await anyio.to_thread.run_sync(shutil.copytree, root / "x", root / "y")
    await live.__aexit__(None, None, None)
    service = Service(config(state_dir=root / "y"), ())
    async with anyio.create_task_group() as tg:
        service.registry.bind(tg)
        await service._open_state_dir(tg)
        t0 = time.perf_counter()
        await restore_sessions(service.registry)
        took = time.perf_counter() - t0
        await service.registry.shutdown()
        tg.cancel_scope.cancel()
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--inputs", type=int, default=30, help="inputs per session")
    args = parser.parse_args()
    sessions, inputs, repeats = (4, 6, 3) if args.quick else (args.sessions, args.inputs, 7)

    async def run() -> dict[str, Any]:
        with tempfile.TemporaryDirectory() as tmp:
            result = await bench(sessions, inputs, repeats, Path(tmp))
            result["restore_sessions_only_s"] = round(
                await restore_only(sessions, inputs, Path(tmp)), 3
            )
            return result

    print(json.dumps(anyio.run(run), indent=2))


if __name__ == "__main__":
    main()
