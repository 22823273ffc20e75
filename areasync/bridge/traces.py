"""The ARE-format JSON trace of an ended session, as ARE's own runner writes it.

ARE's `scenario_runner._export_trace` hands the environment, the scenario and the validation
verdict to `JsonScenarioExporter`; we do the same with the session's environment, so the file is
what ARE users already read back with `JsonScenarioImporter` (scenario definition, app states,
scenario events and the completed event log). We write the file ourselves (atomically, under a
name unique to the session instance) rather than through `export_to_json_file`, whose file name
is the scenario's run id: two sessions of one scenario would overwrite each other.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from are.simulation.data_handler.exporter import JsonScenarioExporter
from are.simulation.scenarios.scenario import ScenarioStatus

from areasync.protocol.records import Validation


def _exception_of(validation: Validation | None) -> Exception | None:
    """The validation's exception (kept as "Type: message" text) as an exception object.

    ARE's exporter records `type(exc).__name__` and `str(exc)`; rebuilding an exception of the
    same type name keeps both fields as ARE's runner would have written them.
    """
    text = None if validation is None else validation.exception
    if not text:
        return None
    name, sep, message = str(text).partition(": ")
    if not sep or not name.isidentifier():
        return Exception(str(text))
    return type(name, (Exception,), {})(message)


def export_trace(
    env: Any,
    scenario: Any,
    validation: Validation | None,
    *,
    agent_id: str | None = None,
) -> str:
    """The trace as JSON text (ARE's "hf" trace format, as `_export_trace` writes it)."""
    success = validation is not None and validation.success is True
    decision = ScenarioStatus.Valid.value if success else ScenarioStatus.Invalid.value
    exported: str = JsonScenarioExporter().export_to_json(
        env,
        scenario,
        scenario.scenario_id,
        runner_config=None,
        model_id=None,
        agent_id=agent_id,
        validation_decision=decision,
        export_apps=True,
        scenario_exception=_exception_of(validation),
    )
    return exported


def write_trace(
    directory: Path,
    name: str,
    env: Any,
    scenario: Any,
    validation: Validation | None,
    *,
    agent_id: str | None = None,
) -> Path:
    """Write the trace to `directory/name.json` (atomically: readers never see half a file);
    the path written is returned. `name` must be a safe file name (no separators, no leading
    dot, short enough: the service makes it one)."""
    text = export_trace(env, scenario, validation, agent_id=agent_id)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.json"
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
