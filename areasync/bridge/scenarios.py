"""Scenario loading: a registered id, an ARE/Gaia2 JSON file or string, or a Scenario object.

Whatever the source, the result is an initialised ARE `Scenario`, ready for
`Environment.run`. Failures raise `ScenarioError` with a message that says what was wrong and
what to do; nothing is half-built.

JSON scenarios are untrusted input (an admin may upload one over the socket), so they are vetted
(`vet_json`) before ARE's importer sees them: size, nesting depth, clock numbers, and what they
may name. ARE's importer only instantiates classes from its own `ALL_APPS` (an unknown class is
skipped with a log line, never imported), but an event's `function` is resolved with a bare
`getattr(app, function)`: any attribute, private or dunder (`__init__`, `load_state`,
`_validate_path`). So an event may name only a public method ARE marked as a tool or as
event-registered, of an app the scenario declares with one of ARE's own app classes.

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

import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
from are.simulation.scenarios.scenario import Scenario

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


def from_json(text: str | bytes, *, origin: str = "inline JSON") -> Scenario:
    """An ARE/Gaia2 JSON scenario (the format of ARE's `JsonScenarioExporter`)."""
    from are.simulation.data_handler.importer import JsonScenarioImporter

    vet_json(text, origin=origin)
    try:
        scenario, _events, _logs = JsonScenarioImporter().import_from_json(
            text, load_completed_events=False
        )
    except Exception as exc:
        raise ScenarioError(
            f"{origin} is not an ARE scenario in JSON form ({_first_line(exc)}); "
            "export one with ARE's JsonScenarioExporter"
        ) from exc
    return scenario


def load(source: str | os.PathLike[str] | Scenario, **init_kwargs: Any) -> Scenario:
    """Resolve `source` to an initialised Scenario.

    `source` is a Scenario (used as is), a path to a JSON file, JSON text (starts with `{`), or
    a registered scenario id.
    """
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
        scenario = from_json(path.read_bytes(), origin=f"scenario file {str(path)!r}")
    elif isinstance(source, str) and source.lstrip().startswith("{"):
        scenario = from_json(source)
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
            raise ScenarioError(
                f"scenario {getattr(scenario, 'scenario_id', '?')!r} failed to initialise: "
                f"{_first_line(exc)}"
            ) from exc
    confine_file_systems(scenario)
    return scenario


# -- vetting untrusted JSON -----------------------------------------------------------------


def vet_json(text: str | bytes, *, origin: str = "inline JSON") -> None:
    """Refuse, before any work, JSON that ARE should not be handed (see the module docstring).

    Checks size, that it parses (strict JSON: no NaN), nesting depth, the clock numbers of
    its definition, the class of each app and the method each event calls. Cheap: one C
    parse and one walk, no ARE object is built. Raises ScenarioError saying what to fix.
    """
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
    for index, event in enumerate(events):
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
    """Give every sandboxed file-system app of `scenario` a strict path check (see above)."""
    from are.simulation.apps.sandbox_file_system import SandboxLocalFileSystem

    for app in getattr(scenario, "apps", None) or []:
        if isinstance(app, SandboxLocalFileSystem) and "_validate_path" not in vars(app):
            # An instance attribute shadows the class's method for this app only.
            app._validate_path = _confined(app._validate_path, app.tmpdir)


def _confined(are_check: Callable[[str], str], tmpdir: str) -> Callable[[str], str]:
    root = os.path.realpath(tmpdir)

    def validate_path(path: str) -> str:
        refused = PermissionError(f"operation not allowed outside the sandbox: {path!r}")
        try:
            full_path = are_check(path)  # ARE's mapping: "/" is the sandbox root, "~" home
        except PermissionError:
            raise refused from None
        real = os.path.realpath(full_path)
        if real != root and os.path.commonpath([root, real]) != root:
            raise refused
        return full_path

    return validate_path


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"
