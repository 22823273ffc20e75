"""Scenario sources: registered ids, JSON files and text, Scenario objects; clear errors."""

from pathlib import Path

import pytest

from areasync import ScenarioError, Simulation
from tests.scenarios import timeline


def test_unknown_scenario_id_names_the_known_ones() -> None:
    with pytest.raises(ScenarioError, match=r"unknown scenario id 'nope'.*scenario_tutorial"):
        Simulation.load("nope")


def test_malformed_json_text_is_refused_clearly() -> None:
    with pytest.raises(ScenarioError, match="not valid JSON"):
        Simulation.load('{"version": ')


def test_json_that_is_not_a_scenario_is_refused_clearly() -> None:
    with pytest.raises(ScenarioError, match="not an ARE scenario"):
        Simulation.load('{"hello": "world"}')


def test_missing_json_file_is_refused_clearly(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="does not exist"):
        Simulation.load(str(tmp_path / "missing.json"))


def test_a_scenario_object_is_used_as_is() -> None:
    scenario = timeline(1)
    sim = Simulation.load(scenario)
    assert sim.scenario is scenario
    assert sim.state == "running"


def test_a_registered_id_loads_an_initialised_scenario() -> None:
    sim = Simulation.load("scenario_tutorial", mode="manual")
    assert sim.scenario.scenario_id == "scenario_tutorial"
    assert "EmailClientApp" in sim.env.apps


def test_a_simulation_loads_from_a_resolved_scenario_source() -> None:
    from areasync.gaia2.dataset import SPECS, scenario_json
    from areasync.journal import InlineScenario, RegisteredScenario

    registered = Simulation.load(RegisteredScenario("scenario_tutorial"), mode="manual")
    assert registered.scenario.scenario_id == "scenario_tutorial"
    text = scenario_json(SPECS["tiny_email"])
    inline = Simulation.load(InlineScenario.of(text), mode="manual")
    assert inline.scenario.scenario_id == Simulation.load(text, mode="manual").scenario.scenario_id
