"""Tools built from cached parts (`areasync.bridge.tool_cache`) equal ARE's freshly built ones.

For every app of every offline registered scenario (and every ARE app class that builds with no
arguments), every tool type, with and without a failure probability: the tools built through
the cache - the first time, which fills it, and again from it - equal, field by field, the tools
ARE's own `build_tool` makes for the same app; so do our `ToolInfo`s and ARE's OpenAI and
metadata views, and which tool each function points back at. The cache holds nothing of a
session.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import types
from collections.abc import Iterator
from typing import Any

import are.simulation.apps as are_apps
import pytest
from are.simulation.apps import app as are_app_module
from are.simulation.apps.app import App, ToolType
from are.simulation.tool_utils import AppTool, AppToolArg, ToolAttributeName

from areasync import Simulation
from areasync.bridge import tool_cache
from areasync.bridge.convert import tool_info
from areasync.conformance.scenarios import load_scenario, offline_scenario_ids

KINDS = [
    (ToolType.APP, ToolAttributeName.APP),
    (ToolType.USER, ToolAttributeName.USER),
    (ToolType.ENV, ToolAttributeName.ENV),
    (ToolType.DATA, ToolAttributeName.DATA),
]


def fields(tool: AppTool) -> dict[str, Any]:
    out = {f.name: getattr(tool, f.name) for f in dataclasses.fields(tool)}
    # With a failure probability ARE seeds the tool's Random from `seed`, None: from the OS.
    out["rng"] = type(out["rng"])
    out["args"] = [
        {f.name: getattr(arg, f.name) for f in dataclasses.fields(arg)} for arg in tool.args
    ]
    return out


def views(tool: AppTool) -> tuple[Any, ...]:
    return (fields(tool), tool_info(tool), tool.to_open_ai(), tool.to_metadata_dict())


def build(app: App, kind: tuple[ToolType, ToolAttributeName], cached: bool) -> list[AppTool]:
    tool_type, attribute = kind
    if cached:
        with tool_cache.building():
            assert are_app_module.build_tool is tool_cache.build_tool
            return app.get_tools_with_attribute(attribute, tool_type)
    assert are_app_module.build_tool is not tool_cache.build_tool
    return app.get_tools_with_attribute(attribute, tool_type)


def compare(app: App) -> int:
    """Build every kind of tool of `app` with ARE, then cached twice; the tools compared."""
    compared = 0
    for kind in KINDS:
        try:
            are_tools = build(app, kind, cached=False)
        except Exception as exc:  # ARE refuses a tool of this app: so must we, the same way
            with pytest.raises(type(exc)) as ours_raised:
                build(app, kind, cached=True)
            assert str(ours_raised.value) == str(exc)
            continue
        are_links = [AppTool.get_tool_for_function(t.function) is t for t in are_tools]  # type: ignore[arg-type]
        are_views = [views(t) for t in are_tools]
        for _ in range(2):  # fills the cache, then uses it
            ours = build(app, kind, cached=True)
            assert [views(t) for t in ours] == are_views, (type(app).__name__, kind)
            assert [AppTool.get_tool_for_function(t.function) is t for t in ours] == are_links  # type: ignore[arg-type]
            assert all(
                a is not b and x is not y
                for a, b in zip(ours, are_tools, strict=True)
                for x, y in zip(a.args, b.args, strict=True)
            )
        compared += len(are_tools)
    return compared


@pytest.mark.parametrize("scenario_id", offline_scenario_ids())
def test_every_scenarios_tools_equal_ares(scenario_id: str) -> None:
    scenario = load_scenario(scenario_id)
    compared = sum(compare(app) for app in scenario.apps or [])
    assert compared > 0


def test_tools_with_a_failure_probability_equal_ares() -> None:
    for app in load_scenario("scenario_tutorial").apps or []:
        app.set_failure_probability(0.25)
        assert compare(app) > 0


def app_classes() -> Iterator[type[App]]:
    for module in pkgutil.walk_packages(are_apps.__path__, are_apps.__name__ + "."):
        importlib.import_module(module.name)

    def subclasses(cls: type) -> Iterator[type]:
        for sub in cls.__subclasses__():
            yield sub
            yield from subclasses(sub)

    yield from sorted(
        {c for c in subclasses(App) if c.__module__.startswith(are_apps.__name__ + ".")},
        key=lambda c: (c.__module__, c.__qualname__),
    )


def test_every_are_app_class_that_builds_bare_equals_ares() -> None:
    built = 0
    for cls in app_classes():
        try:
            app = cls()
        except Exception:
            continue  # needs arguments (or a network): the scenarios above cover those used
        built += 1
        compare(app)
    assert built >= 10


async def test_a_simulations_tools_come_from_the_cache_and_equal_ares() -> None:
    sim = Simulation.load("scenario_tutorial", mode="manual")
    infos = sim.list_tools()
    functions = set(map(id, tool_cache.cached_functions()))
    tools = [t for app in sim.env.apps.values() for t in app.get_tools()]
    assert tools and all(id(t.function) in functions for t in tools)
    # The same tools ARE builds for the same scenario's apps.
    fresh = load_scenario("scenario_tutorial")
    are_infos = sorted(
        (tool_info(t) for app in fresh.apps or [] for t in app.get_tools()),
        key=lambda info: info.name,
    )
    assert infos == are_infos
    await sim.stop()


def test_the_swap_is_undone_and_leaves_other_functions_alone() -> None:
    original = are_app_module.build_tool
    with tool_cache.building():
        with tool_cache.building():
            assert are_app_module.build_tool is tool_cache.build_tool
        assert are_app_module.build_tool is tool_cache.build_tool
    assert are_app_module.build_tool is original

    def other(*args: Any) -> Any:
        return original(*args)

    are_app_module.build_tool = other
    try:
        with tool_cache.building():
            assert are_app_module.build_tool is other
    finally:
        are_app_module.build_tool = original


def test_a_changed_docstring_is_parsed_again() -> None:
    class Notes(App):
        def write(self, text: str) -> str:
            """Write a note.

            :param text: what to write
            :returns: the note
            """
            return text

        write._is_app_tool = True  # type: ignore[attr-defined]

    app = Notes()
    [first] = build(app, KINDS[0], cached=True)
    Notes.write.__doc__ = "Write a note, again.\n\n:param text: the words\n"
    [second] = build(app, KINDS[0], cached=True)
    [are_tool] = build(app, KINDS[0], cached=False)
    assert fields(second) == fields(are_tool) != fields(first)


def test_a_function_ares_build_tool_refuses_is_refused_the_same_way() -> None:
    class Bare(App):
        def undocumented(self) -> None:
            return None

        undocumented._is_app_tool = True  # type: ignore[attr-defined]
        undocumented.__doc__ = None

    # ARE fills a missing docstring from a base class, then refuses a function without one.
    with pytest.raises(Exception, match="without documenting it") as are_error:
        build(Bare(), KINDS[0], cached=False)
    with pytest.raises(Exception, match="without documenting it") as our_error:
        build(Bare(), KINDS[0], cached=True)
    assert type(our_error.value) is type(are_error.value)
    assert str(our_error.value) == str(are_error.value)


SESSION_TYPES = (App, AppTool, AppToolArg, tool_cache._StandIn)


def walk(value: Any, depth: int = 0) -> Iterator[Any]:
    """`value` and, through plain containers only, everything in it."""
    yield value
    if depth > 20:
        return
    if isinstance(value, tuple | list | set | frozenset):
        for item in value:
            yield from walk(item, depth + 1)
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from walk(key, depth + 1)
            yield from walk(item, depth + 1)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from walk(getattr(value, f.name), depth + 1)


def test_the_cache_holds_nothing_of_a_session() -> None:
    sim = Simulation.load("scenario_tutorial", mode="manual")
    sim.list_tools()
    entries = list(tool_cache._parts.values())
    assert entries
    for entry in entries:
        for item in walk(entry):
            assert not isinstance(item, SESSION_TYPES), item
            assert not isinstance(item, types.FunctionType | types.MethodType), item
