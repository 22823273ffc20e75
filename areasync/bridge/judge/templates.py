"""ARE's `jinja_format`, each template compiled once per process, while a judge is built.

Why: ARE's `GraphPerEventJudge` builds an LLM checker for each of ~90 tools, and every checker
formats its prompts with `jinja_format`, which parses (to check the variables) and compiles
its template anew on each call: about 4,100 compilations of 21 distinct templates, seconds
of CPU for every judged scenario (`bench/judge.py`, the tiny dataset's email scenario: ARE's
own preparation 2.70 s, areasync's 0.079 s with this). `are-benchmark run` pays it per
scenario too; a server that creates a judged session per run would spend most of its import
lane on it.

What: `cached_jinja_format` is ARE's function with the parse and the compilation of each
template string kept (a `jinja2.Template` is immutable once compiled and renders the same
text for the same arguments, from any thread); rendering stays per call, so no prompt text (a
session's data, once the judge formats the agent's events) outlives the call;
`cached_templates()` puts it in place of the `jinja_format` that ARE's judge modules imported,
for the length of a `with` block (`areasync.bridge.judge.llm` holds it around ARE's preprocessing,
`areasync.gaia2.runner` around a whole benchmark run; the swap is process-wide meanwhile, and
gives the same text to any other caller).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any
from unittest.mock import patch

from jinja2 import Environment, Template, meta

# ARE's judge modules that call `jinja_format` by the name they imported.
_USERS = ("are.simulation.validation.utils.llm_utils", "are.simulation.validation.judge")


# The judge's templates are a few dozen constant strings; the bound only guards against a
# caller formatting unbounded distinct texts through the same function.
_CACHE_SIZE = 1024


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _compiled(template: str) -> Template:
    return Template(template, keep_trailing_newline=True)


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _variables(template: str) -> frozenset[str]:
    return frozenset(meta.find_undeclared_variables(Environment().parse(template)))


def cached_jinja_format(template: str, skip_validation: bool = True, **kwargs: Any) -> str:
    """ARE's `jinja_format` (are.simulation.scenarios.utils.personalization.utils), the same
    text and the same refusal, without re-parsing or re-compiling a template it has seen."""
    if not skip_validation:
        variables = set(_variables(template))
        if not all(k in kwargs for k in variables):
            raise ValueError(
                f"Expected: {variables}, got: {sorted(kwargs)}.\nTemplate:\n{template}"
            )
        kwargs = {k: kwargs[k] for k in variables}
    return _compiled(template).render(**kwargs)


@contextmanager
def cached_templates() -> Iterator[None]:
    """ARE's judge modules format with `cached_jinja_format` inside the block."""
    import importlib

    with ExitStack() as stack:
        for name in _USERS:
            module = importlib.import_module(name)
            stack.enter_context(patch.object(module, "jinja_format", cached_jinja_format))
        yield
