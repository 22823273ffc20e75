"""ARE objects -> plain protocol records, at the moment ARE produces them.

Conversion happens inside ARE's hooks (`add_to_log`, `MessageQueue.put`) because ARE mutates its
objects later (Gaia2's turn logic rewrites event ids in the log): what we publish is what ARE
logged at that instant. The output holds JSON types only, so it can be sent over the wire unchanged.

Every tool call converts its arguments (the input log), its result and the logged event, so
`to_plain` first handles what those nearly always are - exactly a JSON type, or a plain `dict`
or `list` of them - by type identity, before the general chain of `isinstance` tests (the
`Mapping` test is an ABC check): the same output (`tests/bridge/test_records_fast_path.py`
compares it with the general chain's on generated values).
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import enum
import inspect
from collections.abc import Mapping
from typing import Any

from are.simulation.notification_system import Message
from are.simulation.tool_utils import AppTool
from are.simulation.types import Action, CompletedEvent, ConditionCheckAction
from are.simulation.utils.misc import get_function_name

from areasync.protocol.records import EventRecord, NotificationRecord, ToolArg, ToolInfo

_PRIMITIVES = (str, int, float, bool, type(None))
_EXACT_PRIMITIVES = frozenset(_PRIMITIVES)
_MAX_DEPTH = 64


def to_plain(value: Any, _depth: int = 0) -> Any:
    """A JSON-typed copy of `value` (dataclasses, enums, bytes, datetimes, sets, objects)."""
    # Fast path, same result: values of exactly a JSON type and plain dicts and lists of them
    # (a tool's arguments, most results) skip the general chain's isinstance tests (Mapping's
    # is an ABC check).
    kind = type(value)
    if kind in _EXACT_PRIMITIVES:
        return value
    if (kind is dict or kind is list) and _depth <= _MAX_DEPTH:
        depth = _depth + 1
        if kind is dict:
            return {
                k if type(k) is str else str(k): v
                if type(v) in _EXACT_PRIMITIVES
                else to_plain(v, depth)
                for k, v in value.items()
            }
        return [v if type(v) in _EXACT_PRIMITIVES else to_plain(v, depth) for v in value]
    return _to_plain(value, _depth)


def _to_plain(value: Any, _depth: int) -> Any:
    if isinstance(value, _PRIMITIVES):
        return value
    if _depth > _MAX_DEPTH:
        return repr(value)
    depth = _depth + 1
    if isinstance(value, Mapping):
        return {str(k): to_plain(v, depth) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = sorted(value, key=repr) if isinstance(value, set | frozenset) else value
        return [to_plain(v, depth) for v in items]
    if isinstance(value, enum.Enum):
        return to_plain(value.value, depth)
    if isinstance(value, bytes | bytearray):
        # ARE's own serialisation also carries bytes (attachments) as base64 text.
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: to_plain(getattr(value, f.name), depth)
            for f in dataclasses.fields(value)
            if not f.name.startswith("_")
        }
    if hasattr(value, "model_dump"):  # pydantic models in ARE's data handler
        return to_plain(value.model_dump(), depth)
    return repr(value)


def event_record(event: CompletedEvent) -> EventRecord:
    """The record of `event` as it is now (converted per event: the common cases are written
    out - an `Action`'s names, arguments and a result of exactly a JSON type - with the same
    output as the general path)."""
    action = event.action
    raw_args = getattr(action, "args", None) or {}
    metadata = event.metadata
    # An `Action`'s names as ARE's `app_name()` and `function_name()` give them, without the
    # calls; every other action through `event_names`.
    function = getattr(action.function, "__name__", None) if type(action) is Action else None
    if function is not None or (type(action) is Action and action.function is None):
        app = None if action.app is None else action.app.name
    else:
        app, function = event_names(event)
    return_value = None if metadata is None else metadata.return_value
    args = dict(raw_args)  # a copy (ARE may change the action's later), values made plain
    args.pop("self", None)
    for key, value in args.items():
        if type(value) not in _EXACT_PRIMITIVES:
            args[key] = to_plain(value)
    return EventRecord(
        event_id=str(event.event_id),
        # `_value_`: what the enum's `.value` (a descriptor: two calls) reads.
        event_type=event.event_type._value_,
        time=float(event.event_time) if event.event_time is not None else 0.0,
        app=app,
        function=function,
        args=args,
        return_value=return_value
        if type(return_value) in _EXACT_PRIMITIVES
        else to_plain(return_value),
        exception=metadata.exception if metadata is not None else None,
    )


def event_names(event: CompletedEvent) -> tuple[str | None, str | None]:
    """The (app, function) names of a completed event, for every action ARE logs.

    ARE's `app_name()`/`function_name()` expect an `Action` or a `ConditionCheckAction`, but a
    completed `ValidationEvent` carries the bound method `validate` itself as its action (ARE's
    own trace export writes `{}` for it): there the app is None and the function is the
    callable's name, as ARE names the function of any action.
    """
    action = event.action
    if isinstance(action, Action | ConditionCheckAction):
        return event.app_name(), event.function_name()
    if callable(action):
        return None, get_function_name(action)
    return None, None


def notification_record(message: Message) -> NotificationRecord:
    return NotificationRecord(
        message_type=message.message_type.name,
        message=message.message,
        timestamp=message.timestamp.timestamp(),
    )


def tool_info(tool: AppTool) -> ToolInfo:
    return ToolInfo(
        name=str(tool._public_name),
        description=(tool._public_description or tool.function_description or "").strip(),
        args=[
            ToolArg(
                name=arg.name,
                type=arg.arg_type,
                description=arg.description,
                required=not arg.has_default,
                default=_plain_default(arg.default) if arg.has_default else None,
            )
            for arg in tool.args
        ],
        returns=tool.return_description,
    )


def _plain_default(value: Any) -> Any:
    if value is inspect.Parameter.empty:
        return None
    return to_plain(value)
