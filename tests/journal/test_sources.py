"""Where a scenario came from is one tagged union (`areasync.journal.sources.ScenarioSource`),
defined once and used as data everywhere: the journal keeps one, OpenEnv's initialize names one,
`Simulation.load` takes a resolved one."""

from __future__ import annotations

import ast
from pathlib import Path

import msgspec

from areasync.journal import (
    DatasetTask,
    InlineScenario,
    RegisteredScenario,
    ScenarioFile,
    ScenarioSource,
)
from areasync.service.adapters.openenv.messages import InitializeAction, scenario_source

ROOT = Path(__file__).resolve().parent.parent.parent / "areasync"


def definitions_of(name: str) -> list[str]:
    """Every module-level assignment or class of `name` in the package."""
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        for node in ast.parse(path.read_text()).body:
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, ast.AnnAssign):
                targets = [node.target]
            elif isinstance(node, ast.ClassDef) and node.name == name:
                found.append(str(path.relative_to(ROOT.parent)))
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                found.append(str(path.relative_to(ROOT.parent)))
    return found


def test_scenario_source_is_defined_once_in_the_package() -> None:
    assert definitions_of("ScenarioSource") == ["areasync/journal/sources.py"]


def test_every_kind_of_source_goes_to_msgpack_and_back_tagged() -> None:
    sources: list[ScenarioSource] = [
        RegisteredScenario("scenario_tutorial"),
        InlineScenario.of('{"version": "1"}'),
        ScenarioFile("tasks/one.json"),
        DatasetTask("validation", 3),
    ]
    for source in sources:
        data = msgspec.msgpack.encode(source)
        assert msgspec.msgpack.decode(data, type=ScenarioSource) == source


def test_an_openenv_initialize_names_its_scenario_as_a_scenario_source() -> None:
    assert scenario_source(InitializeAction(scenario="x")) == RegisteredScenario("x")
    assert scenario_source(InitializeAction(scenario_json="{}")) == InlineScenario.of("{}")
    assert scenario_source(InitializeAction(scenario_path="a.json")) == ScenarioFile("a.json")
    assert scenario_source(InitializeAction(split="test", index=2)) == DatasetTask("test", 2)
