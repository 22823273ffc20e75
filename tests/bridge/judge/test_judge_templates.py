"""ARE's judge built with its prompt templates compiled once (`bridge.judge.templates`) says
exactly what ARE's own builds say: the same prompts (every prompt set of ARE's judge), the same
refusal of a missing variable; each template is compiled once."""

from __future__ import annotations

from typing import Any

import are.simulation.validation.prompts as prompts_module
import msgspec
import pytest
from are.simulation.scenarios.utils.personalization.utils import jinja_format as ares

from areasync.bridge.judge import templates as judge_templates
from areasync.bridge.judge.llm import preprocess_judged
from areasync.bridge.judge.options import JudgeOptions
from areasync.bridge.judge.templates import cached_jinja_format
from areasync.bridge.scenarios.json_import import import_benchmark
from areasync.gaia2.dataset import SPECS, scenario_json

OPTIONS = JudgeOptions(model="openai/judge", provider="local", endpoint="http://127.0.0.1:9/v1")


def prompts(judge: Any) -> list[tuple[str, str]]:
    """Every prompt ARE's judge will send: each LLM function's system prompt and examples."""
    from are.simulation.validation.utils.llm_utils import LLMFunctionBase

    found: list[tuple[str, str]] = []
    seen: set[int] = set()
    stack = [judge]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, LLMFunctionBase) and hasattr(node, "system_prompt"):
            found.append((node.system_prompt, repr(getattr(node, "examples", None))))
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list | tuple):
            stack.extend(node)
        elif type(node).__module__.startswith("are.simulation.validation"):
            stack.extend(vars(node).values())
    return sorted(found)


def test_a_judge_built_with_cached_templates_has_ares_own_prompts() -> None:
    from are.simulation.scenarios.scenario_imported_from_json.utils import (
        load_and_preprocess_scenario_str,
    )

    from areasync.bridge.judge.llm import runner_config

    text = scenario_json(SPECS["tiny_email"])
    ours = import_benchmark(msgspec.json.decode(text))
    preprocess_judged(ours, OPTIONS)
    theirs, _ = load_and_preprocess_scenario_str(runner_config(OPTIONS), text)
    mine = prompts(ours.judge)
    assert mine and mine == prompts(theirs.judge)


def test_a_missing_variable_is_refused_as_ares_refuses_it() -> None:
    from are.simulation.scenarios.utils.personalization.utils import jinja_format

    template = "Hello {{ name }} from {{ place }}"
    with pytest.raises(ValueError) as theirs:
        jinja_format(template, skip_validation=False, name="Ada")
    with pytest.raises(ValueError) as ours:
        cached_jinja_format(template, skip_validation=False, name="Ada")
    assert str(ours.value).split("\n")[1:] == str(theirs.value).split("\n")[1:]
    assert cached_jinja_format(template, skip_validation=False, name="A", place="B", x=1) == (
        jinja_format(template, skip_validation=False, name="A", place="B", x=1)
    )


JUDGE_PROMPTS = sorted(name for name in dir(prompts_module) if name.endswith("_TEMPLATES"))


def test_ares_judge_prompt_sets_are_found() -> None:
    assert len(JUDGE_PROMPTS) >= 10, JUDGE_PROMPTS  # else the parametrised test checks nothing


@pytest.mark.parametrize("name", JUDGE_PROMPTS)
def test_judge_prompts_render_exactly_as_ares(name: str) -> None:
    """Every prompt set of ARE's judge: system prompt and few-shot examples."""
    prompts = getattr(prompts_module, name)
    cases = [(prompts.system_prompt_template, prompts.system_prompt_args or {})]
    for example in prompts.examples or []:
        cases.append((prompts.user_prompt_template, example["input"]))
        if prompts.assistant_prompt_template:
            cases.append((prompts.assistant_prompt_template, example["output"]))
    for template, args in cases:
        assert cached_jinja_format(template, skip_validation=False, **args) == ares(
            template, skip_validation=False, **args
        )


def test_trailing_newlines_and_unused_arguments_as_ares() -> None:
    text = "Hello {{ name }}!\n\n"
    assert cached_jinja_format(text, name="Ada", extra=1) == ares(text, name="Ada", extra=1)
    assert cached_jinja_format(text, skip_validation=False, name="Ada", extra=1) == ares(
        text, skip_validation=False, name="Ada", extra=1
    )


def test_each_template_is_compiled_once() -> None:
    text = "Once {{ x }} " + __name__
    before = judge_templates._compiled.cache_info()
    for x in range(5):
        assert cached_jinja_format(text, x=x) == f"Once {x} {__name__}"
    after = judge_templates._compiled.cache_info()
    assert after.misses - before.misses == 1 and after.hits - before.hits == 4
