"""Scenario JSON for the conformance suite: ARE's exporter and importer, used as Gaia2 uses them.

Gaia2's scenarios are ARE JSON exports; `export_scenario_json` writes one from any reference
scenario (after ARE's oracle run, as Gaia2's were made) and `load_scenario_json` reads one back
through ARE's importer, plain or the benchmark way, so tests can check the round trip.

Scenario JSON (`export_scenario_json`, `load_scenario_json`)
    ARE's own registered scenarios do not survive `JsonScenarioExporter` -> `JsonScenarioImporter`:
    - the importer rebuilds completed events with `Action.from_dict`, which looks classes up in
      `are.simulation.apps`; MessagingApp, EmailClientApp and SimpleTaskApp are not exported there
      (AttributeError). `load_scenario_json` passes `load_completed_events=False`: completed events
      are a trace record, not needed to run;
    - apps are rebuilt from `ALL_APPS` only ("No class found for the app name EmailClientApp",
      the app is silently dropped);
    - events are rebuilt through the authoring API (`Scenario.add_event`), which enforces Gaia2's
      DAG rules: an ENV event needs exactly one predecessor, an oracle (AGENT) event at least one;
      every registered scenario has a root ENV event ("Env events must have only one predecessor");
    - arguments are exported as `str(value)` with a type name and parsed back only for
      str/int/float/bool/list/dict, lists and dicts via `json.loads`: an `Email` argument
      ("Unsupported type Email") or an oracle event's list argument (exported as the Python repr
      `['a@b.c']`, not JSON) fail.
    A Gaia2-shaped scenario (`gaia2_shaped_scenario()`, id `GAIA2_SHAPED_ID`) is built the way
    Gaia2's are: apps from `ALL_APPS`, a USER `send_message_to_agent` root, ENV events hanging off
    USER/ENV events, oracle events as `OracleEvent`s built from strings, `{{event_id}}`
    placeholders.
    It round-trips, and the imported scenario runs in oracle mode with nothing else: oracle events
    travel in the JSON `events` list as `ExportedOracleEvent` (class_name "OracleEvent", event_type
    "AGENT", action as app/function/string args), the importer turns them back into `OracleEvent`s
    with a factory calling the app, and `oracle_mode=True` executes them as AGENT events. One trap:
    `convert_event` exports `action.resolved_args` when set, and a run sets them, so exporting after
    a run would bake one run's resolved placeholder values (e.g. a generated email id) into the
    scenario; `export_scenario_json` exports the scenario events' original args. The benchmark path
    (`load_scenario_json(..., benchmark=True)`: `import_from_json_to_benchmark` +
    `preprocess_scenario` without a judge) also works offline; it rewires turns through
    `condition_turn_N` ConditionCheckEvents that are checked every tick and logged as CONDITION
    events.
"""

from __future__ import annotations

import copy

from are.simulation.scenarios.scenario import Scenario
from are.simulation.types import Event

from areasync.conformance.reference_loops import run_are_queue_loop
from areasync.conformance.scenarios import load_scenario

__all__ = ["export_scenario_json", "load_scenario_json"]


def export_scenario_json(scenario: Scenario | str) -> str:
    """Run `scenario` in ARE's queue loop (oracle mode), then export it with ARE's exporter.

    The trace's `events` hold the scenario events with their original arguments (placeholders
    intact, see the module docstring); `completed_events` hold the oracle run.
    """
    from are.simulation.data_handler.exporter import JsonScenarioExporter

    scenario = load_scenario(scenario)
    env = run_are_queue_loop(scenario)
    for event in scenario.events:
        if isinstance(event, Event) and event.action is not None and event.action.resolved_args:
            # Replace, do not mutate: the completed events in the log share this Action.
            action = copy.copy(event.action)
            action.resolved_args = {}
            event.action = action
    exported: str = JsonScenarioExporter().export_to_json(env, scenario, scenario.scenario_id)
    return exported


def load_scenario_json(text: str | bytes, *, benchmark: bool = False) -> Scenario:
    """An initialized scenario from ARE/Gaia2 JSON text, via ARE's importer.

    `benchmark=False`: `JsonScenarioImporter.import_from_json` (completed events are not loaded:
    they are not needed to run, and the importer cannot rebuild actions of apps missing from
    `are.simulation.apps`). `benchmark=True`: `import_from_json_to_benchmark` + ARE's
    `preprocess_scenario` without a judge (Gaia2's runner path: SystemApp added, turns rewired
    through per-tick `condition_turn_N` condition events).
    """
    from are.simulation.data_handler.importer import JsonScenarioImporter

    importer = JsonScenarioImporter()
    if not benchmark:
        scenario, _, _ = importer.import_from_json(text, load_completed_events=False)
        scenario.initialize()
        return scenario
    from are.simulation.scenarios.scenario_imported_from_json.utils import preprocess_scenario

    bench_scenario, _, _ = importer.import_from_json_to_benchmark(text, load_completed_events=False)
    preprocess_scenario(bench_scenario, judge_config=None)
    return bench_scenario
