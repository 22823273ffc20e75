"""The pieces the parity runs rest on, checked alone: the stub's agent and judge scripts, ARE
1.2.0's judge quirk (its LiteLLM engine lowercases `True`), and where ARE takes a scenario's
time limit from. No benchmark run here: each test takes well under a second."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from are.simulation.scenarios.config import MAX_SCENARIO_DURATION, MAX_TIME_SCENARIO_DURATION

from areasync.gaia2.dataset import (
    CONFIG,
    SPECS,
    TIME_CONFIG,
    scenario_json,
)
from areasync.gaia2.stub_llm import (
    EMAIL_CHECKER,
    SANITY_CHECKER,
    SIGNATURE_CHECKER,
    SUBTASK_EXTRACTOR,
    TONE_CHECKER,
    USER_MESSAGE_CHECKER,
    JudgeRule,
    Script,
    StubLLM,
    actions_taken,
    format_action,
)
from tests.stubs import stub_llm


def test_stub_speaks_are_default_agent_format() -> None:
    script = Script(
        agent={"marker": [{"action": "A__b", "action_input": {"x": 1}}, {"action": "C__d"}]}
    )
    first = script.reply(
        {"model": "openai/agent", "messages": [{"role": "user", "content": "marker"}]}
    )
    assert first.startswith("Thought:") and '"action": "A__b"' in first
    history = [
        {"role": "user", "content": "marker"},
        {"role": "assistant", "content": first},
    ]
    assert actions_taken(history) == 1
    assert '"action": "C__d"' in script.reply({"model": "agent", "messages": history})
    assert "[[True]]" in script.reply({"model": "openai/judge", "messages": []})
    assert format_action({"action": "X__y"}).rstrip().endswith("}")


def _judge_call(system: str, *users: str) -> dict[str, Any]:
    """A judge request as ARE's LLMFunction sends it: system, few-shot pairs, the input."""
    messages: list[dict[str, str]] = [{"role": "system", "content": system}]
    for text in users:
        messages += [{"role": "user", "content": text}, {"role": "assistant", "content": "ok"}]
    return {"model": "openai/judge", "messages": messages[:-1]}


def test_judge_rule_answers_its_checker_on_its_input() -> None:
    rule = JudgeRule("[[Failure]]", (USER_MESSAGE_CHECKER, "content: 41.0\n"))
    script = Script(judge=[rule])
    system = f"You {USER_MESSAGE_CHECKER} with a reference message."
    assert script.reply(_judge_call(system, "- Agent Message:\ncontent: 41.0\n")) == "[[Failure]]"
    # Another checker, or another input: the default reply.
    other = _judge_call(f"You are a {SANITY_CHECKER}.", "content: 41.0\n")
    assert script.reply(other) == script.judge_reply
    assert script.reply(_judge_call(system, "content: 7.0\n")) == script.judge_reply


def test_judge_rule_ignores_the_few_shot_examples() -> None:
    """ARE puts worked examples between the instructions and the input; they are not the input."""
    script = Script(judge=[JudgeRule("[[Failure]]", (USER_MESSAGE_CHECKER, "content: 41.0\n"))])
    system = f"You {USER_MESSAGE_CHECKER}."
    call = _judge_call(system, "example: content: 41.0\n", "content: 7.0\n")
    assert script.reply(call) == script.judge_reply


def test_checker_phrases_name_one_are_prompt_each() -> None:
    """Each phrase the stub keys on is in exactly one of ARE's judge prompts (the right one)."""
    from are.simulation.validation import prompts

    templates = {
        SIGNATURE_CHECKER: prompts.SIGNATURE_CHECKER_SYSTEM_PROMPT_TEMPLATE,
        TONE_CHECKER: prompts.TONE_CHECKER_SYSTEM_PROMPT_TEMPLATE,
        SANITY_CHECKER: prompts.SANITY_CHECKER_SYSTEM_PROMPT_TEMPLATE,
        EMAIL_CHECKER: prompts.EMAIL_CHECKER_SYSTEM_PROMPT_TEMPLATE,
        USER_MESSAGE_CHECKER: prompts.USER_MESSAGE_CHECKER_SYSTEM_PROMPT_TEMPLATE,
        SUBTASK_EXTRACTOR: prompts.SUBTASK_EXTRACTOR_SYSTEM_PROMPT_TEMPLATE,
    }
    every = [v for k, v in vars(prompts).items() if k.endswith("SYSTEM_PROMPT_TEMPLATE")]
    for phrase, template in templates.items():
        assert phrase in template
        assert sum(phrase in other for other in every) == 1, phrase


@pytest.fixture(scope="module")
def judge_stub() -> Iterator[StubLLM]:
    # The stub's default judge reply: every verdict spelling, `[[True]]` included.
    with stub_llm(Script()) as server:
        yield server


def _are_checkers(engine: Any) -> dict[str, Any]:
    from are.simulation.validation.utils.llm_utils import build_llm_checkers

    checkers: dict[str, Any] = build_llm_checkers(engine=engine)
    return checkers


def _litellm_engine(endpoint: str) -> Any:
    from are.simulation.agents.are_simulation_agent_config import LLMEngineConfig
    from are.simulation.validation.configs import create_judge_engine

    # What `are-benchmark run --judge_model openai/judge --judge_endpoint E --provider local`
    # gives the judge.
    return create_judge_engine(
        LLMEngineConfig(model_name="openai/judge", provider="local", endpoint=endpoint)
    )


SIGNATURE_INPUT = {"agent_action_call": "subject: Hi\ncontent: Hello Bob", "user_name": "Ada"}


def test_are_engine_turns_the_true_verdict_into_no_vote(
    judge_stub: StubLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ARE 1.2.0's LiteLLM engine rewrites `True` -> `true` in every reply, so a checker that
    looks for `[[True]]` (signature, tone, sanity) finds neither `[[True]]` nor `[[False]]` and
    returns None: it never passes. One that looks for `[[Success]]` is unaffected."""
    monkeypatch.setenv("OPENAI_API_KEY", "stub")  # litellm wants a key; the stub ignores it
    checkers = _are_checkers(_litellm_engine(judge_stub.endpoint))
    assert checkers["signature_checker"](user_prompt_args=SIGNATURE_INPUT) is None
    email_input = {
        "agent_action_call": "content: Hello Bob, hope you are well!",
        "oracle_action_call": "content: Hello Bob",
        "today_date": "2024-10-15 Tuesday",
    }
    assert checkers["email_checker"](user_prompt_args=email_input) is True
    # The stub did say `[[True]]`.
    asked = [r for r in judge_stub.requests if SIGNATURE_CHECKER in r["messages"][0]["content"]]
    assert asked and "[[True]]" in judge_stub.script.reply(asked[-1])


def test_the_same_reply_unaltered_passes_the_true_checker(judge_stub: StubLLM) -> None:
    """The contrast: the stub's very reply, handed to ARE's checker as is, is a pass."""
    reply = judge_stub.script.judge_reply

    def verbatim(messages: list[dict[str, Any]], **_: Any) -> tuple[str, None]:
        return reply, None

    assert _are_checkers(verbatim)["signature_checker"](user_prompt_args=SIGNATURE_INPUT) is True


def _imported(scenario_id: str) -> Any:
    from are.simulation.data_handler.importer import JsonScenarioImporter

    scenario, _, _ = JsonScenarioImporter().import_from_json_to_benchmark(
        scenario_json(SPECS[scenario_id]), load_completed_events=False
    )
    return scenario


def test_are_takes_the_time_limit_from_the_time_tag() -> None:
    """ARE's runner gives 420 s to a scenario tagged Time (`get_scenario_duration`), 1,800 s to
    the rest: the tag decides, not the `--config` folder it was read from."""
    from are.simulation.scenarios.scenario_imported_from_json.utils import get_scenario_duration

    limits = (int(MAX_TIME_SCENARIO_DURATION), int(MAX_SCENARIO_DURATION))
    for scenario_id, spec in SPECS.items():
        expected = limits[0] if "Time" in spec.tags else limits[1]
        assert get_scenario_duration(_imported(scenario_id), *limits) == expected, scenario_id
    assert {s.config for s in SPECS.values() if "Time" in s.tags} == {TIME_CONFIG}
    assert {s.config for s in SPECS.values() if "Time" not in s.tags} == {CONFIG}


def test_each_scenario_is_picked_by_its_own_marker() -> None:
    """The stub plays the first script whose marker is in the conversation: no marker may
    contain another."""
    markers = [s.marker for s in SPECS.values()]
    for marker in markers:
        assert [m for m in markers if m in marker] == [marker]
