"""Agents' regular expressions go through the bounded matcher, which matches what `re` matches."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import are.simulation.apps
import pytest

from areasync.bridge import patterns
from areasync.bridge.watchdog import OverTime, watchdog

APPS = Path(are.simulation.apps.__file__).parent
# Functions of these modules that take a pattern first: a call whose pattern is not a literal
# may take one chosen by an agent.
MATCHERS = {
    "re": {
        "compile",
        "search",
        "match",
        "fullmatch",
        "findall",
        "finditer",
        "sub",
        "subn",
        "split",
    },
    "fnmatch": {"fnmatch", "fnmatchcase", "filter", "translate"},
    "glob": {"glob", "iglob"},
}


def _chosen_pattern(node: ast.AST) -> bool:
    """Whether `node` calls a matcher with a pattern that is not a literal."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return False
    owner = node.func.value
    if not (isinstance(owner, ast.Name) and node.func.attr in MATCHERS.get(owner.id, ())):
        return False
    return bool(node.args) and not isinstance(node.args[0], ast.Constant)


def _functions_matching_a_chosen_pattern() -> set[tuple[str, str]]:
    """(module, function) of every function of ARE's apps that matches such a pattern."""
    found = set()
    for path in APPS.rglob("*.py"):
        if "tests" in path.parts:
            continue
        module = ".".join(path.relative_to(APPS.parent.parent.parent).with_suffix("").parts)
        for function in ast.walk(ast.parse(path.read_text())):
            if isinstance(function, ast.FunctionDef) and any(
                _chosen_pattern(node) for node in ast.walk(function)
            ):
                found.add((module, function.name))
    return found


def test_every_are_tool_that_matches_a_pattern_it_was_given_is_routed() -> None:
    found = _functions_matching_a_chosen_pattern()
    assert found, "the sweep found nothing: has ARE's layout changed?"
    routed = {(module, name) for module, names in patterns.ROUTED.items() for name in names}
    assert found <= routed


@pytest.mark.parametrize(
    ("pattern", "text"),
    [
        ("taylor", "Taylor Swift"),
        (r"^\w+ \w+$", "Taylor Swift"),
        (r"sw(i|a)ft", "TAYLOR SWIFT"),
        (r"\d{3}-\d{4}", "call 555-1234 now"),
        (r"a.c", "a\nc"),
        (r"(?s)a.c", "a\nc"),
        (r"café", "CAFÉ au lait"),
        (r"[^a-z]", "abc"),
    ],
)
def test_the_bounded_matcher_finds_what_re_finds(pattern: str, text: str) -> None:
    routed = patterns.BoundedPattern(pattern, re.IGNORECASE).search(text)
    plain = re.search(pattern, text, re.IGNORECASE)
    assert (routed and routed.span()) == (plain and plain.span())


def test_a_pattern_re_refuses_is_refused_with_res_own_message() -> None:
    with pytest.raises(re.error) as plain:
        re.compile("(a")
    with pytest.raises(re.error) as routed:
        patterns.BoundedPattern("(a", re.IGNORECASE)
    assert str(routed.value) == str(plain.value)


def test_a_match_runs_out_at_the_running_calls_deadline() -> None:
    pattern = patterns.BoundedPattern("(a|a)+$", 0)
    with pytest.raises(OverTime):
        watchdog.call(pattern.search, "a" * 40 + "!", seconds=0.2)
