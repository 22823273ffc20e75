"""Tool calls by ARE public name (`App__method`), with ARE's error semantics.

* unknown tool: `UnknownToolError`, nothing touched;
* arguments that do not bind or fail ARE's `type_check`: `InvalidArgsError`, nothing logged;
* the app raises: ARE has already logged an AGENT CompletedEvent carrying the exception;
  `ToolFailedError` carries the message.

The call runs synchronously, between ticks, on the caller's thread (the event loop). It is never
held across an await: ARE's EventRegisterer state is thread-local and shared by all tasks.
"""

from __future__ import annotations

import inspect
from typing import Any

from are.simulation.tool_utils import AppTool

from areasync.bridge.records import to_plain, tool_info
from areasync.protocol.records import ToolInfo


class ToolCallError(Exception):
    """A tool call that did not succeed."""


class UnknownToolError(ToolCallError):
    pass


class InvalidArgsError(ToolCallError):
    pass


class ToolFailedError(ToolCallError):
    pass


class ToolBox:
    """The agent-facing tools of an environment's apps, by public name."""

    def __init__(self, env: Any) -> None:
        self._env = env
        self._tools: dict[str, AppTool] | None = None
        self._app_count = -1

    def _index(self) -> dict[str, AppTool]:
        # Apps can be registered after start (rarely): rebuild when the app set changes.
        if self._tools is None or self._app_count != len(self._env.apps):
            self._tools = {str(t._public_name): t for t in self._env.get_tools()}
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

    def call(self, name: str, args: dict[str, Any]) -> Any:
        """Call a tool; returns its result as JSON-typed data."""
        tool = self.get(name)
        if not isinstance(args, dict):
            raise InvalidArgsError(f"arguments of {name} must be an object of named arguments")
        _check_binding(name, tool, args)
        before = len(self._env.event_log)
        try:
            result = tool(**args)
        except TypeError as exc:
            if len(self._env.event_log) == before:
                # ARE's type_check rejected the arguments before the app ran: nothing happened.
                raise InvalidArgsError(f"invalid arguments for {name}: {exc}") from exc
            raise ToolFailedError(f"{name} failed: {exc}") from exc
        except Exception as exc:
            raise ToolFailedError(f"{name} failed: {exc}") from exc
        return to_plain(result)


def _check_binding(name: str, tool: AppTool, args: dict[str, Any]) -> None:
    function = tool.function
    if function is None:
        return
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return
    bound_self = () if tool.class_instance is None else (tool.class_instance,)
    try:
        signature.bind(*bound_self, **args)
    except TypeError as exc:
        expected = ", ".join(a.name for a in tool.args) or "no arguments"
        raise InvalidArgsError(
            f"invalid arguments for {name}: {exc}; expected: {expected}"
        ) from exc
