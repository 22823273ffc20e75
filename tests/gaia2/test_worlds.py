"""The Gaia2-sized world generator (`areasync.gaia2.worlds`), on its small preset.

What it promises: the same seed writes the same bytes; every app a Gaia2 scenario carries is
filled, as ARE's own loader sees it; each scenario's oracle passes under `areasync run --mode
fast --oracle` and under ARE's own Environment; gaia2-cli's layout holds the same documents
as ARE's.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from areasync.gaia2.worlds import SMALL, scenarios, write_worlds
from areasync.gaia2.worlds.shapes import SHAPES
from tests.stubs import stub_llm

GAIA2_APPS = {
    "AgentUserInterface": "AgentUserInterface",
    "Calendar": "CalendarApp",
    "Chats": "MessagingAppV2",
    "Contacts": "ContactsApp",
    "Emails": "EmailClientV2",
    "Messages": "MessagingAppV2",
    "RentAFlat": "RentAFlat",
    "Shopping": "ShoppingApp",
    "Cabs": "CabApp",
    "City": "CityApp",
    "Files": "SandboxLocalFileSystem",
    "SystemApp": "SystemApp",
}


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return write_worlds(tmp_path_factory.mktemp("worlds"), SMALL, seed=7)


def ares_loaded(path: Path) -> Any:
    """The scenario as `are-benchmark run -d` loads it (ARE's local loader), initialized."""
    from are.simulation.benchmark.local_loader import local_scenario_iterator

    folder = path.parent
    loaded = {
        s.scenario_id: s
        for s, _ in local_scenario_iterator(
            str(folder.parent.parent), folder.parent.name, "validation"
        )
    }
    scenario = loaded[path.stem]
    scenario.initialize()
    return scenario


def test_the_same_seed_writes_the_same_bytes_in_another_process(
    dataset: list[Path], tmp_path: Path
) -> None:
    # Another process, another string hash seed: nothing may depend on a set's order.
    command = [sys.executable, "-m", "areasync.gaia2.worlds", str(tmp_path), "--seed", "7"]
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    again = [Path(line) for line in done.stdout.splitlines()]
    assert [p.relative_to(tmp_path) for p in again] == [
        p.relative_to(dataset[0].parents[2]) for p in dataset
    ]
    for first, second in zip(dataset, again, strict=True):
        assert first.read_bytes() == second.read_bytes()


def test_another_seed_writes_another_world() -> None:
    one = next(scenarios(SMALL, seed=1, count=1))
    two = next(scenarios(SMALL, seed=2, count=1))
    assert json.loads(one.text)["apps"] != json.loads(two.text)["apps"]


def shape_of(path: Path) -> str:
    return path.stem.split("_", 4)[-1]  # world_<preset>_s<seed>_<k>_<shape>


def test_the_dataset_holds_every_shape_in_its_config(dataset: list[Path]) -> None:
    paths = {shape_of(p): p for p in dataset}
    assert sorted(paths) == sorted(SHAPES)
    assert {k: p.parent.parent.name for k, p in paths.items()} == {
        "single": "execution",
        "multi_turn": "execution",
        "time": "time",
        "env_events": "execution",
    }
    documents = {k: json.loads(p.read_text()) for k, p in paths.items()}
    kinds_of = {k: [e["event_type"] for e in d["events"]] for k, d in documents.items()}
    assert kinds_of["multi_turn"].count("USER") == 2
    assert documents["time"]["metadata"]["definition"]["tags"] == ["Time"]
    assert "ENV" in kinds_of["time"]
    assert kinds_of["env_events"].count("ENV") >= 3


def test_every_app_a_gaia2_scenario_carries_is_filled_as_ares_loads_it(
    dataset: list[Path],
) -> None:
    scenario = ares_loaded(dataset[0])
    apps = {app.name: app for app in scenario.apps}
    assert {name: type(app).__name__ for name, app in apps.items()} == GAIA2_APPS
    emails = sum(len(folder.emails) for folder in apps["Emails"].folders.values())
    counts = {
        "Calendar": len(apps["Calendar"].events),
        "Chats": len(apps["Chats"].conversations),
        "Contacts": len(apps["Contacts"].contacts),
        "Emails": emails,
        "Messages": len(apps["Messages"].conversations),
        "RentAFlat": len(apps["RentAFlat"].apartments),
        "Shopping": len(apps["Shopping"].products),
        "Cabs": len(apps["Cabs"].ride_history),
        "City": len(apps["City"].crime_data),
        "Files": len(apps["Files"].find("/")),
    }
    assert counts == {
        "Calendar": SMALL.calendar,
        "Chats": SMALL.chats + 1,  # and a group chat
        "Contacts": SMALL.contacts + 1,  # and the user
        "Emails": SMALL.emails,
        "Messages": SMALL.sms,
        "RentAFlat": SMALL.apartments,
        "Shopping": SMALL.products,
        "Cabs": SMALL.rides,
        "City": SMALL.zip_codes,
        "Files": SMALL.files,
    }
    assert len(apps["Shopping"].orders) == SMALL.orders


def test_every_oracle_passes_under_areasync_run(dataset: list[Path]) -> None:
    from areasync.cli import main

    for path in dataset:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = main(["run", str(path), "--mode", "fast", "--oracle", "--no-progress"])
        assert code == 0, out.getvalue()[-2000:]
        assert "validation: PASSED" in out.getvalue()


def test_every_oracle_passes_under_ares_own_environment(dataset: list[Path]) -> None:
    from are.simulation.environment import Environment, EnvironmentConfig

    for path in dataset:
        scenario = ares_loaded(path)
        env = Environment(
            EnvironmentConfig(
                oracle_mode=True, queue_based_loop=True, start_time=scenario.start_time
            )
        )
        env.run(scenario)
        done = env.event_log.list_view()
        assert [e.event_id for e in done if e.failed()] == []
        assert len(done) == len(json.loads(path.read_text())["events"])
        assert scenario.validate(env).success
        env.stop()


def test_gaia2_cli_layout_holds_the_documents_of_ares_layout(
    dataset: list[Path], tmp_path: Path
) -> None:
    files = write_worlds(tmp_path, SMALL, seed=7, layout="gaia2-cli")
    assert sorted(p.relative_to(tmp_path).as_posix() for p in files) == [
        "README.md",
        "execution/test.jsonl",
        "time/test.jsonl",
    ]
    rows = [json.loads(line) for p in files if p.suffix == ".jsonl" for line in p.open()]
    assert {r["scenario_id"]: r["scenario"] for r in rows} == {
        p.stem: p.read_text() for p in dataset
    }


def test_gaia2_cli_layout_is_read_by_datasets_as_a_hub_dataset(tmp_path: Path) -> None:
    import datasets  # type: ignore[import-untyped]

    write_worlds(tmp_path, SMALL, seed=7, layout="gaia2-cli")
    loaded = datasets.load_dataset(str(tmp_path), "time", split="test")
    [row] = list(loaded)
    assert row["scenario_id"] == "world_small_s7_0002_time"
    assert json.loads(row["scenario"])["metadata"]["definition"]["tags"] == ["Time"]


def test_an_unknown_layout_is_refused_with_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"'are', 'gaia2-cli'"):
        write_worlds(tmp_path, SMALL, layout="csv")  # type: ignore[arg-type]


def test_a_faithful_agent_passes_every_shape_under_bench_run(
    dataset: list[Path], tmp_path: Path
) -> None:
    # The stub agent plays each scenario's `agent` (the oracle's calls, after waiting for the
    # environment events its turn has): ARE's judge accepts every run.
    from areasync.gaia2 import compare
    from areasync.gaia2.cli import main as bench_main
    from areasync.gaia2.stub_llm import Script

    os.environ.setdefault("OPENAI_API_KEY", "stub")
    root = dataset[0].parents[2]
    scripts = {e.marker: list(e.agent) for e in scenarios(SMALL, seed=7)}
    verdicts: dict[str, float] = {}
    with stub_llm(Script(agent=scripts)) as stub:
        for config in ("execution", "time"):
            out = tmp_path / config
            args = compare.bench_args(root, out, stub.endpoint, config=config)
            assert bench_main([*args, "--workers", "0", "--no-report"]) == 0
            for line in (out / "output.jsonl").read_text().splitlines():
                row = json.loads(line)
                verdicts[row["task_id"]] = row["score"]
    assert verdicts == {p.stem: 1.0 for p in dataset}
