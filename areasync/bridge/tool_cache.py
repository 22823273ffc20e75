"""ARE's tool objects without re-parsing every docstring for every session.

ARE builds a session's tools on the agent's first tool call: `App.get_tools()` walks each app
class and calls `build_tool(app, function)` for every tool method, which parses the method's
docstring (`docstring_parser`), reads its signature and type hints and parses and type-checks
the usage example in its docstring, then makes the `AppTool`. For scenario_tutorial that is 55
tools, milliseconds of CPU per session, every session, although everything it parses belongs to
the app *class*: only the `AppTool` itself (bound to this session's app instance, its name, its
failure probability) is the session's.

`build_tool` here gives the same `AppTool` (equal in every field) from parts worked out once per
function: the description, the return type and description, whether it writes, and each
argument's name, type, description, default, example and type object. The parts are taken from
an `AppTool` that ARE's own `build_tool` made for the function with a stand-in app (so the
parsing is ARE's, not a copy of it); the stand-in's tool is dropped and the attribute ARE's
`AppTool.__post_init__` sets on the function is put back as it was, so the only trace of a
build is the session's own `AppTool`, made by ARE's `AppTool` constructor exactly as
`build_tool` makes it (which re-attaches it to the function, as ARE does). Each session gets
fresh `AppToolArg`s (an example value that is a list or a dict is copied, as ARE parses a new
one for every build).

What the cache may hold. ARE's class-level AppTool references chained sessions together
(`scenarios.detach_apps`), so the cache holds nothing of a session: it is keyed weakly by the
class's function object (a plain function defined on an app class: a bound method, an instance's
own attribute or anything else is left to ARE's `build_tool` every time), and its entries are
strings, type objects, the function's own default values and a fingerprint of the function
(name, docstring, operation type, and each layer's defaults, annotations, code and
`__signature__` behind its decorators, compared by identity: a change to any of them re-parses).
No app, no `AppTool`, no bound method. A function ARE cannot build a tool from (no docstring...)
is not cached: ARE's `build_tool` runs and raises as it always does. (`tools` stores a tool
function's signature on it as `__signature__` on its first call: that function is parsed once
more, in the next session that builds it.)

What a session's first tool call then costs, and what the first session of the process pays
for the parsing: `python bench/bridge.py --only first` (docs/topics/performance.md,
"Sessions"). What is left is ARE's walk over each app class's attributes and the session's own
`AppTool`s; the parsed descriptions are shared.

Where it applies. `AsyncEnvironment.get_tools_by_app` (what `get_tools()` calls) swaps this
`build_tool` in for the name ARE's app module calls, for the duration of the call only: ARE's
own environments in the process build their tools with ARE's function, and a function
someone else put there (a mock) is left alone. Apps that override `get_tools_with_attribute`
(MessagingAppV2 appends to each tool's description) keep doing so on their own tools.
`tests/bridge/test_tool_cache.py` checks that the tools of every offline registered scenario, of
every tool type, equal ARE's freshly built ones, and that served sessions are still collected.
"""

from __future__ import annotations

import contextlib
import copy
import types
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from are.simulation.apps import app as are_app_module
from are.simulation.tool_utils import APPTOOL_ATTR_NAME, AppTool, AppToolArg

_are_build_tool = are_app_module.build_tool
_MISSING = object()
_IMMUTABLE = (str, int, float, bool, type(None), bytes)


@dataclass(frozen=True)
class _Parts:
    """What `build_tool` derives from the function alone (ARE 1.2.0's `build_tool`)."""

    fingerprint: tuple[Any, ...]
    func_name: str
    function_description: str | None
    args: tuple[tuple[str, str, str | None, bool, Any, Any, Any], ...]
    return_type: Any
    return_description: str | None
    write_operation: bool | None


_parts: weakref.WeakKeyDictionary[Any, _Parts] = weakref.WeakKeyDictionary()


class _StandIn:
    """The app `build_tool` is given to work out a function's parts: nothing of any session."""

    name = "_areasync_stand_in"


def _layers(function: Any) -> Iterator[Any]:
    """`function` and every function behind it through `__wrapped__` (ARE's decorators)."""
    seen: set[int] = set()
    while function is not None and id(function) not in seen:
        seen.add(id(function))
        yield function
        function = getattr(function, "__wrapped__", None)


def _fingerprint(function: Any) -> tuple[Any, ...]:
    parts: list[Any] = [
        function.__name__,
        function.__doc__,
        getattr(function, "__operation_type__", None),
    ]
    for layer in _layers(function):
        parts += [
            getattr(layer, "__defaults__", None),
            getattr(layer, "__kwdefaults__", None),
            getattr(layer, "__annotations__", None),
            getattr(layer, "__code__", None),
            getattr(layer, "__dict__", {}).get("__signature__"),
        ]
    return tuple(parts)


def _same(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


@contextlib.contextmanager
def _attribute_kept(function: Any) -> Iterator[None]:
    """Put back the AppTool attribute that `AppTool.__post_init__` sets on `function` (and on
    what it wraps) as it was."""
    saved = [
        (namespace, namespace.get(APPTOOL_ATTR_NAME, _MISSING))
        for namespace in (getattr(layer, "__dict__", None) for layer in _layers(function))
        if isinstance(namespace, dict)
    ]
    try:
        yield
    finally:
        for namespace, value in saved:
            if value is _MISSING:
                namespace.pop(APPTOOL_ATTR_NAME, None)
            else:
                namespace[APPTOOL_ATTR_NAME] = value


def _parts_of(function: Any) -> _Parts | None:
    if type(function) is not types.FunctionType:
        return None
    fingerprint = _fingerprint(function)
    cached = _parts.get(function)
    if cached is not None and _same(cached.fingerprint, fingerprint):
        return cached
    try:
        with _attribute_kept(function):
            tool = _are_build_tool(_StandIn(), function, None)
    except Exception:
        return None  # ARE's build_tool will raise it again, for the session's app
    parts = _Parts(
        fingerprint=fingerprint,
        func_name=function.__name__,
        function_description=tool.function_description,
        args=tuple(
            (
                arg.name,
                arg.arg_type,
                arg.description,
                arg.has_default,
                arg.default,
                arg.example_value,
                arg.type_obj,
            )
            for arg in tool.args
        ),
        return_type=tool.return_type,
        return_description=tool.return_description,
        write_operation=tool.write_operation,
    )
    _parts[function] = parts
    return parts


def build_tool(app: Any, func: Any, failure_probability: float | None = None) -> AppTool:
    """ARE's `build_tool(app, func, failure_probability)`, from parts parsed once per function."""
    parts = _parts_of(func)
    if parts is None:
        return _are_build_tool(app, func, failure_probability)
    cls = app.__class__
    return AppTool(
        class_name=cls.__name__,
        app_name=app.name,
        name=f"{app.name}__{parts.func_name}",
        function_description=parts.function_description,
        args=[
            AppToolArg(
                name=name,
                arg_type=arg_type,
                description=description,
                has_default=has_default,
                default=default,
                example_value=(
                    example if isinstance(example, _IMMUTABLE) else copy.deepcopy(example)
                ),
                type_obj=type_obj,
            )
            for name, arg_type, description, has_default, default, example, type_obj in parts.args
        ],
        class_instance=app,
        function=func,
        return_type=parts.return_type,
        return_description=parts.return_description,
        write_operation=parts.write_operation,
        failure_probability=failure_probability,
    )


@contextlib.contextmanager
def building() -> Iterator[None]:
    """Make ARE's app module build tools with this module's `build_tool` for the duration."""
    if are_app_module.build_tool is not _are_build_tool:  # nested, or someone else's function
        yield
        return
    are_app_module.build_tool = build_tool
    try:
        yield
    finally:
        are_app_module.build_tool = _are_build_tool


def cached_functions() -> list[Callable[..., Any]]:
    """The functions whose parts are cached (for tests)."""
    return list(_parts.keys())
