"""Scenario loading: a registered id, an ARE/Gaia2 JSON file or string, or a Scenario object.

Whatever the source, the result is an initialised ARE `Scenario`, ready for
`Environment.run`. Failures raise `ScenarioError` with a message that says what was wrong and
what to do; nothing is half-built.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from are.simulation.scenarios.scenario import Scenario

# Gaia2 scenario files are a few MB at most; anything far larger is refused before parsing.
MAX_JSON_BYTES = 64 * 1024 * 1024


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

    if len(text) > MAX_JSON_BYTES:
        raise ScenarioError(
            f"{origin} is {len(text)} bytes, above the {MAX_JSON_BYTES}-byte limit for scenarios"
        )
    try:
        json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ScenarioError(f"{origin} is not valid JSON ({exc}); check the file") from exc
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
    return scenario


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"
