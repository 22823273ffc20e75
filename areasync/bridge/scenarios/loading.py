"""Scenario loading: a registered id, an ARE/Gaia2 JSON file or string, or a Scenario object.

Whatever the source, the result is an initialised ARE `Scenario`, ready for
`Environment.run`, its file-system apps confined (`areasync.bridge.sandbox.confinement`). Failures
raise `ScenarioError` with a message that says what was wrong and what to do; nothing is
half-built. JSON is vetted first (`areasync.bridge.scenarios.vetting`: it is untrusted input).

Two ways to import JSON (`ImportMode`). ARE's export format is also Gaia2's, and ARE imports it
two ways: `plain` (`JsonScenarioImporter.import_from_json`: `are-run --json_file`, ARE's GUI)
and `benchmark`, as Gaia2's runner does (`are-benchmark`: `import_from_json_to_benchmark`, then
`preprocess_scenario`). In a plain import the user message that opens a later turn hangs off
the oracle's end-of-turn `send_message_to_user`, which only oracle mode runs: a live agent never
gets turn 2. The benchmark import rewires each turn through a `condition_turn_N` condition
checked every tick, which opens the turn once the *agent* has sent N messages to the user; it
also adds a SystemApp when the JSON declares none. Nothing in the JSON says "Gaia2", so `auto`
(the default) decides from the event graph (`detect_import_mode`). An explicit `benchmark` or
`plain` wins, in any mode. `import_mode` has no effect on registered ids and Scenario objects.

With a judge (`JudgeOptions`: `areasync serve --judge_*`) the benchmark import is Gaia2's
runner's with its judge: ARE's `preprocess_scenario_from_config` as `are-benchmark run` calls it
(`areasync.bridge.judge.llm`: the oracle pre-run, the judge, 1,800 s or 420 s for the Time
capability, turns that the judge opens); without one, validation returns `success=None` (ARE's
"no validation"), as Gaia2's runner does without an LLM judge.

`detach_apps` frees what ARE keeps of a finished scenario in class-level state.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from are.simulation.scenarios.scenario import Scenario

from areasync.bridge.judge.options import JudgeOptions
from areasync.bridge.operator_files import DEFAULT_MAX_SCENARIO_BYTES, check_file, names_a_file
from areasync.bridge.sandbox.confinement import confine_file_systems
from areasync.bridge.scenarios.json_import import import_benchmark, import_plain
from areasync.bridge.scenarios.vetting import MAX_JSON_BYTES, ScenarioError, vetted_json
from areasync.protocol.frames import ImportMode

__all__ = [
    "ScenarioError",
    "detach_apps",
    "detect_import_mode",
    "from_json",
    "from_registry",
    "import_mode_of",
    "load",
    "parse_import_mode",
    "registered_ids",
]

logger = logging.getLogger(__name__)


def parse_import_mode(value: ImportMode | str) -> ImportMode:
    """`value` as an ImportMode; ScenarioError naming the choices if it is none of them."""
    try:
        return ImportMode(value)
    except ValueError:
        choices = ", ".join(repr(mode.value) for mode in ImportMode)
        raise ScenarioError(
            f"unknown import mode {value!r}: use one of {choices} ('auto' picks 'benchmark' "
            "for a multi-turn Gaia2 scenario, else 'plain')"
        ) from None


def import_mode_of(scenario: Scenario) -> ImportMode | None:
    """How `scenario` was imported from JSON (benchmark or plain), None if it was not."""
    from are.simulation.scenarios.scenario_imported_from_json.benchmark_scenario import (
        BenchmarkScenarioImportedFromJson,
    )
    from are.simulation.scenarios.scenario_imported_from_json.scenario import (
        ScenarioImportedFromJson,
    )

    if isinstance(scenario, BenchmarkScenarioImportedFromJson):
        return ImportMode.BENCHMARK
    if isinstance(scenario, ScenarioImportedFromJson):
        return ImportMode.PLAIN
    return None


def registered_ids() -> list[str]:
    from are.simulation.scenarios.utils.registry import registry

    return sorted(registry.get_all_scenarios())


def from_registry(scenario_id: str) -> Scenario:
    from are.simulation.scenarios.utils.registry import registry

    scenarios = registry.get_all_scenarios()
    cls = scenarios.get(scenario_id)
    if cls is None:
        known = ", ".join(sorted(scenarios)) or "none"
        raise ScenarioError(
            f"unknown scenario id {scenario_id!r}: use a registered id ({known}), "
            "a path to an ARE JSON scenario file, or inline JSON text"
        )
    return cls()


def from_json(
    text: str | bytes,
    *,
    origin: str = "inline JSON",
    import_mode: ImportMode | str = ImportMode.AUTO,
    oracle: bool = False,
    judge: JudgeOptions | None = None,
    max_bytes: int = MAX_JSON_BYTES,
) -> Scenario:
    """An ARE/Gaia2 JSON scenario (the format of ARE's `JsonScenarioExporter`), vetted first
    (at most `max_bytes` of it).

    `plain` returns the imported scenario, not yet initialised; `benchmark` returns it
    preprocessed as Gaia2's runner does (initialised, turns rewired), judged by `judge` unless
    the run is in oracle mode. `auto` picks one for a run in oracle mode or not (`oracle`),
    with a judge or not, see the module docstring.
    """
    mode = parse_import_mode(import_mode)
    data = vetted_json(text, origin, max_bytes)
    judge = None if oracle else judge  # are-benchmark run --oracle judges nothing
    chosen = mode
    if mode is ImportMode.AUTO:
        chosen = detect_import_mode(data, oracle=oracle, origin=origin, judged=judge is not None)
    if chosen is ImportMode.BENCHMARK:
        try:
            return _benchmark(data, origin, judge)
        except _TurnsRefusedError as exc:
            if mode is not ImportMode.AUTO:
                raise
            # What `auto` may pick must import at least as it did before: fall back to plain.
            logger.warning("%s; auto imports it plain", exc)
    try:
        return import_plain(data)  # ARE's importer, in pieces (json_import.py)
    except Exception as exc:
        raise ScenarioError(_not_a_scenario(origin, exc)) from exc


# Why `auto` picks what it picks. It looks at what decides whether a live agent can play the
# plain import: the event graph. A USER or ENV event that depends on an oracle (AGENT)
# `AgentUserInterface.send_message_to_user` is a later turn waiting on the oracle's end of turn,
# exactly what `preprocess_scenario` rewires: `benchmark`, unless the run is in oracle mode (the
# oracle then sends those messages itself, so the plain import reaches every turn, and Gaia2's
# runner does not rewire an oracle run's turns either: `preprocess_scenario_from_config`).
# Otherwise `plain`: single-turn scenarios, exports whose later turns do not wait on the oracle.
# Should ARE's `preprocess_scenario` refuse the turns of a scenario `auto` picked it for, `auto`
# imports it plain, with a warning (an explicit `benchmark` is then an error). With a judge,
# scoring needs the benchmark import, so `auto` picks it for every JSON scenario with an oracle
# event not run in oracle mode (single-turn ones too: a plain import would be validated as ARE
# validates any scenario, which says nothing of the agent's work); oracle runs are never judged,
# as with `are-benchmark run --oracle`.
def detect_import_mode(
    data: str | bytes | dict[str, Any],
    *,
    oracle: bool = False,
    origin: str = "inline JSON",
    judged: bool = False,
) -> ImportMode:
    """What `auto` picks for a JSON scenario (text, vetted first, or decoded): BENCHMARK or
    PLAIN (see the comment above).

    BENCHMARK when a USER or ENV event depends on an oracle (AGENT)
    `AgentUserInterface.send_message_to_user` event, i.e. a later turn waits on the oracle's end
    of turn, and the run is not in oracle mode; `judged` (a judge will score the run), when the
    scenario has any oracle event and the run is not in oracle mode.
    """
    if isinstance(data, str | bytes):
        data = vetted_json(data, origin)
    if oracle:
        return ImportMode.PLAIN
    events = data.get("events") if isinstance(data, dict) else None
    if not isinstance(events, list):
        return ImportMode.PLAIN
    events = [event for event in events if isinstance(event, dict)]
    if judged and any(event.get("event_type") == "AGENT" for event in events):
        return ImportMode.BENCHMARK
    ends_of_turn = {
        event["event_id"]
        for event in events
        if isinstance(event.get("event_id"), str)
        and event.get("event_type") == "AGENT"
        and _calls(event, _END_OF_TURN)
    }
    for event in events:
        dependencies = event.get("dependencies")
        if (
            event.get("event_type") in ("USER", "ENV")
            and isinstance(dependencies, list)
            and any(isinstance(d, str) and d in ends_of_turn for d in dependencies)
        ):
            return ImportMode.BENCHMARK
    return ImportMode.PLAIN


_END_OF_TURN = ("AgentUserInterface", "send_message_to_user")


def _calls(event: dict[str, Any], target: tuple[str, str]) -> bool:
    action = event.get("action")
    return isinstance(action, dict) and (action.get("app"), action.get("function")) == target


def _benchmark(data: dict[str, Any], origin: str, judge: JudgeOptions | None) -> Scenario:
    """Gaia2's runner path: import_from_json_to_benchmark, then preprocess_scenario without a
    judge, or ARE's preprocess_scenario_from_config with `judge` (`areasync.bridge.judge.llm`)."""
    from are.simulation.scenarios.scenario_imported_from_json.utils import preprocess_scenario

    metadata = data.get("metadata")
    definition = metadata.get("definition") if isinstance(metadata, dict) else None
    if not data.get("apps") and isinstance(definition, dict) and definition.get("hf_metadata"):
        raise ScenarioError(
            f"{origin} has no apps and names a Hugging Face dataset to fetch them from "
            "(metadata.definition.hf_metadata); areasync downloads nothing: use the scenario's "
            "complete JSON, apps included"
        )
    try:
        scenario = import_benchmark(data)  # ARE's importer, in pieces (json_import.py)
    except Exception as exc:
        raise ScenarioError(_not_a_scenario(origin, exc)) from exc
    try:
        if judge is None:
            preprocess_scenario(scenario, judge_config=None)  # initialises it, then wires turns
        else:
            from areasync.bridge.judge.llm import preprocess_judged

            preprocess_judged(scenario, judge)  # the same, after the oracle pre-run
    except Exception as exc:
        if not scenario._initialized:
            raise ScenarioError(_failed_to_initialise(scenario, exc)) from exc
        if judge is not None and getattr(scenario, "judge", None) is None and _has_oracle(data):
            # Initialised, but ARE failed before it set the judge: its oracle pre-run (the
            # judge's reference) or the judge's construction.
            raise ScenarioError(
                f"ARE could not set up Gaia2's judge for {origin}: {_first_line(exc)} (ARE "
                "runs the scenario's oracle events once as the judge's reference, and they "
                "must all succeed); check the scenario's oracle events, or create the session "
                "with import_mode 'plain' to run it unjudged"
            ) from exc
        raise _TurnsRefusedError(
            f"{origin} cannot be run as a Gaia2 benchmark scenario: ARE's preprocess_scenario "
            f"refused its turns ({_first_line(exc)}); in Gaia2 a turn's user and env events "
            "wait on no oracle event but the previous turn's end (the oracle's "
            "AgentUserInterface.send_message_to_user). Load it with import_mode 'plain' to run "
            "it as exported (a live agent then never gets past that turn)"
        ) from exc
    return scenario


def _has_oracle(data: dict[str, Any]) -> bool:
    events = data.get("events")
    return isinstance(events, list) and any(
        isinstance(event, dict) and event.get("event_type") == "AGENT" for event in events
    )


class _TurnsRefusedError(ScenarioError):
    """ARE's preprocess_scenario initialised the scenario but refused to rewire its turns."""


def _not_a_scenario(origin: str, exc: BaseException) -> str:
    return (
        f"{origin} is not an ARE scenario in JSON form ({_first_line(exc)}); "
        "export one with ARE's JsonScenarioExporter"
    )


def _failed_to_initialise(scenario: Scenario, exc: BaseException) -> str:
    return (
        f"scenario {getattr(scenario, 'scenario_id', '?')!r} failed to initialise: "
        f"{_first_line(exc)}"
    )


def load(
    source: str | os.PathLike[str] | Scenario,
    *,
    import_mode: ImportMode | str = ImportMode.AUTO,
    oracle: bool = False,
    judge: JudgeOptions | None = None,
    max_scenario_bytes: int = DEFAULT_MAX_SCENARIO_BYTES,
    **init_kwargs: Any,
) -> Scenario:
    """Resolve `source` to an initialised Scenario.

    `source` is a Scenario (used as is), a path to a JSON file, JSON text (starts with `{`), or
    a registered scenario id. `import_mode` says how JSON is imported (`auto`, `benchmark`,
    `plain`; see the module docstring); `oracle` tells `auto` whether the scenario will run in
    ARE's oracle mode; `judge`, which LLM judges a benchmark import (none: not judged).
    `max_scenario_bytes`: the operator's limit on a JSON file (`operator_files`), checked before
    it is read.
    `init_kwargs` go to `Scenario.initialize` (not with a benchmark import: ARE's
    preprocess_scenario initialises the scenario itself).
    """
    mode = parse_import_mode(import_mode)
    if isinstance(source, Scenario):
        scenario = source
    elif names_a_file(source):
        path = Path(source)
        if not path.is_file():
            raise ScenarioError(f"scenario file {str(path)!r} does not exist; check the path")
        check_file(path, max_scenario_bytes)
        scenario = from_json(
            path.read_bytes(),
            origin=f"scenario file {str(path)!r}",
            import_mode=mode,
            oracle=oracle,
            judge=judge,
            max_bytes=max_scenario_bytes,
        )
    elif isinstance(source, str) and source.lstrip().startswith("{"):
        scenario = from_json(source, import_mode=mode, oracle=oracle, judge=judge)
    elif isinstance(source, str):
        scenario = from_registry(source)
    else:
        raise ScenarioError(
            f"cannot load a scenario from {type(source).__name__}: pass a registered id, "
            "a JSON file path, JSON text or an ARE Scenario"
        )
    if not scenario._initialized:
        try:
            scenario.initialize(**init_kwargs)
        except Exception as exc:
            raise ScenarioError(_failed_to_initialise(scenario, exc)) from exc
    elif init_kwargs and scenario is not source:  # a benchmark import, initialised already
        raise ValueError(
            "initialisation arguments cannot be passed with a benchmark import: ARE's "
            "preprocess_scenario initialises the scenario itself"
        )
    confine_file_systems(scenario)
    return scenario


# -- detaching a finished scenario's apps ---------------------------------------------------

# What ARE's Environment.register_apps hands an app that points back at the environment.
_ENV_LINKS = ("pause_env", "resume_env", "wait_for_next_notification")


def detach_apps(scenario: Scenario) -> None:
    """Cut the apps of a finished scenario loose from their environment.

    Call it once the scenario's session is over and forgotten: its apps then log nothing more.
    Why: a server runs scenario after scenario in one process, and ARE keeps per-instance
    objects in class-level state. Every `AppTool` sets itself as an attribute of its method's
    *function* (shared by every instance of the app class), and every `Action` created later - a
    scenario's events, each completed event - picks up whichever AppTool that is, very likely
    another session's. Through it, the AppTool's app and the app's callbacks into its
    environment, a session's log kept another session's whole environment alive: memory grew
    with every session served. Detached, whatever still points at one of its apps holds that
    app alone. fsspec's instance cache likewise kept every sandbox file system's
    `FallbackFileSystem`: dropped here too.
    """
    from are.simulation.apps.sandbox_file_system import SandboxLocalFileSystem

    for app in getattr(scenario, "apps", None) or []:
        app.add_event_callbacks = {}
        for name in _ENV_LINKS:
            if name in vars(app):
                setattr(app, name, None)
        if isinstance(app, SandboxLocalFileSystem):
            # fsspec caches every file system instance it builds, by constructor arguments:
            # each sandbox's is unique, so the cache only ever grows. Live apps keep their own.
            type(app.local_fs).clear_instance_cache()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"
