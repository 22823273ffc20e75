"""The linear event import (`bridge/scenarios/event_import.py`, `bridge/scenarios/json_import.py`)
is ARE's import.

Every scenario ARE's own `process_events` refuses is refused with the same exception (type and
message); every one it accepts comes out with the same events, dependencies, times, actions,
hints and (benchmark import) turns. Both sides run real ARE on the same JSON.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

import msgspec
import pytest
from are.simulation.data_handler.importer import JsonScenarioImporter
from are.simulation.scenarios.scenario import Scenario
from are.simulation.scenarios.scenario_imported_from_json.utils import preprocess_scenario

from areasync.bridge.scenarios import json_import
from areasync.bridge.scenarios.event_import import linear
from bench.synthetic import synthetic_scenario_json
from tests.client.test_client_oracle_agent import gaia2_json

Outcome = tuple[str, Any]


def snapshot(scenario: Scenario) -> Any:
    """What an import decides: every event with its links, times and action; hints; turns."""
    events = []
    for event in scenario.events:
        action = getattr(event, "action", None)
        events.append(
            (
                type(event).__name__,
                event.event_id,
                event.event_type,
                event.event_time,
                event.event_relative_time,
                [dependency.event_id for dependency in event.dependencies],
                [successor.event_id for successor in event.successors],
                repr(getattr(event, "action_desc", None)),
                getattr(event, "event_time_comparator", None),
                getattr(getattr(action, "app", None), "name", None),
                getattr(getattr(action, "function", None), "__name__", None),
                getattr(action, "args", None),
            )
        )
    hints = [(h.hint_type, h.associated_event_id, h.content) for h in scenario.hints or []]
    turns = getattr(scenario, "event_id_to_turn_idx", None), getattr(scenario, "nb_turns", None)
    return events, hints, turns


def imported(text: str, *, benchmark: bool, fast: bool) -> Outcome:
    """("ok", snapshot) or ("refused", (exception type, message)) of one import of `text`."""
    adopt: Callable[[Any], Any] = linear if fast else (lambda scenario: scenario)
    importer = JsonScenarioImporter()
    try:
        if benchmark:
            scenario, _, _ = importer.import_from_json_to_benchmark(
                text, load_completed_events=False
            )
            preprocess_scenario(adopt(scenario), judge_config=None)
        else:
            scenario, _, _ = importer.import_from_json(text, load_completed_events=False)
            adopt(scenario).initialize()
    except Exception as exc:
        return "refused", (type(exc).__name__, str(exc))
    return "ok", snapshot(scenario)


def gaia2() -> dict[str, Any]:
    return json.loads(gaia2_json())


def event(data: dict[str, Any], event_id: str) -> dict[str, Any]:
    return next(e for e in data["events"] if e["event_id"] == event_id)


def edited(change: Callable[[dict[str, Any]], None]) -> str:
    data = gaia2()
    change(data)
    return json.dumps(data)


def _cycle(data: dict[str, Any]) -> None:
    event(data, "agent_lookup")["dependencies"] = ["agent_send"]


def _missing(data: dict[str, Any]) -> None:
    event(data, "agent_time")["dependencies"] = ["no_such_event"]


def _env_with_two_predecessors(data: dict[str, Any]) -> None:
    event(data, "env_mail")["dependencies"] = ["user_1", "env_invite"]


def _agent_without_predecessor(data: dict[str, Any]) -> None:
    event(data, "agent_time")["dependencies"] = []


def _second_branch_of_messages(data: dict[str, Any]) -> None:
    event(data, "user_2")["dependencies"] = []


def _predecessors_in_two_turns(data: dict[str, Any]) -> None:
    event(data, "agent_book")["dependencies"] = ["user_2", "agent_send"]


def _end_of_turn_not_last(data: dict[str, Any]) -> None:
    event(data, "agent_done")["event_relative_time"] = 0.5


def _event_after_the_end_of_turn(data: dict[str, Any]) -> None:
    late = json.loads(json.dumps(event(data, "env_reply")))
    late.update(event_id="env_late", dependencies=["env_reply"], event_relative_time=100.0)
    data["events"].append(late)


def _absolute_time_before_its_predecessor(data: dict[str, Any]) -> None:
    event(data, "env_invite").update(event_time=1.0, event_relative_time=None)


def _bad_argument_type(data: dict[str, Any]) -> None:
    event(data, "agent_lookup")["action"]["args"][0]["value_type"] = "nonsense"


def _message_after_the_end_of_turn(data: dict[str, Any]) -> None:
    event(data, "agent_book")["dependencies"] = ["agent_done"]


REFUSED = [
    _cycle,
    _missing,
    _env_with_two_predecessors,
    _agent_without_predecessor,
    _second_branch_of_messages,
    _predecessors_in_two_turns,
    _end_of_turn_not_last,
    _event_after_the_end_of_turn,
    _absolute_time_before_its_predecessor,
    _bad_argument_type,
    _message_after_the_end_of_turn,
]


@pytest.mark.parametrize("change", REFUSED, ids=[c.__name__.strip("_") for c in REFUSED])
def test_a_scenario_ares_import_refuses_is_refused_with_the_same_error(
    change: Callable[[dict[str, Any]], None],
) -> None:
    text = edited(change)
    are = imported(text, benchmark=False, fast=False)
    assert are[0] == "refused", are  # the case is one ARE refuses
    assert imported(text, benchmark=False, fast=True) == are


@pytest.mark.parametrize("benchmark", [False, True], ids=["plain", "benchmark"])
@pytest.mark.parametrize(
    "text",
    [gaia2_json(), gaia2_json(single_turn=True), synthetic_scenario_json(400, turns=3)],
    ids=["gaia2", "gaia2-single-turn", "synthetic-400"],
)
def test_an_accepted_scenario_imports_the_same_events_as_ares(text: str, benchmark: bool) -> None:
    are = imported(text, benchmark=benchmark, fast=False)
    assert are[0] == "ok", are
    assert imported(text, benchmark=benchmark, fast=True) == are


def test_fan_in_and_placeholders_import_the_same_events_as_ares() -> None:
    # Oracle events that wait on several others, ENV chains answering through placeholders,
    # several turns: every check ARE runs per event gets exercised and passes.
    text = synthetic_scenario_json(1200, turns=6)
    are = imported(text, benchmark=False, fast=False)
    assert are[0] == "ok"
    assert imported(text, benchmark=False, fast=True) == are


@pytest.mark.parametrize("benchmark", [False, True], ids=["plain", "benchmark"])
def test_events_validated_in_pieces_import_as_ares_whole_document(
    monkeypatch: pytest.MonkeyPatch, benchmark: bool
) -> None:
    monkeypatch.setattr(json_import, "CHUNK", 3)  # many pieces, one partly filled
    text = synthetic_scenario_json(100, turns=2)
    data = msgspec.json.decode(text)
    if benchmark:
        scenario: Scenario = json_import.import_benchmark(data)
        preprocess_scenario(scenario, judge_config=None)
    else:
        scenario = json_import.import_plain(data)
        scenario.initialize()
    assert ("ok", snapshot(scenario)) == imported(text, benchmark=benchmark, fast=False)


def test_an_event_pydantic_refuses_in_a_piece_is_refused() -> None:
    data = msgspec.json.decode(synthetic_scenario_json(40))
    data["events"][30]["event_type"] = 7  # not a string: ARE's model refuses it
    with pytest.raises(ValueError, match="validation error"):
        json_import.import_plain(data)


@pytest.mark.parametrize("seed", range(60))
def test_randomly_rewired_scenarios_import_as_ares_does(seed: int) -> None:
    # Random dependencies, times and absolute times on a small multi-turn scenario: accepted
    # or refused, the linear import must decide as ARE does, with the same result.
    rng = random.Random(seed)
    data = json.loads(synthetic_scenario_json(48, turns=3))
    events = data["events"]
    ids = [e["event_id"] for e in events]
    for index in rng.sample(range(1, len(events)), 4):
        # Mostly earlier events (what ARE can accept), now and then any (cycles, gaps).
        pool = ids if rng.random() < 0.2 else ids[:index]
        events[index]["dependencies"] = rng.sample(pool, min(len(pool), rng.choice([1, 1, 2])))
    for target in rng.sample(data["events"], 3):
        if rng.random() < 0.5:
            target.update(event_time=None, event_relative_time=float(rng.choice([0, 1, 5, 40])))
        else:
            target.update(event_time=1728979200.0 + rng.choice([0, 10, 60]))
            target["event_relative_time"] = None
    text = json.dumps(data)
    for benchmark in (False, True):
        are = imported(text, benchmark=benchmark, fast=False)
        assert imported(text, benchmark=benchmark, fast=True) == are


def fanned_in(seed: int) -> str:
    """A small synthetic scenario with random AGENT fan-in, ENV rewiring, a few relative and
    absolute times, sometimes its events shuffled: ARE's breadth-first turn search then often
    visits an event before one of its dependencies, which moves that dependency's key earlier
    in ARE's turn map as events are added (and changes the times ARE accumulates)."""
    rng = random.Random(seed)
    data = json.loads(
        synthetic_scenario_json(rng.choice([16, 24, 32]), turns=rng.choice([1, 2, 3]))
    )
    events = data["events"]
    ids = [e["event_id"] for e in events]
    agents = [i for i, e in enumerate(events) if e["event_type"] == "AGENT"]
    for index in rng.sample(agents, min(len(agents), rng.randint(2, 8))):
        pool = ids[:index]
        events[index]["dependencies"] = rng.sample(pool, min(len(pool), rng.choice([1, 2, 3, 4])))
    for index in rng.sample(range(1, len(events)), rng.randint(0, 5)):
        if events[index]["event_type"] == "ENV":
            pool = [ids[j] for j in range(index) if events[j]["event_type"] in ("ENV", "USER")]
            if pool:
                events[index]["dependencies"] = [rng.choice(pool)]
    if rng.random() < 0.3:
        rng.shuffle(events)
    for target in rng.sample(events, rng.randint(0, 6)):
        if rng.random() < 0.6:
            target.update(event_time=None, event_relative_time=float(rng.choice([0, 1, 2, 5, 40])))
        else:
            target.update(event_time=1728979200.0 + rng.choice([0, 10, 60, 300]))
            target["event_relative_time"] = None
    return json.dumps(data)


def visits_an_event_before_a_dependency(snapshot_events: list[Any]) -> bool:
    """Whether ARE's turn search (breadth-first from the events without dependencies, in list
    order) meets some event before one of its dependencies, read from an import's snapshot."""
    dependencies = {e[1]: e[5] for e in snapshot_events}
    successors = {e[1]: e[6] for e in snapshot_events}
    visited: set[str] = set()
    queue = [e[1] for e in snapshot_events if not e[5]]
    while queue:
        event_id = queue.pop(0)
        if event_id in visited:
            continue
        if any(d not in visited for d in dependencies[event_id]):
            return True
        visited.add(event_id)
        queue.extend(s for s in successors[event_id] if s not in visited)
    return False


def test_an_event_met_before_its_dependency_gets_the_time_ares_import_gives_it() -> None:
    # In the final graph ARE's search reaches `t0_done` before `t0_env2` and reads the key of
    # `t0_agent2` early, putting it before `t0_env2` in the turn map. When ARE checks `t0_done`
    # itself that has not happened yet: `t0_agent2` follows `t0_env2` and accumulates its time,
    # and ARE accepts the end of turn that reading the final order would refuse.
    text = fanned_in(123)
    are = imported(text, benchmark=False, fast=False)
    assert are[0] == "ok", are
    assert visits_an_event_before_a_dependency(are[1][0])
    assert imported(text, benchmark=False, fast=True) == are


def test_randomly_fanned_in_scenarios_import_as_ares_does() -> None:
    outcomes = {
        seed: (
            imported(text, benchmark=False, fast=False),
            imported(text, benchmark=False, fast=True),
        )
        for seed, text in ((seed, fanned_in(seed)) for seed in range(300))
    }
    differing = [seed for seed, (are, ours) in outcomes.items() if are != ours]
    assert differing == [], f"seeds where the linear import and ARE's disagree: {differing}"
    # The sample has both verdicts, and accepted graphs whose turn-map order moves.
    verdicts = {are[0] for are, _ in outcomes.values()}
    assert verdicts == {"ok", "refused"}
    moving = [
        seed
        for seed, (are, _) in outcomes.items()
        if are[0] == "ok" and visits_an_event_before_a_dependency(are[1][0])
    ]
    assert len(moving) >= 10, moving
