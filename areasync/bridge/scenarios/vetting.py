"""Vetting of untrusted scenario JSON, before ARE's importer sees it.

JSON scenarios are untrusted input (an admin may upload one over the socket), so whichever the
import they are checked first: size, nesting depth, clock numbers, and what they may name. ARE's
importer only instantiates classes from its own `ALL_APPS` (an unknown class is skipped with a
log line, never imported), but an event's `function` is resolved with a bare
`getattr(app, function)`: any attribute, private or dunder (`__init__`, `load_state`,
`_validate_path`). So an event may name only a public method ARE marked as a tool or as
event-registered, of an app the scenario declares with one of ARE's own app classes.
"""

from __future__ import annotations

import math
from typing import Any

import msgspec

from areasync.protocol.errors import CodedError, ErrorCode

__all__ = [
    "MAX_JSON_BYTES",
    "MAX_JSON_DEPTH",
    "MAX_TIMESTAMP",
    "ScenarioError",
    "importable_app_classes",
    "vet_json",
    "vetted_json",
]

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


# Defined in the lowest of the scenario modules so that vetting can raise it; loading
# (`areasync.bridge.scenarios.loading`) raises it too and lists it as part of its API.
class ScenarioError(CodedError, ValueError):
    """The scenario could not be loaded; nothing was created."""

    code = ErrorCode.INVALID_FIELD


def vet_json(
    text: str | bytes, *, origin: str = "inline JSON", max_bytes: int = MAX_JSON_BYTES
) -> None:
    """Refuse, before any work, JSON that ARE should not be handed (see the module docstring).

    Checks size, that it parses (strict JSON: no NaN), nesting depth, the clock numbers of
    its definition, the class of each app, the method each event calls and that no two events
    share an id. Cheap: one C parse and one walk, no ARE object is built. Raises ScenarioError
    saying what to fix.
    """
    vetted_json(text, origin, max_bytes)


def vetted_json(text: str | bytes, origin: str, max_bytes: int = MAX_JSON_BYTES) -> dict[str, Any]:
    """`vet_json`, returning the decoded document; `max_bytes`: the largest accepted (an
    operator's file may be allowed more than `MAX_JSON_BYTES`, see `operator_files`)."""
    if len(text) > max_bytes:
        raise ScenarioError(
            f"{origin} is {len(text)} bytes, above the {max_bytes}-byte limit for scenarios"
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


def importable_app_classes() -> dict[str, type]:
    """The classes ARE's JSON importer can build, by name: exactly its `ALL_APPS`."""
    from are.simulation.apps import ALL_APPS

    return {cls.__name__: cls for cls in ALL_APPS}


def _vet_apps(apps: Any, origin: str) -> dict[str, type]:
    """Every app's class must be one of ARE's own; returns app name -> class."""
    known = importable_app_classes()
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
