"""Gaia2-sized worlds: what areasync costs at the size users run, side by side with ARE.

    python bench/worlds.py                       # prints one JSON document
    python bench/worlds.py --presets small,gaia2 --no-sweep
    python bench/worlds.py --sweep-count 8 --sweep-preset gaia2

Scenarios are `areasync.gaia2.worlds`' (ARE's exporter, every app Gaia2's scenarios carry),
the `single` shape of each preset, plus `gaia2x4` (the gaia2 preset with four times the
emails, calendar and chats: if a cost grows faster than the world, its per-MB figure grows
from gaia2 to gaia2x4). For each, in this process, the best of `--repeat`:

* `are_import_s`: ARE's `JsonScenarioImporter.import_from_json` + `Scenario.initialize`;
  `areasync_import_s`: `bridge.scenarios.load` (plain: vetting, the import, initialisation,
  confinement); `benchmark_import_s`: the same as Gaia2's runner imports it (ARE's
  `preprocess_scenario`, no judge);
* `session_load_s`, `session_rss_bytes`: `Simulation.load` in fast oracle mode, and the
  resident memory each of `--held` live sessions adds;
* `oracle_run_s`: the loaded session's oracle run to its end; `are_oracle_run_s`: ARE's own
  `Environment` (oracle mode, queue-based loop) on the scenario ARE's loader gave;
* `snapshot_s`, `snapshot_bytes`, `thaw_s`: a fork's copy of the live session
  (`simulation.snapshots.take`) and one thaw of it;
* `restore_s`, `fork_s`, `fresh_create_s`: a durable server (`--state-dir`, manual mode) runs
  the scenario's session, `--inputs` tool calls (`Emails__list_emails`) are made and made
  durable, the state dir is copied as a kill -9 leaves it, and a second server is started on
  the copy: its start-up until it serves (restoring the session from its journal), then a
  fork of the restored session at its end, and a fresh `create_session` of the same file.

`sweep`: `areasync bench run` against `are-benchmark run --executor_type process` (both as
subprocesses, each paying its start-up) on `--sweep-count` scenarios of `--sweep-preset` (the
`execution` config's share), ARE's default agent on the same stub LLM playing each scenario's
faithful script; wall seconds and the CPU seconds of the command and its children
(`RUSAGE_CHILDREN`), per run. areasync runs with `--workers 0`, every run in its one process,
so that no worker's CPU goes uncounted; ARE's process executor waits for its processes.

The machine's load average is printed before and after: on a shared machine the figures are
only comparable within one document.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import resource
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import best_of, log, rss_bytes


def _presets(names: list[str]) -> dict[str, Any]:
    from areasync.gaia2.worlds import GAIA2, PRESETS

    big = replace(
        GAIA2,
        name="gaia2x4",
        emails=GAIA2.emails * 4,
        calendar=GAIA2.calendar * 4,
        chats=min(GAIA2.chats * 4, GAIA2.contacts),
    )
    table = {**PRESETS, "gaia2x4": big}
    return {name: table[name] for name in names}


def _are_import(text: str) -> None:
    from are.simulation.data_handler.importer import JsonScenarioImporter

    scenario, _, _ = JsonScenarioImporter().import_from_json(text, load_completed_events=False)
    scenario.initialize()


def _are_oracle_run(path: Path) -> float:
    from are.simulation.benchmark.local_loader import local_scenario_iterator
    from are.simulation.environment import Environment, EnvironmentConfig

    folder = path.parent
    for scenario, _ in local_scenario_iterator(str(folder), None, None):
        if scenario.scenario_id != path.stem:
            continue
        scenario.initialize()
        env = Environment(
            EnvironmentConfig(
                oracle_mode=True, queue_based_loop=True, start_time=scenario.start_time
            )
        )
        started = time.perf_counter()
        env.run(scenario)
        elapsed = time.perf_counter() - started
        env.stop()
        return elapsed
    raise RuntimeError(f"ARE's loader did not give {path.stem}")


async def _session_figures(path: Path, held: int) -> dict[str, Any]:
    from areasync.simulation import Simulation
    from areasync.simulation.snapshots import take, thawed

    gc.collect()
    before = rss_bytes()
    started = time.perf_counter()
    sessions = [Simulation.load(str(path), mode="fast", oracle=True) for _ in range(held)]
    load_s = (time.perf_counter() - started) / held
    gc.collect()
    per_session = (rss_bytes() - before) / held
    snapshot = await take(sessions[0])
    assert snapshot is not None
    started = time.perf_counter()
    copy = thawed(snapshot, [])
    thaw_s = time.perf_counter() - started
    copy.sandbox.remove_directories()
    started = time.perf_counter()
    await sessions[0].run()
    oracle_s = time.perf_counter() - started
    for sim in sessions:
        sim.sandbox.remove_directories()
    return {
        "session_load_s": round(load_s, 3),
        "session_rss_bytes": int(per_session),
        "oracle_run_s": round(oracle_s, 3),
        "snapshot_s": round(snapshot.cost_s, 3),
        "snapshot_bytes": len(snapshot.data),
        "thaw_s": round(thaw_s, 3),
    }


async def _durable_figures(path: Path, root: Path, inputs: int) -> dict[str, Any]:
    import shutil

    import anyio

    from areasync.protocol.frames import Mode
    from areasync.service.config import ServiceConfig
    from areasync.service.server import Service

    def config(state_dir: Path) -> ServiceConfig:
        return ServiceConfig(
            port=0,
            admin_token="bench",
            mode=Mode.MANUAL,
            trace_dir=None,
            state_dir=state_dir,
            max_scenario_bytes=64 * 1024 * 1024,
        )

    live = Service(config(root / "live"), [str(path)])
    await live.__aenter__()
    [session] = live.registry.sessions.values()
    for _ in range(inputs):
        await session.sim.call_tool("Emails__list_emails", {"folder_name": "INBOX"})
    session.sim.flush_records()
    journal = session.journal
    assert journal is not None
    while journal.durable < journal.appended:  # noqa: ASYNC110 - no event per record
        await anyio.sleep(0.005)
    await anyio.to_thread.run_sync(shutil.copytree, root / "live", root / "killed")
    await live.__aexit__(None, None, None)
    restored = Service(config(root / "killed"), ())
    started = time.perf_counter()
    await restored.__aenter__()
    restore_s = time.perf_counter() - started
    registry = restored.registry
    [session_id] = list(registry.sessions)
    started = time.perf_counter()
    await registry.fork(session_id)
    fork_s = time.perf_counter() - started
    started = time.perf_counter()
    await registry.create_async(str(path))
    fresh_s = time.perf_counter() - started
    await restored.__aexit__(None, None, None)
    return {
        "restore_s": round(restore_s, 3),
        "fork_s": round(fork_s, 3),
        "fresh_create_s": round(fresh_s, 3),
    }


def per_world(
    name: str, size: Any, root: Path, repeat: int, held: int, inputs: int
) -> dict[str, Any]:
    from areasync.bridge.scenarios import loading as scenarios
    from areasync.gaia2.worlds import scenarios as world_scenarios

    log(f"{name}: writing one scenario")
    exported = next(world_scenarios(size, seed=0, count=1))
    folder = root / name
    folder.mkdir(parents=True)
    path = folder / f"{exported.scenario_id}.json"
    path.write_text(exported.text, encoding="utf-8")
    text = exported.text
    megabytes = len(text.encode()) / 1e6
    log(f"{name}: {megabytes:.2f} MB; imports")
    figures: dict[str, Any] = {
        "json_bytes": len(text.encode()),
        "are_import_s": round(best_of(lambda: _are_import(text), repeat), 3),
        "areasync_import_s": round(
            best_of(lambda: scenarios.load(text, import_mode="plain"), repeat), 3
        ),
        "benchmark_import_s": round(
            best_of(lambda: scenarios.load(text, import_mode="benchmark"), repeat), 3
        ),
    }
    log(f"{name}: sessions, oracle, snapshot")
    figures.update(asyncio.run(_session_figures(path, held)))
    log(f"{name}: restore and fork")
    figures.update(asyncio.run(_durable_figures(path, folder, inputs)))
    figures["are_oracle_run_s"] = round(min(_are_oracle_run(path) for _ in range(repeat)), 3)
    figures["areasync_import_s_per_mb"] = round(figures["areasync_import_s"] / megabytes, 3)
    figures["are_import_s_per_mb"] = round(figures["are_import_s"] / megabytes, 3)
    figures["session_rss_bytes_per_json_byte"] = round(
        figures["session_rss_bytes"] / figures["json_bytes"], 2
    )
    return figures


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def sweep(preset_name: str, count: int, root: Path, timeout: float) -> dict[str, Any]:
    from areasync.gaia2 import compare
    from areasync.gaia2.stub_llm import Script, StubLLM
    from areasync.gaia2.worlds import preset, scenarios, write_worlds

    size = preset(preset_name)
    dataset = root / "sweep-data"
    log(f"sweep: writing {count} {preset_name} scenarios")
    write_worlds(dataset, size, count=count)
    chosen = [e for e in scenarios(size, count=count) if e.config == "execution"]
    report: dict[str, Any] = {"preset": preset_name, "runs": len(chosen)}
    with StubLLM(Script(agent={e.marker: list(e.agent) for e in chosen})) as stub:
        for side in ("areasync", "are"):
            out = root / f"sweep-{side}"
            args = compare.bench_args(dataset, out, stub.endpoint)
            log(f"sweep: {side}")
            cpu = _children_cpu()
            if side == "are":
                wall = compare.run_are([*args, "--executor_type", "process"], timeout=timeout)
            else:
                # One process (no worker processes): its CPU is all counted here.
                wall = compare.run_areasync(
                    [*args, "--workers", "0"], subprocess_=True, timeout=timeout
                )
            cpu = _children_cpu() - cpu
            verdicts = compare.verdicts(out)
            report[side] = {
                "wall_s": round(wall, 2),
                "cpu_s": round(cpu, 2),
                "wall_s_per_run": round(wall / len(chosen), 2),
                "cpu_s_per_run": round(cpu / len(chosen), 2),
                "passed": sum(1 for v in verdicts.values() if v.get("score") == 1.0),
            }
    report["wall_ratio"] = round(report["are"]["wall_s"] / report["areasync"]["wall_s"], 2)
    report["cpu_ratio"] = round(report["are"]["cpu_s"] / report["areasync"]["cpu_s"], 2)
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presets", default="small,medium,gaia2,gaia2x4")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--held", type=int, default=3, help="live sessions held for memory")
    parser.add_argument("--inputs", type=int, default=20, help="tool calls before the restart")
    parser.add_argument("--no-sweep", action="store_true")
    parser.add_argument("--sweep-preset", default="gaia2")
    parser.add_argument("--sweep-count", type=int, default=4)
    parser.add_argument("--timeout", type=float, default=1800.0)
    options = parser.parse_args()
    os.environ.setdefault("OPENAI_API_KEY", "stub")
    import logging

    logging.getLogger("are").setLevel(logging.ERROR)
    document: dict[str, Any] = {"cpus": os.cpu_count(), "load_before": os.getloadavg()}
    with tempfile.TemporaryDirectory(prefix="areasync-worlds-") as tmp:
        root = Path(tmp)
        document["worlds"] = {
            name: per_world(name, size, root, options.repeat, options.held, options.inputs)
            for name, size in _presets(options.presets.split(",")).items()
        }
        if not options.no_sweep:
            document["sweep"] = sweep(
                options.sweep_preset, options.sweep_count, root, options.timeout
            )
    document["load_after"] = os.getloadavg()
    print(json.dumps(document, indent=2))


if __name__ == "__main__":
    main()
