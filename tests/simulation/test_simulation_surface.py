"""`Simulation`'s surface is narrow: its settings are one typed `settings` attribute, each lease
method has one name, and its parts keep what they were given to themselves.

Read from the classes and their source (`ast`), except the one check that needs a loaded
session's `settings`.
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

from areasync.simulation import Simulation
from areasync.simulation.controls import Controls
from areasync.simulation.options import SimulationSettings

CONTROLS = Path(__file__).resolve().parents[2] / "areasync" / "simulation" / "controls.py"


def test_a_simulations_settings_are_read_from_its_typed_settings_alone() -> None:
    sim = Simulation.load("scenario_tutorial", mode="manual", max_ticks=7)
    try:
        assert isinstance(sim.settings, SimulationSettings) and sim.settings.max_ticks == 7
        names = {field.name for field in dataclasses.fields(SimulationSettings)}
        assert {name for name in names if hasattr(Simulation, name)} == set()
    finally:
        sim.sandbox.remove_directories()


def test_a_simulations_lease_methods_have_one_name_each() -> None:
    assert hasattr(Simulation, "begin_lease") and hasattr(Simulation, "end_lease")
    assert not hasattr(Simulation, "acquire") and not hasattr(Simulation, "release")


def test_the_controls_keep_the_environment_engine_and_clock_they_were_given_private() -> None:
    public = set()
    for node in ast.walk(ast.parse(CONTROLS.read_text())):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Store)
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
            and not node.attr.startswith("_")
        ):
            public.add(node.attr)
    assert public == set(), f"Controls sets public attributes {sorted(public)}"
    assert not {"env", "engine", "clock"} & set(vars(Controls))


def test_the_service_asks_a_simulation_not_its_engine() -> None:
    service = CONTROLS.parents[1] / "service"
    reaching = [
        f"{path.relative_to(service.parent)}:{node.lineno}"
        for path in sorted(service.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Attribute)
        and node.attr == "engine"
        and isinstance(node.value, ast.Attribute | ast.Name)
        and getattr(node.value, "attr", getattr(node.value, "id", None)) == "sim"
    ]
    assert reaching == [], f"the service reads a simulation's engine at {reaching}"
