"""Scenario loading: a registered id, an ARE/Gaia2 JSON file or string, or a Scenario object.

Whatever the source, the result is an initialised ARE `Scenario`, ready for
`Environment.run`. Failures raise `ScenarioError` with a message that says what was wrong and
what to do; nothing is half-built.

Two ways to import JSON (`ImportMode`)
    ARE's export format is also the format of Gaia2's scenarios, and ARE imports it two ways:
    `plain` (`JsonScenarioImporter.import_from_json`: ARE's `are-run --json_file`, its GUI) and
    `benchmark`, the way Gaia2's runner does (`are-benchmark`: `import_from_json_to_benchmark`,
    then `preprocess_scenario`, here with `judge_config=None`). In a plain import the user
    message that opens a later turn hangs off the oracle's end-of-turn `send_message_to_user`
    (an OracleEvent), which only oracle mode runs: a live agent never gets turn 2. The benchmark
    import rewires each turn through a `condition_turn_N` ConditionCheckEvent checked every tick,
    which opens the turn once the *agent* has sent N messages to the user; with no judge,
    validation returns `success=None` (ARE's "no validation"), as Gaia2's runner does without an
    LLM judge. It also adds a SystemApp when the JSON declares none.

    ARE chooses by command, not by file: nothing in the JSON says "Gaia2". So `auto` (the
    default) looks at what decides whether a live agent can play the plain import, the event
    graph: it picks `benchmark` when a USER or ENV event depends on an oracle (AGENT)
    `AgentUserInterface.send_message_to_user` event - a later turn waiting on the oracle's end
    of turn, exactly what `preprocess_scenario` rewires - unless the run is in oracle mode;
    otherwise `plain`. In oracle mode the oracle sends those messages itself, so the plain
    import reaches every turn, and Gaia2's runner does not rewire an oracle run's turns either
    (`preprocess_scenario_from_config`). So `auto` keeps the plain import for everything a live
    agent can play through it (single-turn scenarios, exports whose later turns do not wait on
    the oracle, any oracle run) and switches only where the plain import would leave the agent
    in turn 1 for ever; should ARE's `preprocess_scenario` refuse the turns of a scenario `auto`
    picked it for, `auto` imports it plain, as before, with a warning. An explicit `benchmark`
    or `plain` wins, in any mode (a refused benchmark import is then an error). `import_mode`
    has no effect on registered ids and Scenario objects (they are not imported from JSON).

With a judge (`JudgeOptions`: `areasync serve --judge_*`)
    The benchmark import is then Gaia2's runner's with its judge: ARE's
    `preprocess_scenario_from_config` as `are-benchmark run` calls it (`areasync.bridge.judge`:
    the oracle pre-run, the judge, 1,800 s or 420 s for the Time capability, turns that the
    judge opens). Scoring needs that import, so `auto` then picks `benchmark` for every JSON
    scenario with an oracle event that is not run in oracle mode (single-turn ones too: with
    nothing to wait on, ARE's plain import would be validated as ARE validates any scenario,
    which says nothing of the agent's work); oracle runs are never judged, as in
    `are-benchmark run --oracle`.

JSON scenarios are untrusted input (an admin may upload one over the socket), so they are vetted
(`vet_json`) before ARE's importer sees them, whichever the import: size, nesting depth, clock
numbers, and what they may name. ARE's importer only instantiates classes from its own
`ALL_APPS` (an unknown class is skipped with a log line, never imported), but an event's
`function` is resolved with a bare `getattr(app, function)`: any attribute, private or dunder
(`__init__`, `load_state`, `_validate_path`). So an event may name only a public method ARE
marked as a tool or as event-registered, of an app the scenario declares with one of ARE's own
app classes. The benchmark import is also refused a JSON without apps that names a Hugging Face
dataset (`metadata.definition.hf_metadata`): ARE's benchmark importer would download its apps.

File-system apps (`SandboxLocalFileSystem`, `Files`) are confined after initialisation
(`confine_file_systems`): ARE checks a path with a plain string prefix test
(`full_path.startswith(tmpdir)`), which lets `/../<sandbox name>_x/...` write beside the sandbox,
and its error messages reveal the sandbox name. The confined check compares whole path components
of the resolved path (symlinks included) with the sandbox root.

A server runs scenario after scenario in one process, and ARE keeps per-instance objects in
class-level state: every `AppTool` sets itself as an attribute of its method's *function* (shared
by every instance of the app class), and every `Action` created later - a scenario's events, each
completed event - picks up whichever AppTool that is, very likely another session's. Through it,
the AppTool's app and the app's callbacks into its environment, a session's log kept another
session's whole environment alive, which kept another's: memory grew with every session served.
`release` cuts a finished session's apps loose from their environment once the server forgets the
session, so whatever still points at one of its apps holds that app alone. (fsspec's instance
cache likewise kept every sandbox file system's `FallbackFileSystem`; `release` drops those.)
"""

from __future__ import annotations

import enum
import logging
import math
import os
from pathlib import Path
from typing import Any

import msgspec
from are.simulation.scenarios.scenario import Scenario

from areasync.bridge.json_import import import_benchmark, import_plain
from areasync.bridge.judge_options import JudgeOptions

logger = logging.getLogger(__name__)

# Gaia2 scenario files are a few MB at most; anything far larger is refused before parsing.
MAX_JSON_BYTES = 64 * 1024 * 1024
# Nesting of a scenario's JSON. Real scenarios stay far below (a file-system tree adds two
# levels per directory); every consumer downstream (pydantic, ARE's load_state, the trace
# exporter, msgspec) recurses, so a deep document is refused up front with a clear message.
MAX_JSON_DEPTH = 100
# Simulated times are seconds since the epoch; ARE turns them into datetimes (year <= 9999).
MAX_TIMESTAMP = 253_402_300_799.0
# Marks ARE puts on the methods a scenario's events may call: tools of each kind, and
# `event_registered` (every method that logs an event when it runs).
_CALLABLE_MARKS = (
    "__event_registered__",
    "_is_app_tool",
    "_is_env_tool",
    "_is_user_tool",
    "_is_data_tool",
)


class ScenarioError(ValueError):
    """The scenario could not be loaded; nothing was created."""


class ImportMode(enum.StrEnum):
    """How a JSON scenario is imported (see the module docstring)."""

    AUTO = "auto"  # benchmark for a multi-turn Gaia2 scenario played by an agent, else plain
    BENCHMARK = "benchmark"  # Gaia2's runner: import_from_json_to_benchmark + preprocess_scenario
    PLAIN = "plain"  # JsonScenarioImporter.import_from_json


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
) -> Scenario:
    """An ARE/Gaia2 JSON scenario (the format of ARE's `JsonScenarioExporter`), vetted first.

    `plain` returns the imported scenario, not yet initialised; `benchmark` returns it
    preprocessed as Gaia2's runner does (initialised, turns rewired), judged by `judge` unless
    the run is in oracle mode. `auto` picks one for a run in oracle mode or not (`oracle`),
    with a judge or not, see the module docstring.
    """
    mode = parse_import_mode(import_mode)
    data = _vetted(text, origin)
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


def detect_import_mode(
    data: str | bytes | dict[str, Any],
    *,
    oracle: bool = False,
    origin: str = "inline JSON",
    judged: bool = False,
) -> ImportMode:
    """What `auto` picks for a JSON scenario (text, vetted first, or decoded): BENCHMARK or
    PLAIN (see the module docstring).

    BENCHMARK when a USER or ENV event depends on an oracle (AGENT)
    `AgentUserInterface.send_message_to_user` event, i.e. a later turn waits on the oracle's end
    of turn, and the run is not in oracle mode; `judged` (a judge will score the run), when the
    scenario has any oracle event and the run is not in oracle mode.
    """
    if isinstance(data, str | bytes):
        data = _vetted(data, origin)
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
    judge, or ARE's preprocess_scenario_from_config with `judge` (`areasync.bridge.judge`)."""
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
            from areasync.bridge.judge import preprocess_judged

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
    **init_kwargs: Any,
) -> Scenario:
    """Resolve `source` to an initialised Scenario.

    `source` is a Scenario (used as is), a path to a JSON file, JSON text (starts with `{`), or
    a registered scenario id. `import_mode` says how JSON is imported (`auto`, `benchmark`,
    `plain`; see the module docstring); `oracle` tells `auto` whether the scenario will run in
    ARE's oracle mode; `judge`, which LLM judges a benchmark import (none: not judged).
    `init_kwargs` go to `Scenario.initialize` (not with a benchmark import: ARE's
    preprocess_scenario initialises the scenario itself).
    """
    mode = parse_import_mode(import_mode)
    if isinstance(source, Scenario):
        scenario = source
    elif isinstance(source, os.PathLike) or (
        isinstance(source, str) and source.endswith(".json") and not source.lstrip().startswith("{")
    ):
        path = Path(source)
        if not path.is_file():
            raise ScenarioError(f"scenario file {str(path)!r} does not exist; check the path")
        if path.stat().st_size > MAX_JSON_BYTES:
            raise ScenarioError(f"scenario file {str(path)!r} is above {MAX_JSON_BYTES} bytes")
        scenario = from_json(
            path.read_bytes(),
            origin=f"scenario file {str(path)!r}",
            import_mode=mode,
            oracle=oracle,
            judge=judge,
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


# -- vetting untrusted JSON -----------------------------------------------------------------


def vet_json(text: str | bytes, *, origin: str = "inline JSON") -> None:
    """Refuse, before any work, JSON that ARE should not be handed (see the module docstring).

    Checks size, that it parses (strict JSON: no NaN), nesting depth, the clock numbers of
    its definition, the class of each app, the method each event calls and that no two events
    share an id. Cheap: one C parse and one walk, no ARE object is built. Raises ScenarioError
    saying what to fix.
    """
    _vetted(text, origin)


def _vetted(text: str | bytes, origin: str) -> dict[str, Any]:
    """`vet_json`, returning the decoded document."""
    if len(text) > MAX_JSON_BYTES:
        raise ScenarioError(
            f"{origin} is {len(text)} bytes, above the {MAX_JSON_BYTES}-byte limit for scenarios"
        )
    try:
        data = msgspec.json.decode(text)
    except RecursionError:
        raise ScenarioError(_too_deep(origin)) from None
    except (msgspec.DecodeError, ValueError) as exc:  # UnicodeDecodeError is a ValueError
        raise ScenarioError(f"{origin} is not valid JSON ({exc}); check the file") from None
    if _deeper_than(data, MAX_JSON_DEPTH):
        raise ScenarioError(_too_deep(origin))
    if not isinstance(data, dict):
        raise ScenarioError(
            f"{origin} is not an ARE scenario: expected a JSON object (the text ARE's "
            "JsonScenarioExporter writes)"
        )
    _vet_definition(data, origin)
    classes = _vet_apps(data.get("apps"), origin)
    _vet_events(data.get("events"), classes, origin)
    return data


def _too_deep(origin: str) -> str:
    return (
        f"{origin} nests deeper than {MAX_JSON_DEPTH} levels; ARE scenarios are far flatter: "
        "check the file"
    )


def _deeper_than(value: Any, limit: int) -> bool:
    """Is any container in `value` nested more than `limit` levels deep? (iterative)"""
    stack: list[tuple[Any, int]] = [(value, 1)] if isinstance(value, dict | list) else []
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        children = node.values() if isinstance(node, dict) else node
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _vet_definition(data: dict[str, Any], origin: str) -> None:
    metadata = data.get("metadata")
    definition = metadata.get("definition") if isinstance(metadata, dict) else None
    if not isinstance(definition, dict):
        return  # ARE's importer reports the missing definition itself
    problems = []
    increment = definition.get("time_increment_in_seconds")
    if increment is not None and not (isinstance(increment, int) and increment >= 1):
        problems.append(f"time_increment_in_seconds must be a whole number >= 1, got {increment!r}")
    for name, low, high in (
        ("start_time", 0.0, MAX_TIMESTAMP),
        ("duration", 0.0, MAX_TIMESTAMP),
    ):
        value = definition.get(name)
        if value is None:
            continue
        number = _number(value)
        if number is None or not math.isfinite(number) or not low <= number <= high:
            problems.append(f"{name} must be a number of seconds in [{low:g}, {high:g}]")
    if problems:
        raise ScenarioError(f"{origin}: metadata.definition: " + "; ".join(problems))


def _app_classes() -> dict[str, type]:
    """The classes ARE's JSON importer can build, by name: exactly its `ALL_APPS`."""
    from are.simulation.apps import ALL_APPS

    return {cls.__name__: cls for cls in ALL_APPS}


def _vet_apps(apps: Any, origin: str) -> dict[str, type]:
    """Every app's class must be one of ARE's own; returns app name -> class."""
    known = _app_classes()
    by_name: dict[str, type] = {}
    for cls_name in ("SystemApp", "AgentUserInterface"):  # the importer adds these two
        by_name[cls_name] = known[cls_name]
    if apps is None:
        return by_name
    if not isinstance(apps, list):
        raise ScenarioError(f"{origin}: `apps` must be a list of apps")
    for index, app in enumerate(apps):
        if not isinstance(app, dict) or not isinstance(app.get("name"), str):
            raise ScenarioError(f"{origin}: apps[{index}] must be an object with a `name`")
        class_name = app.get("class_name") or app["name"]
        cls = known.get(class_name) if isinstance(class_name, str) else None
        if cls is None:
            raise ScenarioError(
                f"{origin}: app {app['name']!r} names class {class_name!r}, which is not one of "
                f"ARE's app classes its importer can build ({', '.join(sorted(known))})"
            )
        by_name[app["name"]] = cls
    return by_name


def _vet_events(events: Any, classes: dict[str, type], origin: str) -> None:
    """Every event action must call a public, ARE-marked method of a declared app."""
    if events is None:
        return
    if not isinstance(events, list):
        raise ScenarioError(f"{origin}: `events` must be a list of events")
    seen: set[Any] = set()
    for index, event in enumerate(events):
        event_id = event.get("event_id") if isinstance(event, dict) else None
        if isinstance(event_id, str):
            # ARE links dependencies by id, and two events of one id get each other's
            # dependencies mixed up; the linear import (event_import.py) relies on unique ids.
            if event_id in seen:
                raise ScenarioError(
                    f"{origin}: events[{index}] repeats the event id {event_id!r}; every event "
                    "needs its own id (dependencies name events by id)"
                )
            seen.add(event_id)
        action = event.get("action") if isinstance(event, dict) else None
        if not isinstance(action, dict) or action.get("app") is None:
            continue  # no action, or a condition (ARE resolves those from a fixed table)
        app, function = action.get("app"), action.get("function")
        where = f"{origin}: events[{index}] ({event.get('event_id')!r})"
        cls = classes.get(app) if isinstance(app, str) else None
        if cls is None:
            raise ScenarioError(f"{where} calls app {app!r}, which the scenario does not declare")
        if not _callable_by_events(cls, function):
            raise ScenarioError(
                f"{where} calls {app}.{function}, which is not a tool or event-registered method "
                f"of {cls.__name__}; events may only call those"
            )


def _callable_by_events(cls: type, function: Any) -> bool:
    if not isinstance(function, str) or not function or function.startswith("_"):
        return False
    method = getattr(cls, function, None)
    return callable(method) and any(getattr(method, mark, False) for mark in _CALLABLE_MARKS)


# -- releasing a finished scenario ----------------------------------------------------------

# What ARE's Environment.register_apps hands an app that points back at the environment.
_ENV_LINKS = ("pause_env", "resume_env", "wait_for_next_notification")


def release(scenario: Scenario) -> None:
    """Cut the apps of a finished scenario loose from their environment (see the module doc).

    Call it once the scenario's session is over and forgotten: its apps then log nothing more.
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


# -- confining file-system apps -------------------------------------------------------------


def confine_file_systems(scenario: Scenario) -> None:
    """Give every sandboxed file-system app of `scenario` a strict path check (see above and
    `areasync.bridge.sandbox.confine_file_system`)."""
    from are.simulation.apps.sandbox_file_system import SandboxLocalFileSystem

    from areasync.bridge.sandbox import confine_file_system

    for app in getattr(scenario, "apps", None) or []:
        if isinstance(app, SandboxLocalFileSystem):
            confine_file_system(app)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"
