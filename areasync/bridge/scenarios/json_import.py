"""ARE's JSON importers, fed their document's long lists in pieces.

Why: a service imports uploaded scenarios in a worker thread so that the event loop keeps
serving (`service/sessions/session.py`), which works only as long as the import gives the
interpreter lock back every few milliseconds. Python code does (every 5 ms switch interval); one
long C call does not. ARE's importer starts with one: pydantic validates the whole document
(`ExportedTrace.model_validate_json`), a time that grows with the document, during which no
other thread runs (docs/topics/performance.md, "Design measurements").

What: the same validation in pieces. The document's `events` and `completed_events` (what grows
with a scenario) are validated by pydantic from JSON, with the model's own field types, a few
hundred at a time; the rest of the document, those two lists emptied, goes through ARE's own
importer (`import_from_json`, `import_from_json_to_benchmark`), which is then given the
validated events exactly where ARE's would have put them (`serialized_events`; completed events
are validated, as ARE does, but not loaded). JSON validated from JSON text, field by field with
ARE's types: the same objects, the same refusals (a refused piece is ARE's pydantic error).
The scenario then imports its events in linear time (`event_import.py`).
"""

from __future__ import annotations

from typing import Any

import msgspec
from are.simulation.data_handler.importer import JsonScenarioImporter
from are.simulation.data_handler.models import ExportedTraceBase
from are.simulation.scenarios.scenario_imported_from_json.benchmark_scenario import (
    BenchmarkScenarioImportedFromJson,
)
from are.simulation.scenarios.scenario_imported_from_json.scenario import (
    ScenarioImportedFromJson,
)
from pydantic import TypeAdapter

from areasync.bridge.scenarios.event_import import linear

# Items validated per pydantic call: ~100 KB of JSON, a few milliseconds each.
CHUNK = 256
_LISTS = ("events", "completed_events")
_ADAPTERS = {name: TypeAdapter(ExportedTraceBase.model_fields[name].annotation) for name in _LISTS}


def import_plain(data: dict[str, Any]) -> ScenarioImportedFromJson:
    """ARE's `import_from_json(..., load_completed_events=False)` of the decoded document."""
    rest, events = _split(data)
    scenario, _events, _logs = JsonScenarioImporter().import_from_json(
        rest, load_completed_events=False
    )
    scenario.serialized_events = events
    return linear(scenario)


def import_benchmark(data: dict[str, Any]) -> BenchmarkScenarioImportedFromJson:
    """ARE's `import_from_json_to_benchmark(..., load_completed_events=False)` of the decoded
    document (apps are never fetched: `scenarios.py` refuses a document that would need it)."""
    rest, events = _split(data)
    scenario, _events, _logs = JsonScenarioImporter().import_from_json_to_benchmark(
        rest, load_completed_events=False
    )
    scenario.serialized_events = events
    linear(scenario)
    return scenario


def _split(data: dict[str, Any]) -> tuple[bytes, list[Any]]:
    """(the document as JSON with its long lists emptied, its events validated by pydantic).

    A list that is not a list is left in the document, for ARE's importer to refuse."""
    rest = dict(data)
    validated: dict[str, list[Any]] = {}
    for name in _LISTS:
        items = data.get(name)
        if not isinstance(items, list):
            continue
        rest[name] = []
        adapter = _ADAPTERS[name]
        out: list[Any] = []
        for start in range(0, len(items), CHUNK):
            piece = msgspec.json.encode(items[start : start + CHUNK])
            out.extend(adapter.validate_json(piece))
        validated[name] = out
    events = validated.get("events")
    if events is None:  # absent: ARE's default (an empty list), or refused with the rest
        events = []
    return msgspec.json.encode(rest), events
