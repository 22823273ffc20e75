"""A tiny Gaia2-shaped dataset, exported by ARE, in the folder layout `are-benchmark run -d` reads.

Each scenario is written as Gaia2's JSON (one turn: a user task at the start, then the oracle's
actions ending with `send_message_to_user`), imported with ARE's
`import_from_json_to_benchmark` and exported again with ARE's `JsonScenarioExporter`, so the
files are exactly what ARE's exporter writes. They go to `DIR/<config>/<split>/<id>.json`, the
layout ARE's local loader (`find_scenario_paths`) walks for `-d DIR --config C --split S`.

`agent_scripts()` gives the stub LLM's script for each scenario, keyed by the task's marker:
`tiny_email` is played exactly as the oracle would (the judge should accept it),
`tiny_skip` leaves out the oracle's email (the judge should reject it).
"""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import Any

CONFIG = "execution"
SPLIT = "validation"
START_TIME = 1728979200.0

EMAIL = {
    "action": "EmailClientV2__send_email",
    "action_input": {"recipients": ["bob@example.com"], "subject": "Hi", "content": "Hello Bob"},
}
DONE = {
    "action": "AgentUserInterface__send_message_to_user",
    "action_input": {"content": "Done: I emailed Bob."},
}


def _arg(name: str, value: str, value_type: str = "str") -> dict[str, Any]:
    return {"name": name, "value": value, "value_type": value_type}


def _event(
    event_id: str,
    event_type: str,
    dependencies: list[str],
    relative_time: float,
    app: str,
    function: str,
    args: list[dict[str, Any]],
) -> dict[str, Any]:
    oracle = event_type == "AGENT"
    event: dict[str, Any] = {
        "class_name": "OracleEvent" if oracle else "Event",
        "event_type": event_type,
        "event_time": None,
        "event_id": event_id,
        "dependencies": dependencies,
        "event_relative_time": relative_time,
        "action": {
            "action_id": "" if oracle else f"{app}.{function}-{event_id}",
            "app": app,
            "function": function,
            "operation_type": None if oracle else "WRITE",
            "args": args,
        },
    }
    if oracle:
        event["event_time_comparator"] = None
    return event


def scenario_json(scenario_id: str, marker: str) -> str:
    """One single-turn Gaia2 scenario: email Bob, then tell the user; as ARE's JSON."""
    from are.simulation.apps import SystemApp
    from are.simulation.apps.agent_user_interface import AgentUserInterface
    from are.simulation.apps.contacts import Contact, ContactsApp
    from are.simulation.apps.email_client import EmailClientV2

    # ARE's judge reads the user's name from the contacts (the contact with is_user).
    contacts = ContactsApp()
    contacts.add_contact(
        Contact(first_name="Ada", last_name="User", is_user=True, email="user@meta.com")
    )
    contacts.add_contact(Contact(first_name="Bob", last_name="Smith", email="bob@example.com"))
    task = f"[{marker}] Email bob@example.com with subject 'Hi' saying 'Hello Bob', then tell me."
    events = [
        _event(
            "user0",
            "USER",
            [],
            0.0,
            "AgentUserInterface",
            "send_message_to_agent",
            [_arg("content", task)],
        ),
        _event(
            "email0",
            "AGENT",
            ["user0"],
            1.0,
            "EmailClientV2",
            "send_email",
            [
                _arg("recipients", '["bob@example.com"]', "list[str]"),
                _arg("subject", "Hi"),
                _arg("content", "Hello Bob"),
            ],
        ),
        _event(
            "done0",
            "AGENT",
            ["email0"],
            1.0,
            "AgentUserInterface",
            "send_message_to_user",
            [_arg("content", "Done: I emailed Bob.")],
        ),
    ]
    definition = {
        "scenario_id": scenario_id,
        "seed": 0,
        "duration": 60.0,
        "time_increment_in_seconds": 1,
        "start_time": START_TIME,
        "hints": [],
        "tags": ["Execution"],
    }
    document = {
        "version": "are_simulation_v1",
        "context": "",
        "metadata": {"definition": definition},
        "apps": [
            {"name": app.name, "class_name": type(app).__name__, "app_state": app.get_state()}
            for app in (AgentUserInterface(), contacts, EmailClientV2(), SystemApp())
        ],
        "events": events,
        "completed_events": [],
        "world_logs": [],
        "augmentation": None,
    }
    return _through_ares_exporter(json.dumps(document, default=_enum_value))


def _enum_value(value: object) -> object:
    if isinstance(value, Enum):
        return value.value
    raise TypeError(f"not JSON serializable: {value!r}")


def _through_ares_exporter(text: str) -> str:
    """Import with ARE's benchmark importer and export again with ARE's exporter."""
    from are.simulation.data_handler.exporter import JsonScenarioExporter
    from are.simulation.data_handler.importer import JsonScenarioImporter
    from are.simulation.environment import Environment, EnvironmentConfig

    scenario, _, _ = JsonScenarioImporter().import_from_json_to_benchmark(
        text, load_completed_events=False
    )
    scenario.initialize()
    # Never started: the exporter reads its (empty) event log and start time only.
    env = Environment(
        EnvironmentConfig(oracle_mode=True, queue_based_loop=True, start_time=scenario.start_time)
    )
    return JsonScenarioExporter().export_to_json(
        env=env, scenario=scenario, scenario_id=scenario.scenario_id, runner_config=None
    )


SCENARIOS = {"tiny_email": "task:email", "tiny_skip": "task:skip"}


def agent_scripts() -> dict[str, list[dict[str, Any]]]:
    """The stub agent's actions per scenario marker."""
    return {"task:email": [EMAIL, DONE], "task:skip": [DONE]}


def expected_verdicts() -> dict[str, bool]:
    """Which scenarios the judge accepts when the stub agent plays `agent_scripts()`."""
    return {"tiny_email": True, "tiny_skip": False}


def write_dataset(root: str | Path, config: str = CONFIG, split: str = SPLIT) -> Path:
    """Write the tiny dataset under `root/config/split/` and return `root`."""
    root = Path(root)
    folder = root / config / split
    folder.mkdir(parents=True, exist_ok=True)
    for scenario_id, marker in SCENARIOS.items():
        (folder / f"{scenario_id}.json").write_text(
            scenario_json(scenario_id, marker), encoding="utf-8"
        )
    return root
