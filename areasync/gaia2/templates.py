"""ARE's `jinja_format`, compiling each distinct template once per process.

Gaia2's judge builds a set of LLM checkers per tool of every scenario run (about 1,800 per
scenario), and each checker formats its constant prompt templates (system prompt, few-shot
examples) with `jinja_format`, which parses and compiles the template with jinja2 every time:
about 3.5 s of CPU per scenario before the judge says a word. `jinja_format` here gives the
same text and the same errors, but keeps every template it compiled (and the variables it
declares) keyed by the template's text, and every text it rendered from plain arguments
(strings, numbers, booleans, None: the judge's constant prompt arguments), so the judge's
parts are built once per process.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from jinja2 import Environment, Template, meta

# The judge's templates are a few dozen constant strings; the bound only guards against a
# caller formatting unbounded distinct texts through the same function.
_CACHE_SIZE = 1024
_PLAIN = (str, int, float, bool, type(None))


@lru_cache(maxsize=_CACHE_SIZE)
def _template(text: str) -> Template:
    return Template(text, keep_trailing_newline=True)


@lru_cache(maxsize=_CACHE_SIZE)
def _variables(text: str) -> frozenset[str]:
    return frozenset(meta.find_undeclared_variables(Environment().parse(text)))


def jinja_format(template: str, skip_validation: bool = True, **kwargs: Any) -> str:
    """`are.simulation.scenarios.utils.personalization.utils.jinja_format`, cached."""
    if not skip_validation:
        variables = set(_variables(template))
        if not all(k in kwargs for k in variables):
            raise ValueError(
                f"Expected: {variables}, got: {sorted(kwargs)}.\nTemplate:\n{template}"
            )
        kwargs = {k: kwargs[k] for k in variables}
    if all(isinstance(value, _PLAIN) for value in kwargs.values()):
        return _render(template, tuple(sorted(kwargs.items())))
    return _template(template).render(**kwargs)


@lru_cache(maxsize=_CACHE_SIZE)
def _render(template: str, arguments: tuple[tuple[str, Any], ...]) -> str:
    return _template(template).render(**dict(arguments))
