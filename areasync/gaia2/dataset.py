"""A tiny Gaia2-shaped dataset, exported by ARE, in the folder layout `are-benchmark run -d` reads.

Why it exists: `areasync bench run` must give ARE's verdicts, and a verdict depends on the
scenario's shape (turns, delays, environment events, its capability tag) and on what the agent
did (the oracle's calls, different words, the wrong call, nothing). Each scenario here pins one
such case; `SPECS` says what the stub agent plays on it and which verdict ARE gives, which
the parity tests prove by running ARE's own `are-benchmark run` on the same files.

Each scenario is written as Gaia2's JSON (user tasks, the oracle's tool calls ending each turn
with `send_message_to_user`, environment events), imported with ARE's
`import_from_json_to_benchmark` and exported again with ARE's `JsonScenarioExporter`, so the
files are exactly what ARE's exporter writes. They go to `DIR/<config>/<split>/<id>.json`, the
layout ARE's local loader (`find_scenario_paths`) walks for `-d DIR --config C --split S`:
`execution` for most, `time` for the Time capability's.

What ARE does with them that matters here:

* **Turns.** `preprocess_scenario` -> `initialize_turns` -> `build_turn_trigger`: turn k+1's
  user message hangs off the oracle's k-th `send_message_to_user`; ARE replaces that
  dependency by a `condition_turn_k` check, which fires on the first tick after the agent's k-th
  message to the user, runs the judge on turn k (a rejected turn stops the environment: later
  turns never come) and schedules the message `delay` seconds later. Meanwhile ARE's default
  agent polls with `time.sleep(1)`: `delay` seconds of idling, in real time under
  `are-benchmark run`, on the virtual wall under `areasync bench run`.
* **Durations.** In agent runs ARE overrides every scenario's duration: 420 s for a scenario
  tagged `Time` (`get_scenario_duration` reads the *tag*, not the `--config` folder), 1,800 s
  for the rest. A later turn due past that never comes (the environment ends, the agent gets
  `ENVIRONMENT_STOP`); the judge's oracle pre-run stops there too. An event past it that the
  agent waits for with `wait_for_notification` does come (the wait jumps past the end, in ARE
  as here), but not in the oracle pre-run, so the judge counts what the agent did then as
  extra calls (`tiny_time_past_limit`).
* **The judge** (`GraphPerEventJudge`): tool-call counts first, then each oracle call matched
  by hard checkers (recipients...) and, where the free text differs, LLM soft checkers. ARE
  1.2.0's LiteLLM engine rewrites `True` -> `true` in every reply, so the checkers that look
  for `[[True]]` (signature, tone, sanity) never vote: an email in other words always fails
  (`tiny_paraphrase_email`). A message to the user that is a bare number skips the sanity
  checker, so only `user_message_checker` (`[[Success]]`/`[[Failure]]`) decides it: that is
  where the stub's judge can accept (`tiny_three_turns`) or reject (`tiny_turn_rejected`) a
  turn, keyed on the agent's words in the checker's prompt (`judge_rules()`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import Enum
from pathlib import Path
from typing import Any

# ARE's agent-run durations, for the tests' expectations.
from areasync.gaia2.stub_llm import USER_MESSAGE_CHECKER, JudgeRule
from areasync.protocol.records import WAIT_TOOL

CONFIG = "execution"
TIME_CONFIG = "time"
SPLIT = "validation"
START_TIME = 1728979200.0
# Simulated seconds between the end of turn 1 and the user's second message (`tiny_delay*`).
DELAY = 300.0
# Between turns of the quick multi-turn scenarios: ARE idles this for real, so it stays short.
SHORT_DELAY = 2.0
# When the late turn (`tiny_late_turn`, `tiny_time_late_turn`) comes after turn 1, and Bob's
# email in `tiny_time_past_limit`: past the 420 s ARE gives a Time scenario, within the
# 1,800 s it gives the others.
LATE_DELAY = 1500.0
# When Bob's email arrives in the Time scenarios (`tiny_time_*`), after the task.
TIME_EVENT = 300.0

Action = Mapping[str, Any]

BOB = "bob@example.com"
USER_EMAIL = "user@meta.com"


def call(tool: str, **action_input: Any) -> dict[str, Any]:
    """One tool call, as the stub agent writes it and as an oracle action is described here."""
    return {"action": tool, "action_input": action_input}


def email(to: str = BOB, subject: str = "Hi", content: str = "Hello Bob") -> dict[str, Any]:
    return call("EmailClientV2__send_email", recipients=[to], subject=subject, content=content)


def tell(content: str) -> dict[str, Any]:
    return call("AgentUserInterface__send_message_to_user", content=content)


def wait(timeout: int) -> dict[str, Any]:
    return call(WAIT_TOOL, timeout=timeout)


# The oracle's (and the faithful agent's) calls, reused across scenarios.
EMAIL = email()
DONE = tell("Done: I emailed Bob.")
EMAIL_AGAIN = email(subject="Again", content="Hello again Bob")
DONE_AGAIN = tell("Done: I emailed Bob again.")
TASK_EMAIL = "Email bob@example.com with subject 'Hi' saying 'Hello Bob', then tell me."
TASK_AGAIN = (
    "Email bob@example.com again with subject 'Again' saying 'Hello again Bob', then tell me."
)
REPLY = email(subject="Re: Plan", content="Got it")
TASK_TIME = (
    "Bob will email me about our plan in a few minutes. Wait for his email, then email him "
    "back with subject 'Re: Plan' saying 'Got it', and tell me."
)


@dataclass(frozen=True)
class Turn:
    """One turn: the user's task, the oracle's calls, the oracle's closing message.

    `delay` is when the task comes: seconds after the previous turn's closing message (the
    first turn's task is at the start). `env` are environment calls (e.g. an email to the
    user) made `env_delay` seconds after the task; the oracle's calls then wait for them.
    """

    task: str
    calls: tuple[Action, ...]
    reply: str
    delay: float = 0.0
    env: tuple[Action, ...] = ()
    env_delay: float = 0.0


@dataclass(frozen=True)
class Spec:
    """A scenario, what the stub agent plays on it, and the verdict ARE gives for that.

    `long_wait`: ARE's own run idles long in real time on it (a delay between turns, or the
    scenario's whole duration), so the ARE side runs only in the soak suite.
    """

    scenario_id: str
    turns: tuple[Turn, ...]
    agent: tuple[Action, ...]
    success: bool
    tags: tuple[str, ...] = ("Execution",)
    config: str = CONFIG
    long_wait: bool = False
    judge: tuple[JudgeRule, ...] = field(default_factory=tuple)

    @property
    def marker(self) -> str:
        """Text in every user message of this scenario: the stub picks the agent's script by it."""
        return f"<{self.scenario_id}>"


DONE_TEXT = DONE["action_input"]["content"]
DONE_AGAIN_TEXT = DONE_AGAIN["action_input"]["content"]
DONE_REPLY = tell("Done: Bob's email came and I answered it.")
TASK_SUM_7 = "What is 3 + 4? Reply with the number only."
TASK_SUM_41 = "What is 20 + 21? Reply with the number only."
BOB_WRITES = call(
    "EmailClientV2__send_email_to_user_only",
    sender=BOB,
    subject="Plan",
    content="Let us meet at noon.",
)
TIME_TURN = Turn(
    TASK_TIME,
    (REPLY,),
    DONE_REPLY["action_input"]["content"],
    env=(BOB_WRITES,),
    env_delay=TIME_EVENT,
)
TASK_TIME_LATE = (
    "Bob will email me about our plan in about 25 minutes. Wait for his email, then email him "
    "back with subject 'Re: Plan' saying 'Got it', and tell me."
)


def _reject_number(number: str) -> JudgeRule:
    """The judge's user-message checker rejects the agent's `number` (a bare number)."""
    return JudgeRule(
        reply="- Reasoning: the number is wrong.\n- Evaluation: [[Failure]]",
        contains=(USER_MESSAGE_CHECKER, f"content: {number}\n"),
    )


def specs(delay: float = DELAY) -> dict[str, Spec]:
    """Every scenario by id; `delay` replaces `DELAY` in the `tiny_delay*` ones."""
    listing = [
        # Single turn, no waiting: the oracle's calls, none, the wrong one, other words.
        Spec("tiny_email", (Turn(TASK_EMAIL, (EMAIL,), DONE_TEXT),), (EMAIL, DONE), True),
        Spec("tiny_skip", (Turn(TASK_EMAIL, (EMAIL,), DONE_TEXT),), (DONE,), False),
        Spec(
            "tiny_wrong_recipient",
            (Turn(TASK_EMAIL, (EMAIL,), DONE_TEXT),),
            (email(to="carol@example.com"), DONE),
            False,
        ),
        Spec(
            # Same calls, other words: the soft checkers are asked, and the signature checker's
            # `[[True]]` reaches ARE as `[[true]]`: no vote, the email is rejected.
            "tiny_paraphrase_email",
            (Turn(TASK_EMAIL, (EMAIL,), DONE_TEXT),),
            (email(content="Hello Bob, hope you are well!"), DONE),
            False,
        ),
        # Three turns, a short delay apart. The last answer is a bare number in other digits:
        # the judge's user-message checker is asked, and accepts.
        Spec(
            "tiny_three_turns",
            (
                Turn(TASK_EMAIL, (EMAIL,), DONE_TEXT),
                Turn(TASK_AGAIN, (EMAIL_AGAIN,), DONE_AGAIN_TEXT, delay=SHORT_DELAY),
                Turn(TASK_SUM_7, (), "7", delay=SHORT_DELAY),
            ),
            (EMAIL, DONE, EMAIL_AGAIN, DONE_AGAIN, tell("7.0")),
            True,
        ),
        # The judge rejects turn 2 (its checker answers `[[Failure]]` for "41.0"): ARE stops
        # the environment there, turn 3's message never comes.
        Spec(
            "tiny_turn_rejected",
            (
                Turn(TASK_EMAIL, (EMAIL,), DONE_TEXT),
                Turn(TASK_SUM_41, (), "41", delay=SHORT_DELAY),
                Turn(TASK_AGAIN, (EMAIL_AGAIN,), DONE_AGAIN_TEXT, delay=SHORT_DELAY),
            ),
            (EMAIL, DONE, tell("41.0"), EMAIL_AGAIN, DONE_AGAIN),
            False,
            judge=(_reject_number("41.0"),),
        ),
        # Two turns `delay` apart: ARE idles the delay for real.
        Spec(
            "tiny_delay",
            (
                Turn(TASK_EMAIL, (EMAIL,), DONE_TEXT),
                Turn(TASK_AGAIN, (EMAIL_AGAIN,), DONE_AGAIN_TEXT, delay=delay),
            ),
            (EMAIL, DONE, EMAIL_AGAIN, DONE_AGAIN),
            True,
            long_wait=True,
        ),
        Spec(
            "tiny_delay_skip",
            (
                Turn(TASK_EMAIL, (EMAIL,), DONE_TEXT),
                Turn(TASK_AGAIN, (EMAIL_AGAIN,), DONE_AGAIN_TEXT, delay=delay),
            ),
            (EMAIL, DONE, DONE_AGAIN),
            False,
            long_wait=True,
        ),
        # Turn 2 comes `LATE_DELAY` (1,500 s) after turn 1: within the 1,800 s of an Execution
        # scenario. ARE idles 1,500 s for real.
        Spec(
            "tiny_late_turn",
            (
                Turn(TASK_EMAIL, (EMAIL,), DONE_TEXT),
                Turn(TASK_AGAIN, (EMAIL_AGAIN,), DONE_AGAIN_TEXT, delay=LATE_DELAY),
            ),
            (EMAIL, DONE, EMAIL_AGAIN, DONE_AGAIN),
            True,
            long_wait=True,
        ),
        # Time capability (420 s): Bob's email comes `TIME_EVENT` s after the task; the agent
        # must wait for it (`wait_for_notification`, which jumps: no real waiting in ARE either).
        Spec(
            "tiny_time_wait",
            (TIME_TURN,),
            (wait(600), REPLY, DONE_REPLY),
            True,
            tags=("Time",),
            config=TIME_CONFIG,
        ),
        # ... an agent that does not wait answers an email that has not come: the judge counts
        # the environment's email among the calls, and the agent's turn ended before it.
        Spec(
            "tiny_time_early",
            (TIME_TURN,),
            (REPLY, DONE_REPLY),
            False,
            tags=("Time",),
            config=TIME_CONFIG,
        ),
        # Bob's email comes `LATE_DELAY` (1,500 s) after the task: past the 420 s limit. The
        # agent waits for it and answers, exactly as the oracle does, and still fails: the
        # judge's oracle pre-run stopped at 420 s, before the email, so the judge expects no
        # email and no answer. (The agent's wait jumps past the limit, as ARE's does.)
        Spec(
            "tiny_time_past_limit",
            (replace(TIME_TURN, task=TASK_TIME_LATE, env_delay=LATE_DELAY),),
            (wait(1800), REPLY, DONE_REPLY),
            False,
            tags=("Time",),
            config=TIME_CONFIG,
        ),
        # The late turn again, tagged Time: ARE's 420 s end comes first, turn 2 never does (ARE
        # idles until then for real). ARE passes it: the judge's oracle pre-run stopped at 420 s
        # too, so turn 2 expects nothing, and the agent did nothing.
        Spec(
            "tiny_time_late_turn",
            (
                Turn(TASK_EMAIL, (EMAIL,), DONE_TEXT),
                Turn(TASK_AGAIN, (EMAIL_AGAIN,), DONE_AGAIN_TEXT, delay=LATE_DELAY),
            ),
            (EMAIL, DONE, EMAIL_AGAIN, DONE_AGAIN),
            True,
            tags=("Time",),
            config=TIME_CONFIG,
            long_wait=True,
        ),
    ]
    return {spec.scenario_id: spec for spec in listing}


SPECS: dict[str, Spec] = specs()
# The first four: one-turn right and wrong, two-turn right and wrong with `DELAY` between.
BASICS: tuple[str, ...] = ("tiny_email", "tiny_skip", "tiny_delay", "tiny_delay_skip")


def agent_scripts(chosen: Iterable[Spec] | None = None) -> dict[str, list[Action]]:
    """The stub agent's actions per scenario marker (all turns)."""
    return {s.marker: list(s.agent) for s in (SPECS.values() if chosen is None else chosen)}


def judge_rules(chosen: Iterable[Spec] | None = None) -> list[JudgeRule]:
    """The judge's replies that differ from the stub's default, for these scenarios."""
    return [rule for s in (SPECS.values() if chosen is None else chosen) for rule in s.judge]


def expected_verdicts() -> dict[str, bool]:
    """Which scenarios ARE's judge accepts when the stub agent plays `agent_scripts()`."""
    return {k: s.success for k, s in SPECS.items()}


def json_arg(name: str, value: str, value_type: str = "str") -> dict[str, Any]:
    """One argument of an action, as ARE's JSON export writes it."""
    return {"name": name, "value": value, "value_type": value_type}


def _json_args(action_input: Mapping[str, Any]) -> list[dict[str, Any]]:
    args = []
    for name, value in action_input.items():
        if isinstance(value, list):
            args.append(json_arg(name, json.dumps(value), "list[str]"))
        elif isinstance(value, bool | int | float):
            args.append(json_arg(name, json.dumps(value), type(value).__name__))
        else:
            args.append(json_arg(name, str(value)))
    return args


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


def action_event(
    event_id: str, event_type: str, after: list[str], delay: float, action: Action
) -> dict[str, Any]:
    """One event doing `action` (`App__function` and its input), `delay` s after `after`."""
    app, function = str(action["action"]).split("__")
    args = _json_args(action.get("action_input", {}))
    return json_event(event_id, event_type, after, delay, app, function, args)


def _events(spec: Spec) -> list[dict[str, Any]]:
    """The scenario's events: per turn, the user's task, environment calls, oracle calls."""
    events: list[dict[str, Any]] = []
    previous: str | None = None  # the previous turn's closing message
    for k, turn in enumerate(spec.turns):
        user = f"user{k}"
        task = f"{spec.marker} {turn.task}"
        to_agent = call("AgentUserInterface__send_message_to_agent", content=task)
        events.append(
            action_event(user, "USER", [previous] if previous else [], turn.delay, to_agent)
        )
        last = user
        for i, env_call in enumerate(turn.env):
            env_id = f"env{k}_{i}"
            events.append(
                action_event(env_id, "ENV", [last], turn.env_delay if i == 0 else 1.0, env_call)
            )
            last = env_id
        for i, oracle_call in enumerate(turn.calls):
            call_id = f"call{k}_{i}"
            events.append(action_event(call_id, "AGENT", [last], 1.0, oracle_call))
            last = call_id
        previous = f"done{k}"
        events.append(action_event(previous, "AGENT", [last], 1.0, tell(turn.reply)))
    return events


def _duration(spec: Spec) -> float:
    """Long enough for the oracle's own run (ARE's agent runs override it, see module doc)."""
    return (
        sum(t.delay + t.env_delay + 2.0 * (len(t.calls) + len(t.env) + 2) for t in spec.turns)
        + 60.0
    )


def scenario_json(spec: Spec) -> str:
    """A Gaia2 scenario as ARE's JSON, through ARE's importer and exporter."""
    from are.simulation.apps import SystemApp
    from are.simulation.apps.agent_user_interface import AgentUserInterface
    from are.simulation.apps.contacts import Contact, ContactsApp
    from are.simulation.apps.email_client import EmailClientV2

    # ARE's judge reads the user's name from the contacts (the contact with is_user).
    contacts = ContactsApp()
    contacts.add_contact(
        Contact(first_name="Ada", last_name="User", is_user=True, email=USER_EMAIL)
    )
    contacts.add_contact(Contact(first_name="Bob", last_name="Smith", email=BOB))
    apps = [
        {"name": app.name, "class_name": type(app).__name__, "app_state": app.get_state()}
        for app in (AgentUserInterface(), contacts, EmailClientV2(), SystemApp())
    ]
    document = scenario_document(
        spec.scenario_id, _duration(spec), list(spec.tags), apps, _events(spec)
    )
    return through_ares_exporter(document)


def scenario_document(
    scenario_id: str,
    duration: float,
    tags: list[str],
    apps: list[dict[str, Any]],
    events: list[dict[str, Any]],
    start_time: float = START_TIME,
) -> dict[str, Any]:
    """A Gaia2 scenario document in ARE's JSON shape, before ARE's importer and exporter."""
    definition = {
        "scenario_id": scenario_id,
        "seed": 0,
        "duration": duration,
        "time_increment_in_seconds": 1,
        "start_time": start_time,
        "hints": [],
        "tags": tags,
    }
    return {
        "version": "are_simulation_v1",
        "context": "",
        "metadata": {"definition": definition},
        "apps": apps,
        "events": events,
        "completed_events": [],
        "world_logs": [],
        "augmentation": None,
    }


def through_ares_exporter(document: Mapping[str, Any], *, as_given: Iterable[str] = ()) -> str:
    """A scenario document (ARE's JSON shape) as ARE's exporter writes it, after ARE's importer.

    The apps named in `as_given` are exported with the state the document gives them, not the
    state ARE's app returns after loading it (a file system's names its temporary directory).
    """
    kept = {
        app["name"]: json.dumps(app["app_state"], default=_enum_value)
        for app in document.get("apps", ())
        if app["name"] in set(as_given)
    }
    return _through_ares_exporter(json.dumps(document, default=_enum_value), kept)


def _enum_value(value: object) -> object:
    if isinstance(value, Enum):
        return value.value
    raise TypeError(f"not JSON serializable: {value!r}")


def _through_ares_exporter(text: str, kept: Mapping[str, str]) -> str:
    """Import with ARE's benchmark importer and export again with ARE's exporter."""
    from are.simulation.data_handler.exporter import JsonScenarioExporter
    from are.simulation.data_handler.importer import JsonScenarioImporter
    from are.simulation.environment import Environment, EnvironmentConfig

    scenario, _, _ = JsonScenarioImporter().import_from_json_to_benchmark(
        text, load_completed_events=False
    )
    scenario.initialize()
    for name, state in kept.items():
        scenario._initial_apps[name]["serialized_state"] = state
    # Never started: the exporter reads its (empty) event log and start time only.
    env = Environment(
        EnvironmentConfig(oracle_mode=True, queue_based_loop=True, start_time=scenario.start_time)
    )
    return JsonScenarioExporter().export_to_json(
        env=env, scenario=scenario, scenario_id=scenario.scenario_id, runner_config=None
    )


def select(
    *, only: Iterable[str] | None = None, long_wait: bool | None = None, config: str | None = None
) -> list[Spec]:
    """The specs with these ids (all by default), of this waiting kind, in this config."""
    chosen = set(SPECS) if only is None else set(only)
    if unknown := chosen - set(SPECS):
        raise ValueError(f"no such scenarios: {sorted(unknown)}; known: {sorted(SPECS)}")
    return [
        s
        for k, s in SPECS.items()
        if k in chosen
        and (long_wait is None or s.long_wait == long_wait)
        and (config is None or s.config == config)
    ]


def write_dataset(
    root: str | Path,
    *,
    split: str = SPLIT,
    delay: float = DELAY,
    only: Iterable[str] | None = None,
    long_wait: bool | None = None,
    config: str | None = None,
) -> Path:
    """Write scenarios under `root/<their config>/split/` and return `root`.

    `delay` replaces `DELAY` in the `tiny_delay*` scenarios (ARE's own run idles that long for
    real); `only`, `long_wait` and `config` choose which scenarios (see `select`).
    """
    root = Path(root)
    table = specs(delay)
    for spec in select(only=only, long_wait=long_wait, config=config):
        folder = root / spec.config / split
        folder.mkdir(parents=True, exist_ok=True)
        text = scenario_json(table[spec.scenario_id])
        (folder / f"{spec.scenario_id}.json").write_text(text, encoding="utf-8")
    return root
