"""How a JSON scenario is imported: `auto` picks Gaia2's benchmark import or ARE's plain one.

`benchmark` is Gaia2's runner without a judge (`import_from_json_to_benchmark` +
`preprocess_scenario`: per-tick turn conditions, a SystemApp, ARE's "no validation"); `plain` is
`JsonScenarioImporter.import_from_json`. `auto` picks benchmark only where a later turn waits on
the oracle's end of turn and the run is not the oracle's (see `areasync.bridge.scenarios.loading`).
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from are.simulation.scenarios.scenario import Scenario

from areasync import ScenarioError, Simulation
from areasync.bridge.scenarios import loading as scenarios
from areasync.bridge.scenarios.loading import detect_import_mode, import_mode_of
from areasync.bridge.traces import export_trace
from areasync.conformance.scenario_json import export_scenario_json
from areasync.conformance.scenarios import GAIA2_SHAPED_ID
from areasync.protocol import ImportMode
from areasync.protocol.records import Validation
from areasync.service import ServiceConfig
from tests.client.test_client_oracle_agent import gaia2_json

BENCHMARK, PLAIN = ImportMode.BENCHMARK, ImportMode.PLAIN


def turn_conditions(scenario: Scenario) -> list[str]:
    return [e.event_id for e in scenario.events if e.event_id.startswith("condition_turn_")]


def without_system_app(text: str) -> str:
    data = json.loads(text)
    data["apps"] = [app for app in data["apps"] if app["name"] != "SystemApp"]
    return json.dumps(data)


# -- auto -------------------------------------------------------------------------------------


def test_auto_picks_benchmark_for_a_multi_turn_gaia2_scenario() -> None:
    text = gaia2_json()
    assert detect_import_mode(text) is BENCHMARK
    scenario = scenarios.load(text)
    assert import_mode_of(scenario) is BENCHMARK
    # The user's turn-2 message now waits on a per-tick turn condition, not on the oracle.
    user_2 = next(e for e in scenario.events if e.event_id == "user_2")
    assert [d.event_id for d in user_2.dependencies] == turn_conditions(scenario)
    assert [d.event_type.value for d in user_2.dependencies] == ["CONDITION"]


def test_auto_picks_plain_for_a_multi_turn_gaia2_scenario_run_by_the_oracle() -> None:
    # The oracle sends the end-of-turn messages itself: the plain import reaches every turn,
    # and the run is what it always was (Gaia2's runner does not rewire oracle runs either).
    text = gaia2_json()
    assert detect_import_mode(text, oracle=True) is PLAIN
    sim = Simulation.load(text, mode="fast", oracle=True)
    assert import_mode_of(sim.scenario) is PLAIN and not turn_conditions(sim.scenario)


def test_auto_picks_plain_for_a_single_turn_gaia2_scenario() -> None:
    text = gaia2_json(single_turn=True)
    assert detect_import_mode(text) is PLAIN
    assert import_mode_of(scenarios.load(text)) is PLAIN


def test_auto_picks_plain_for_an_are_export_run_by_the_oracle_as_before() -> None:
    # ARE's JsonScenarioExporter output of the Gaia2-shaped scenario, as the conformance suite
    # and `create_session` tests serve it in oracle mode.
    text = export_scenario_json(GAIA2_SHAPED_ID)
    assert import_mode_of(scenarios.load(text, oracle=True)) is PLAIN


def test_auto_picks_plain_for_a_trace_areasync_wrote() -> None:
    sim = Simulation.load(gaia2_json(single_turn=True), mode="fast", oracle=True)
    anyio.run(sim.run)
    trace = export_trace(sim.env, sim.scenario, sim.validation, agent_id="oracle")
    assert json.loads(trace)["completed_events"]  # a trace, not a bare scenario
    assert detect_import_mode(trace) is PLAIN
    assert import_mode_of(scenarios.load(trace)) is PLAIN


def test_auto_imports_plain_when_ares_preprocessing_refuses_the_turns(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The user's turn-2 message also waits on an oracle action that does not end turn 1:
    # preprocess_scenario refuses it, so auto keeps what the plain import always did.
    data = json.loads(gaia2_json())
    user_2 = next(e for e in data["events"] if e["event_id"] == "user_2")
    user_2["dependencies"] = ["agent_done", "agent_send"]
    text = json.dumps(data)
    with caplog.at_level(logging.WARNING, logger="areasync.bridge.scenarios.loading"):
        scenario = scenarios.load(text)
    assert import_mode_of(scenario) is PLAIN
    assert "auto imports it plain" in caplog.text
    with pytest.raises(ScenarioError, match=r"depends on an oracle event.*import_mode 'plain'"):
        scenarios.load(text, import_mode="benchmark")


# -- explicit choices -------------------------------------------------------------------------


def test_an_explicit_plain_import_wins_over_auto() -> None:
    scenario = scenarios.load(gaia2_json(), import_mode="plain")
    assert import_mode_of(scenario) is PLAIN and not turn_conditions(scenario)


@pytest.mark.parametrize("oracle", [False, True])
def test_an_explicit_benchmark_import_wins_over_auto(oracle: bool) -> None:
    scenario = scenarios.load(gaia2_json(single_turn=True), import_mode="benchmark", oracle=oracle)
    assert import_mode_of(scenario) is BENCHMARK


def test_a_benchmark_import_adds_a_system_app_as_gaia2s_runner_does() -> None:
    text = without_system_app(gaia2_json())
    assert "SystemApp" in {app.name for app in scenarios.load(text, import_mode="benchmark").apps}
    assert "SystemApp" not in {app.name for app in scenarios.load(text, import_mode="plain").apps}


def test_a_benchmark_session_without_a_judge_validates_as_gaia2_does() -> None:
    sim = Simulation.load(gaia2_json(), mode="fast", import_mode="benchmark", oracle=True)
    assert anyio.run(sim.run) == Validation(success=None, exception=None, rationale=None)


def test_import_mode_leaves_registered_scenarios_alone() -> None:
    scenario = scenarios.load("scenario_tutorial", import_mode="benchmark")
    assert scenario.scenario_id == "scenario_tutorial" and import_mode_of(scenario) is None


# -- bad values -------------------------------------------------------------------------------


@pytest.mark.parametrize("load", [scenarios.load, Simulation.load])
def test_an_unknown_import_mode_is_a_clear_error(load: Any) -> None:
    with pytest.raises(ScenarioError, match="unknown import mode 'gaia2': use one of 'auto'"):
        load(gaia2_json(), import_mode="gaia2")


def test_an_unknown_import_mode_in_the_service_config_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="import_mode must be one of auto, benchmark, plain"):
        ServiceConfig(import_mode="gaia2")  # type: ignore[arg-type]


# -- areasync run -----------------------------------------------------------------------------


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "areasync.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_areasync_run_says_a_benchmark_run_without_a_judge_is_not_judged(tmp_path: Path) -> None:
    path = tmp_path / "gaia2.json"
    path.write_text(gaia2_json())
    done = run_cli("run", str(path), "--import-mode", "benchmark", "--oracle")
    assert done.returncode == 1, done.stderr  # only a passed validation exits 0
    assert "wrapped_condition__turn_idx_1" in done.stdout  # the turn condition ran
    assert "validation: NOT JUDGED" in done.stdout


def test_areasync_run_refuses_an_unknown_import_mode() -> None:
    done = run_cli("run", "scenario_tutorial", "--import-mode", "gaia2")
    assert done.returncode == 2 and "invalid choice: 'gaia2'" in done.stderr
