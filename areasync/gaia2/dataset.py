"""A tiny Gaia2-shaped dataset, exported by ARE, in the folder layout `are-benchmark run -d` reads.

Each scenario is written as Gaia2's JSON (a user task at the start, then the oracle's actions
ending with `send_message_to_user`; the `tiny_delay*` ones have a second turn: another user
message `delay` seconds of simulated time after the first turn ends), imported with ARE's
`import_from_json_to_benchmark` and exported again with ARE's `JsonScenarioExporter`, so the
files are exactly what ARE's exporter writes. They go to `DIR/<config>/<split>/<id>.json`, the
layout ARE's local loader (`find_scenario_paths`) walks for `-d DIR --config C --split S`.

`agent_scripts()` gives the stub LLM's script for each scenario, keyed by the task's marker:
`tiny_email` is played exactly as the oracle would (the judge should accept it),
`tiny_skip` leaves out the oracle's email (the judge should reject it). `tiny_delay` plays both
turns as the oracle would; `tiny_delay_skip` plays turn 1 right, then skips turn 2's email.

How ARE runs the second turn (`preprocess_scenario` -> `initialize_turns` ->
`build_turn_trigger`): the user's second message depends on the oracle's first
`send_message_to_user`; ARE cuts that dependency and hangs the message on a
`condition_turn_1` check event instead, which fires on the first tick after the agent's first
message to the user (running the judge on turn 1; a failing turn 1 stops the environment) and
schedules the second message `delay` seconds later. Meanwhile ARE's default agent has ended its
first turn and polls for notifications with `time.sleep(1)`: `delay` seconds of idling, in real
time under `are-benchmark run`, on the virtual wall under `areasync bench run`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from enum import Enum
from pathlib import Path
from typing import Any

CONFIG = "execution"
SPLIT = "validation"
START_TIME = 1728979200.0
# Simulated seconds between the end of turn 1 and the user's second message (`tiny_delay*`).
DELAY = 300.0

EMAIL = {
    "action": "EmailClientV2__send_email",
    "action_input": {"recipients": ["bob@example.com"], "subject": "Hi", "content": "Hello Bob"},
}
DONE = {
    "action": "AgentUserInterface__send_message_to_user",
    "action_input": {"content": "Done: I emailed Bob."},
}
EMAIL_AGAIN = {
    "action": "EmailClientV2__send_email",
    "action_input": {
        "recipients": ["bob@example.com"],
        "subject": "Again",
        "content": "Hello again Bob",
    },
}
DONE_AGAIN = {
    "action": "AgentUserInterface__send_message_to_user",
    "action_input": {"content": "Done: I emailed Bob again."},
}


def json_arg(name: str, value: str, value_type: str = "str") -> dict[str, Any]:
    """One argument of an action, as ARE's JSON export writes it."""
    return {"name": name, "value": value, "value_type": value_type}


def json_event(
    event_id: str,
    event_type: str,
    dependencies: list[str],
    relative_time: float,
    app: str,
    function: str,
    args: list[dict[str, Any]],
) -> dict[str, Any]:
    """One event as ARE's JSON export writes it: an oracle (AGENT) event or a plain one."""
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


def _email_turn(
    suffix: str, after: str, subject: str, content: str, reply: str
) -> list[dict[str, Any]]:
    """The oracle's turn: email Bob 1 s after `after`, then tell the user (ending the turn)."""
    return [
        json_event(
            f"email{suffix}",
            "AGENT",
            [after],
            1.0,
            "EmailClientV2",
            "send_email",
            [
                json_arg("recipients", '["bob@example.com"]', "list[str]"),
                json_arg("subject", subject),
                json_arg("content", content),
            ],
        ),
        json_event(
            f"done{suffix}",
            "AGENT",
            [f"email{suffix}"],
            1.0,
            "AgentUserInterface",
            "send_message_to_user",
            [json_arg("content", reply)],
        ),
    ]


def _user_message(event_id: str, after: list[str], delay: float, content: str) -> dict[str, Any]:
    return json_event(
        event_id,
        "USER",
        after,
        delay,
        "AgentUserInterface",
        "send_message_to_agent",
        [json_arg("content", content)],
    )


def scenario_json(scenario_id: str, marker: str, delay: float | None = None) -> str:
    """A Gaia2 scenario as ARE's JSON: email Bob, then tell the user.

    With `delay`, a second turn: `delay` seconds after the agent's first message to the user,
    the user asks for another email to Bob, then to be told again.
    """
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
        _user_message("user0", [], 0.0, task),
        *_email_turn("0", "user0", "Hi", "Hello Bob", "Done: I emailed Bob."),
    ]
    if delay is not None:
        again = (
            f"[{marker}] Email bob@example.com again with subject 'Again' saying "
            "'Hello again Bob', then tell me."
        )
        events += [
            _user_message("user1", ["done0"], delay, again),
            *_email_turn("1", "user1", "Again", "Hello again Bob", "Done: I emailed Bob again."),
        ]
    definition = {
        "scenario_id": scenario_id,
        "seed": 0,
        # ARE's benchmark sets every scenario's duration to its `max_scenario_duration`.
        "duration": 60.0 if delay is None else 2 * delay + 60.0,
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


# Scenario id -> (marker in its user messages, delay before its second turn or None).
SCENARIOS: dict[str, tuple[str, float | None]] = {
    "tiny_email": ("task:email", None),
    "tiny_skip": ("task:skip", None),
    "tiny_delay": ("task:delay_email", DELAY),
    "tiny_delay_skip": ("task:delay_skip", DELAY),
}
# The scenarios where simulated time must pass before the agent can finish.
DELAYED = frozenset(k for k, (_, delay) in SCENARIOS.items() if delay is not None)


def agent_scripts() -> dict[str, list[dict[str, Any]]]:
    """The stub agent's actions per scenario marker (both turns, for the delayed ones)."""
    return {
        "task:email": [EMAIL, DONE],
        "task:skip": [DONE],
        "task:delay_email": [EMAIL, DONE, EMAIL_AGAIN, DONE_AGAIN],
        "task:delay_skip": [EMAIL, DONE, DONE_AGAIN],
    }


def expected_verdicts() -> dict[str, bool]:
    """Which scenarios the judge accepts when the stub agent plays `agent_scripts()`."""
    return {"tiny_email": True, "tiny_skip": False, "tiny_delay": True, "tiny_delay_skip": False}


def write_dataset(
    root: str | Path,
    config: str = CONFIG,
    split: str = SPLIT,
    *,
    delay: float = DELAY,
    only: Iterable[str] | None = None,
) -> Path:
    """Write the tiny dataset under `root/config/split/` and return `root`.

    `delay` replaces `DELAY` in the delayed scenarios (ARE's own run idles that long for real);
    `only` writes just those scenario ids.
    """
    root = Path(root)
    folder = root / config / split
    folder.mkdir(parents=True, exist_ok=True)
    chosen = set(SCENARIOS) if only is None else set(only)
    if unknown := chosen - set(SCENARIOS):
        raise ValueError(f"no such scenarios: {sorted(unknown)}")
    for scenario_id, (marker, scenario_delay) in SCENARIOS.items():
        if scenario_id not in chosen:
            continue
        text = scenario_json(scenario_id, marker, None if scenario_delay is None else delay)
        (folder / f"{scenario_id}.json").write_text(text, encoding="utf-8")
    return root
