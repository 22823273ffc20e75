"""Tool calls by ARE public name (`App__method`), with ARE's error semantics.

* unknown tool: `UnknownToolError`, nothing touched;
* arguments that do not bind or fail ARE's `type_check`: `InvalidArgsError`, nothing logged;
* the app raises: ARE has already logged an AGENT CompletedEvent carrying the exception;
  `ToolFailedError` carries the message, its sandbox's host paths as the agent names them
  (`areasync.bridge.sandbox.host_paths`);
* the call went over the session's per-call budget (`areasync.bridge.budget`: wall time,
  entries listed): stopped, ARE logged it as failed; `ToolBudgetExceededError`.

The call runs synchronously, between ticks, on the caller's thread (the event loop). It is never
held across an await: ARE's EventRegisterer state is thread-local and shared by all tasks.

This is the hot path of every agent's tool call, so what does not change between calls is worked
out once per tool (`_Binding`): the signature the arguments are checked against, and whether the
tool is ARE's plain `AppTool`. For those, `AppTool.__call__` is carried out here step by step
(random failure injection, the call, the `llm_formatter`) minus its two debug log lines, which
ARE formats eagerly (`colored(f"...")` and `str(result)`) even when nothing logs at DEBUG; with
the `are.simulation.tool_utils` logger at DEBUG, ARE's own `__call__` runs. ARE's
`event_registered` wrapper also computes `inspect.signature` of the app's function on every
call; the function's signature never changes, so it is stored on the function as
`__signature__`, which `inspect.signature` returns as is (its documented protocol): the same
`Signature`, computed once per process.

The arguments are bound once, not twice. Our up-front check (`_Binding.check`: refuse arguments that
do not bind, touching nothing) binds them to the same signature that ARE's wrappers bind them to
(what each of these costs a call: docs/topics/performance.md, "Design measurements"). Where `call`
hands them straight to one of ARE's wrappers that binds before it does anything else - `type_check`,
or `event_registered` while events are active (with `disable_events()` it makes the bare call) -
recognised by the wrapper's code object, the check is left to ARE: its `TypeError` arrives with
nothing logged, and the error then carries the up-front check's message (the check runs on that path
only). The check stays up front where something would happen first: a random failure to draw
(`failure_probability`, whose draw must not be consumed by a refused call), ARE's own
`AppTool.__call__` (a subclass, or its logger at DEBUG: it logs the call first), any other function.
Whether a call logged anything is read from the event log's counter of events taken in
(`PublishingEventLog.logged`), not from its `len` (which takes the queue's lock).
`tests/bridge/test_tool_call_shortcuts.py` checks, for every tool of every offline registered
scenario, that arguments that do not bind get the up-front check's message, log and publish nothing.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import logging
import types
from collections.abc import Callable
from random import Random
from typing import Any

from are.simulation import tool_utils
from are.simulation.tool_utils import AppTool
from are.simulation.types import EventRegisterer
from are.simulation.utils import type_check

from areasync.bridge.budget import UNBOUNDED, CallBudget, OverBudget
from areasync.bridge.convert import to_plain, tool_info
from areasync.bridge.patterns import ROUTED
from areasync.bridge.sandbox.host_paths import as_agent_sees
from areasync.protocol.errors import CodedError, ErrorCode
from areasync.protocol.records import ToolInfo


class ToolCallError(CodedError):
    """A tool call that did not succeed."""


class UnknownToolError(ToolCallError):
    code = ErrorCode.UNKNOWN_TOOL


class InvalidArgsError(ToolCallError):
    code = ErrorCode.INVALID_ARGS
    hint = "; nothing was run (list_tools gives the arguments)"


class ToolFailedError(ToolCallError):
    code = ErrorCode.TOOL_FAILED
    hint = "; ARE logged the call with its exception (an AGENT event on the stream)"


class ToolBudgetExceededError(ToolCallError):
    """The call went over the session's per-call budget and was stopped (ARE logged it)."""

    code = ErrorCode.TOOL_BUDGET_EXCEEDED
    hint = "; ARE logged the call as failed (an AGENT event on the stream) and the session goes on"


class ToolBox:
    """The agent-facing tools of an environment's apps, by public name."""

    def __init__(self, env: Any, budget: CallBudget = UNBOUNDED) -> None:
        self._env = env
        self.budget = budget
        self._tools: dict[str, AppTool] | None = None
        self._bindings: dict[str, _Binding] = {}
        self._offloading: frozenset[str] = frozenset()  # see `offloads`
        self._app_count = -1

    def _index(self) -> dict[str, AppTool]:
        # Apps can be registered after start (rarely): rebuild when the app set changes.
        if self._tools is None or self._app_count != len(self._env.apps):
            self._tools = {str(t._public_name): t for t in self._env.get_tools()}
            self._bindings = {}
            self._offloading = frozenset(
                name
                for name, tool in self._tools.items()
                if self.budget.bounded and _matches_patterns(tool.function)
            )
            self._app_count = len(self._env.apps)
        return self._tools

    def names(self) -> list[str]:
        return sorted(self._index())

    def infos(self) -> list[ToolInfo]:
        return [tool_info(tool) for _, tool in sorted(self._index().items())]

    def get(self, name: str) -> AppTool:
        tool = self._index().get(name)
        if tool is None:
            raise UnknownToolError(
                f"unknown tool {name!r}: list_tools gives the available names "
                "(public names look like 'EmailClientApp__send_email')"
            )
        return tool

    def offloads(self, name: str) -> bool:
        """Whether a call of `name` may hand work to a worker thread (`areasync.bridge.offload`):
        the tools that match an agent's pattern, off the loop when calls have a budget
        (`areasync.bridge.patterns.ROUTED`). Such a call should run inside `bridged`;
        elsewhere it runs in place (the tool of an app added since the last call: still
        bounded, on the loop, this once)."""
        if self._tools is None:
            self._index()
        return name in self._offloading

    def call(self, name: str, args: dict[str, Any]) -> Any:
        """Call a tool; returns its result as JSON-typed data."""
        tool = self.get(name)
        if not isinstance(args, dict):
            raise InvalidArgsError(f"arguments of {name} must be an object of named arguments")
        binding = self._bindings.get(name)
        if binding is None or binding.tool is not tool or binding.function is not tool.function:
            binding = self._bindings[name] = _Binding(tool)
        binding.check(name, args)
        log = self._env.event_log
        before = _logged(log)
        try:
            return self.budget.run(_call, binding, args)
        except OverBudget as exc:
            raise ToolBudgetExceededError(f"{name}: {exc}") from exc
        except TypeError as exc:
            if _logged(log) == before:
                # ARE's binding or type_check rejected the arguments before the app ran:
                # nothing happened. Arguments that do not bind get the message they got when
                # checked up front.
                binding.check(name, args, always=True)
                raise InvalidArgsError(f"invalid arguments for {name}: {exc}") from exc
            raise self._failed(name, exc) from exc
        except Exception as exc:
            raise self._failed(name, exc) from exc

    def _failed(self, name: str, exc: BaseException) -> ToolFailedError:
        """ARE's exception as the agent may read it: its paths as the agent names them."""
        return ToolFailedError(as_agent_sees(self._env.apps.values(), f"{name} failed: {exc}"))


def _matches_patterns(function: Any) -> bool:
    """Whether `function` is one of ARE's that match an agent's pattern (`ROUTED`)."""
    module = getattr(function, "__module__", None)
    return getattr(function, "__name__", None) in ROUTED.get(module or "", ())


def _call(binding: _Binding, args: dict[str, Any]) -> Any:
    """The call and its result as JSON-typed data (what the budget bounds: both grow with
    what the agent asks for)."""
    result = binding.call(args)
    plain = to_plain(result)
    if isinstance(result, io.IOBase):
        # ARE's file tools (`SandboxLocalFileSystem__open`) return an open handle: the caller
        # gets its repr, and ARE's event log kept it open, one descriptor per call, for the
        # session's life (an agent could exhaust the server's descriptors).
        result.close()
    return plain


_tool_logger = logging.getLogger(tool_utils.__name__)


def _logged(log: Any) -> int:
    """How many events `log` has taken in (ARE's `len` sorts nothing but takes a lock)."""
    count = getattr(log, "logged", None)
    return len(log) if count is None else int(count)


def _reference_code(decorator: Callable[[Callable[..., Any]], Any]) -> types.CodeType:
    def function(self: Any) -> None:
        return None

    return decorator(function).__code__


# The code of ARE's two wrappers that bind a tool's arguments to the app's signature before they
# do anything else: every function they wrap shares it.
_EVENT_REGISTERED_CODE = _reference_code(EventRegisterer.event_registered())
_TYPE_CHECK_CODE = _reference_code(type_check)


def _always() -> bool:
    return True


def _binds_first(function: Any) -> Callable[[], bool] | None:
    """If `function` is one of ARE's wrappers that binds its arguments (raising TypeError)
    before it does anything else, a test of whether it does so now; else None."""
    code = getattr(function, "__code__", None)
    if code is _TYPE_CHECK_CODE:
        return _always  # `type_check`: signature, bind, type checks, then the call
    if code is _EVENT_REGISTERED_CODE:
        # `event_registered`: when events are active, a uuid, then signature and bind, then the
        # rest; when they are not (`disable_events()`), the bare call.
        cells = dict(zip(code.co_freevars, function.__closure__ or (), strict=True))
        registerer = cells["cls"].cell_contents
        return registerer.is_active
    return None


def _memoize_signature(function: Any) -> None:
    """Store the signature of the innermost function behind `function`'s decorators on it, where
    `inspect.signature` looks first: ARE's wrapper asks for it on every call."""
    inner = inspect.unwrap(function)
    if isinstance(inner, types.FunctionType) and getattr(inner, "__signature__", None) is None:
        inner.__signature__ = inspect.signature(inner)  # type: ignore[attr-defined]


class _Binding:
    """What a tool call needs that does not change between calls: worked out once per tool."""

    __slots__ = ("are_binds", "bound_self", "function", "plain", "signature", "tool")

    def __init__(self, tool: AppTool) -> None:
        self.tool = tool
        self.function = tool.function
        self.signature: inspect.Signature | None = None
        if self.function is not None:
            with contextlib.suppress(TypeError, ValueError):  # no signature: ARE's own checks
                self.signature = inspect.signature(self.function)
                _memoize_signature(self.function)
        self.bound_self: tuple[Any, ...] = (
            () if tool.class_instance is None else (tool.class_instance,)
        )
        # A subclass may do more in __call__: leave those to ARE.
        self.plain = type(tool).__call__ is AppTool.__call__
        self.are_binds = _binds_first(self.function) if self.plain else None

    def check(self, name: str, args: dict[str, Any], *, always: bool = False) -> None:
        """Raise InvalidArgsError, touching nothing, if `args` do not bind to the function.

        Skipped (unless `always`) where `call` will hand the arguments straight to an ARE
        wrapper that binds them to the same signature before anything else happens."""
        if self.signature is None:
            return
        if not always and self.are_binds is not None and self._fast() and self.are_binds():
            return
        try:
            self.signature.bind(*self.bound_self, **args)
        except TypeError as exc:
            expected = ", ".join(a.name for a in self.tool.args) or "no arguments"
            raise InvalidArgsError(
                f"invalid arguments for {name}: {exc}; expected: {expected}"
            ) from exc

    def _fast(self) -> bool:
        """Whether `call` goes straight to the function: no random failure to draw first."""
        return self.tool.failure_probability is None and not _tool_logger.isEnabledFor(
            logging.DEBUG
        )

    def call(self, args: dict[str, Any]) -> Any:
        """`tool(**args)`, as ARE's `AppTool.__call__` (ARE 1.2.0) does it."""
        tool = self.tool
        function = tool.function
        if not self.plain or function is None or _tool_logger.isEnabledFor(logging.DEBUG):
            return tool(**args)
        if tool.failure_probability is not None:
            if tool.rng is None:
                tool.rng = Random(tool.seed)
            if tool.rng.random() < tool.failure_probability:
                raise Exception(tool.failure_message_template.format(name=tool.name))
        if tool.class_instance is not None:
            result = function(tool.class_instance, **args)
        else:
            result = function(**args)
        formatter = getattr(function, "llm_formatter", None)
        if formatter is not None:
            result = formatter(result)
        return result
