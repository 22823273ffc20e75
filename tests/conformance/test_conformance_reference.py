"""The reference side of conformance (`areasync.conformance`) is itself trustworthy.

Before areasync is compared with ARE, these tests pin down what "ARE's answer" is: the normal
form is stable across ARE's own runs, the fake-clock time loop is reproducible and agrees with
the genuine wall-clock one, the duration bound is exclusive in both loops, the tick counts of
each reference scenario are ARE 1.2.0's, and a Gaia2-shaped scenario survives ARE's JSON export
and import. Only ARE's own loops run here; nothing from the areasync core is imported.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from enum import Enum
from typing import Any

import are.simulation.environment as are_environment
import are.simulation.time_manager as are_time_manager
import pytest
from are.simulation.scenarios.scenario import Scenario
from are.simulation.scenarios.utils.constants import ALL_SCENARIOS
from are.simulation.types import (
    Action,
    CompletedEvent,
    ConditionCheckEvent,
    EventMetadata,
    EventType,
)

from areasync.conformance.normal_form import (
    LogEntry,
    first_difference,
    normalize_events,
    normalized_log,
)
from areasync.conformance.reference_loops import (
    FakeClockLimitError,
    fake_wall_clock,
    run_are_queue_loop,
    run_are_time_loop,
)
from areasync.conformance.scenario_json import export_scenario_json, load_scenario_json
from areasync.conformance.scenarios import (
    GAIA2_SHAPED_ID,
    REMINDER_TICKS_ID,
    load_scenario,
    offline_scenario_ids,
    reference_scenario_ids,
)

# (queue-loop tick_count, time-loop tick_count) under ARE 1.2.0. The queue loop reports the index
# of the last tick it jumped to, the time loop the number of ticks it ran (module docstring).
ARE_TICK_COUNTS: dict[str, tuple[int, int]] = {
    "scenario_apps_tutorial": (9, 10),
    "scenario_events_tutorial": (15, 16),
    "scenario_find_image_file": (1, 2),
    "scenario_tutorial": (17, 18),
    "scenario_validation_tutorial": (7, 8),
    GAIA2_SHAPED_ID: (15, 16),
    REMINDER_TICKS_ID: (12, 12),
}

# Scenarios whose log does not depend on when ticks happen (no ReminderApp): both loops agree.
TICK_INDEPENDENT = [sid for sid in reference_scenario_ids() if sid != REMINDER_TICKS_ID]


# --------------------------------------------------------------------------- scenario ids


def test_offline_scenarios_are_the_registered_ones_minus_hf_and_mcp() -> None:
    expected = set(ALL_SCENARIOS) - {"scenario_hf_demo_mcp", "scenario_mcp_demo"}
    assert set(offline_scenario_ids()) == expected
    assert "scenario_tutorial" in expected


def test_tick_count_table_covers_every_reference_scenario() -> None:
    assert set(ARE_TICK_COUNTS) == set(reference_scenario_ids())


# --------------------------------------------------------------------------- stability


@pytest.mark.parametrize("scenario_id", reference_scenario_ids())
def test_queue_loop_normal_form_is_stable_across_are_runs(scenario_id: str) -> None:
    first = normalized_log(run_are_queue_loop(scenario_id))
    second = normalized_log(run_are_queue_loop(scenario_id))
    assert first, "a reference run must log something"
    assert first_difference(first, second) is None


@pytest.mark.parametrize("scenario_id", reference_scenario_ids())
def test_fake_clock_time_loop_repeats_its_log_and_tick_count(scenario_id: str) -> None:
    first, second = run_are_time_loop(scenario_id), run_are_time_loop(scenario_id)
    assert first_difference(normalized_log(first), normalized_log(second)) is None
    assert first.tick_count == second.tick_count


@pytest.mark.parametrize("scenario_id", reference_scenario_ids())
def test_tick_counts_are_are_1_2_0s(scenario_id: str) -> None:
    queue, timed = run_are_queue_loop(scenario_id), run_are_time_loop(scenario_id)
    assert (queue.tick_count, timed.tick_count) == ARE_TICK_COUNTS[scenario_id]


@pytest.mark.parametrize("scenario_id", TICK_INDEPENDENT)
def test_both_are_loops_log_the_same_without_per_tick_events(scenario_id: str) -> None:
    queue = normalized_log(run_are_queue_loop(scenario_id))
    timed = normalized_log(run_are_time_loop(scenario_id))
    assert first_difference(queue, timed) is None


@pytest.mark.parametrize("scenario_id", reference_scenario_ids())
def test_reference_runs_end_stopped_without_failed_events(scenario_id: str) -> None:
    for env in (run_are_queue_loop(scenario_id), run_are_time_loop(scenario_id)):
        assert env.state.value == "STOPPED"
        assert not any(entry.exception for entry in normalized_log(env))


# --------------------------------------------------------------------------- ticks and bounds


def _times_of(log: list[LogEntry], function: str) -> list[float]:
    return [entry.time for entry in log if entry.function == function]


def test_time_loop_logs_reminder_checks_every_second() -> None:
    log = normalized_log(run_are_time_loop(REMINDER_TICKS_ID))
    assert _times_of(log, "get_due_reminders") == [float(t) for t in range(12)]


def test_queue_loop_checks_reminders_only_at_event_times() -> None:
    log = normalized_log(run_are_queue_loop(REMINDER_TICKS_ID))
    assert _times_of(log, "get_due_reminders") == [2.0, 3.0, 6.0, 9.0]


def test_event_on_the_duration_bound_runs_in_neither_loop() -> None:
    for env in (run_are_queue_loop(REMINDER_TICKS_ID), run_are_time_loop(REMINDER_TICKS_ID)):
        contents = [entry.args.get("content") for entry in normalized_log(env)]
        assert "Any news?" in contents
        assert "At the bound" not in contents


def test_fake_clock_without_epsilon_would_run_the_bound_event() -> None:
    # Why FakeWallClock adds sleep_overhead: an exact clock reaches time_passed() == duration,
    # which ARE's `<= duration` test lets through, unlike the wall clock. One tick too many.
    env = run_are_time_loop(REMINDER_TICKS_ID, sleep_overhead=0.0)
    assert env.tick_count == 13
    assert "At the bound" in [entry.args.get("content") for entry in normalized_log(env)]


def test_time_loop_without_duration_ends_when_the_queue_is_empty() -> None:
    env = run_are_time_loop("scenario_find_image_file")
    assert env.duration is None
    assert env.tick_count == 2
    assert env.state.value == "STOPPED"


def test_time_loop_without_duration_or_exit_rule_is_refused() -> None:
    with pytest.raises(ValueError, match="never ends"):
        run_are_time_loop("scenario_find_image_file", exit_when_no_events=False)


class _NeverEnding(Scenario):
    """A condition that never holds, checked every tick, and no duration."""

    scenario_id: str = "never_ending"
    start_time: float | None = 0.0
    duration: float | None = None

    def init_and_populate_apps(self, *args: Any, **kwargs: Any) -> None:
        self.apps: list[Any] = []

    def build_events_flow(self) -> None:
        never = ConditionCheckEvent.from_condition(lambda env: False, every_tick=1, timeout=None)
        self.events = [never]


def test_fake_clock_run_that_never_ends_stops_at_the_limit() -> None:
    with pytest.raises(FakeClockLimitError):
        run_are_time_loop(_NeverEnding(), max_ticks=30)


def test_fake_clock_patch_is_undone_even_after_a_failed_run() -> None:
    with pytest.raises(FakeClockLimitError):
        run_are_time_loop(_NeverEnding(), max_ticks=5)
    assert are_environment.time is time
    assert are_time_manager.time is time


def test_fake_clock_patches_only_the_environment_and_time_manager() -> None:
    import are.simulation.apps.email_client as email_client

    with fake_wall_clock() as clock:
        assert are_environment.time is clock
        assert are_time_manager.time is clock
        assert email_client.time is time


@pytest.mark.soak
def test_genuine_wall_clock_time_loop_equals_the_fake_clock_one() -> None:
    # ~18 s of sleeping: ARE's unpatched loop sleeps one wall second per tick, so this check of
    # the fake clock against the genuine one runs in `make soak` and `make conformance`. Wall-
    # clock drift (a few ms per tick) stays far below the normal form's 0.1 s rounding.
    genuine = run_are_time_loop("scenario_tutorial", wall_clock=True)
    fake = run_are_time_loop("scenario_tutorial")
    assert first_difference(normalized_log(genuine), normalized_log(fake)) is None
    assert genuine.tick_count == fake.tick_count == 18


# --------------------------------------------------------------------------- normal form


def _noop(**kwargs: Any) -> None:
    return None


def _completed(
    at: float, args: dict[str, Any], result: Any = None, exception: str | None = None
) -> CompletedEvent:
    return CompletedEvent(
        event_type=EventType.ENV,
        event_time=at,
        action=Action(function=_noop, args=args),
        metadata=EventMetadata(return_value=result, exception=exception),
    )


UUID_A = "6951d931f54c49d8a18f6d6bf8261faf"
UUID_B = "c55fab5c-94c1-4e45-8c8d-97d3eb3855e9"


def test_normal_form_numbers_ids_in_order_of_first_appearance() -> None:
    events = [
        _completed(100.0, {"id": UUID_B}, result={UUID_A: f"Event-ENV-{UUID_B}"}),
        _completed(101.0, {"ids": [UUID_A, UUID_B]}),
    ]
    log = normalize_events(events, start_time=100.0)
    assert log[0].args == {"id": "<id1>"}
    assert log[0].return_value == {"<id2>": "Event-ENV-<id1>"}
    assert log[1].args == {"ids": ["<id2>", "<id1>"]}


def test_normal_form_does_not_depend_on_the_order_of_ties() -> None:
    first = _completed(5.0, {"who": "a", "id": UUID_A}, result=UUID_A)
    second = _completed(5.0, {"who": "b", "id": UUID_B}, result=UUID_B)
    assert normalize_events([first, second], 0.0) == normalize_events([second, first], 0.0)


def test_normal_form_orders_ties_without_looking_at_id_values() -> None:
    low, high = "0" * 32, "f" * 32

    def log(first_id: str, second_id: str) -> list[LogEntry]:
        tied = [_completed(5.0, {"id": first_id, "k": "b"}), _completed(5.0, {"id": second_id})]
        return normalize_events(tied, 0.0)

    assert log(low, high) == log(high, low)


def test_normal_form_still_tells_tied_events_apart_by_their_results() -> None:
    log_ab = normalize_events([_completed(5.0, {"n": 1}, 1), _completed(5.0, {"n": 2}, 2)], 0.0)
    log_ba = normalize_events([_completed(5.0, {"n": 1}, 2), _completed(5.0, {"n": 2}, 1)], 0.0)
    assert log_ab != log_ba


def test_normal_form_times_are_relative_and_rounded() -> None:
    log = normalize_events([_completed(1_728_979_203.0042, {})], start_time=1_728_979_200.0)
    assert log[0].time == 3.0


def test_normal_form_masks_wall_clock_timestamps_only() -> None:
    log = normalize_events([_completed(0.0, {"made": time.time(), "due": 1_728_979_207.0})], 0.0)
    assert log[0].args == {"made": "<wall-clock>", "due": 1_728_979_207.0}


class _Colour(Enum):
    RED = "red"


@dataclass
class _Note:
    colour: _Colour
    body: bytes
    tags: frozenset[str]


def test_normal_form_turns_values_into_json_data() -> None:
    note = _Note(_Colour.RED, b"hi", frozenset({"b", "a"}))
    log = normalize_events([_completed(0.0, {"note": note, "pair": (1, 2.25)})], 0.0)
    assert log[0].args == {
        "note": {"colour": "red", "body": "base64:aGk=", "tags": ["a", "b"]},
        "pair": [1, 2.2],  # rounded to one digit (round half to even)
    }
    json.dumps(log[0].args)  # plain JSON data


def test_normal_form_drops_self_and_flags_exceptions() -> None:
    log = normalize_events([_completed(0.0, {"self": object(), "x": 1}, exception="boom")], 0.0)
    assert log[0].args == {"x": 1}
    assert log[0].exception is True


def test_first_difference_names_the_first_differing_entry() -> None:
    a = normalize_events([_completed(0.0, {"x": 1}), _completed(1.0, {"x": 2})], 0.0)
    b = normalize_events([_completed(0.0, {"x": 1}), _completed(1.0, {"x": 3})], 0.0)
    difference = first_difference(a, b)
    assert difference is not None and difference.startswith("entry 1 differs")
    assert first_difference(a, a) is None
    assert "lengths differ" in (first_difference(a, a[:1]) or "")


# --------------------------------------------------------------------------- scenario JSON


@pytest.fixture(scope="module")
def gaia2_json() -> str:
    return export_scenario_json(GAIA2_SHAPED_ID)


def test_gaia2_shaped_json_carries_oracle_events(gaia2_json: str) -> None:
    events = json.loads(gaia2_json)["events"]
    oracle = [e for e in events if e["class_name"] == "OracleEvent"]
    assert oracle and all(e["event_type"] == "AGENT" for e in oracle)
    assert {e["event_id"] for e in oracle} >= {"agent_send", "agent_done", "agent_done_2"}


def test_gaia2_shaped_json_keeps_placeholders_after_the_run(gaia2_json: str) -> None:
    events = {e["event_id"]: e for e in json.loads(gaia2_json)["events"]}
    args = {a["name"]: a["value"] for a in events["env_reply"]["action"]["args"]}
    assert args["email_id"] == "{{agent_send}}"


def test_gaia2_shaped_json_runs_like_the_original_in_the_queue_loop(gaia2_json: str) -> None:
    original = normalized_log(run_are_queue_loop(GAIA2_SHAPED_ID))
    imported = normalized_log(run_are_queue_loop(load_scenario_json(gaia2_json)))
    assert first_difference(original, imported) is None


def test_gaia2_shaped_json_runs_like_the_original_in_the_time_loop(gaia2_json: str) -> None:
    original = run_are_time_loop(GAIA2_SHAPED_ID)
    imported = run_are_time_loop(load_scenario_json(gaia2_json))
    assert first_difference(normalized_log(original), normalized_log(imported)) is None
    assert original.tick_count == imported.tick_count


def test_gaia2_benchmark_import_adds_per_tick_turn_conditions(gaia2_json: str) -> None:
    plain = normalized_log(run_are_queue_loop(load_scenario_json(gaia2_json)))
    bench = normalized_log(run_are_queue_loop(load_scenario_json(gaia2_json, benchmark=True)))
    conditions = [e for e in bench if e.event_type == "CONDITION"]
    assert [e.time for e in conditions] == [float(t) for t in range(12)]  # turn 1 opens at 11 s
    assert [e for e in bench if e.event_type != "CONDITION"] == plain


@pytest.mark.parametrize("scenario_id", offline_scenario_ids())
def test_registered_scenarios_do_not_survive_are_json_import(scenario_id: str) -> None:
    text = export_scenario_json(scenario_id)  # ARE exports them fine...
    with pytest.raises(ValueError, match="Env events must have only one predecessor"):
        load_scenario_json(text)  # ...but its importer enforces Gaia2's DAG rules


@pytest.mark.parametrize("scenario_id", ["scenario_tutorial", "scenario_events_tutorial"])
def test_fake_clock_queue_loop_equals_the_genuine_one(scenario_id: str) -> None:
    fake = run_are_queue_loop(load_scenario(scenario_id))
    genuine = run_are_queue_loop(load_scenario(scenario_id), wall_clock=True)
    assert first_difference(normalized_log(fake), normalized_log(genuine)) is None
    assert fake.tick_count == genuine.tick_count
