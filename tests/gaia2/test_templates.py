"""`templates.jinja_format` gives exactly ARE's text and errors, compiling each template once."""

from __future__ import annotations

import are.simulation.validation.prompts as prompts_module
import pytest
from are.simulation.scenarios.utils.personalization.utils import jinja_format as ares

from areasync.gaia2 import templates
from areasync.gaia2.templates import jinja_format

JUDGE_PROMPTS = sorted(name for name in dir(prompts_module) if name.endswith("_TEMPLATES"))


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
        assert jinja_format(template, skip_validation=False, **args) == ares(
            template, skip_validation=False, **args
        )


def test_trailing_newlines_and_unused_arguments_as_ares() -> None:
    text = "Hello {{ name }}!\n\n"
    assert jinja_format(text, name="Ada", extra=1) == ares(text, name="Ada", extra=1)
    assert jinja_format(text, skip_validation=False, name="Ada", extra=1) == ares(
        text, skip_validation=False, name="Ada", extra=1
    )


def test_a_missing_variable_is_ares_value_error() -> None:
    text = "{{ a }} and {{ b }}"
    with pytest.raises(ValueError) as ours:
        jinja_format(text, skip_validation=False, a=1)
    with pytest.raises(ValueError) as theirs:
        ares(text, skip_validation=False, a=1)
    assert str(ours.value).split("\n")[1:] == str(theirs.value).split("\n")[1:]
    assert "got: ['a']" in str(ours.value)


def test_each_template_is_compiled_once() -> None:
    text = "Once {{ x }} " + __name__
    before = templates._template.cache_info()
    for x in range(5):
        assert jinja_format(text, x=x) == f"Once {x} {__name__}"
    after = templates._template.cache_info()
    assert after.misses - before.misses == 1 and after.hits - before.hits == 4
