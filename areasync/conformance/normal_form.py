"""The conformance normal form: an event log with its ids, wall-clock stamps and ties ironed out.

areasync is judged by comparing its event logs with ARE's. Two runs of one scenario never agree
on generated ids, on the wall-clock stamps ARE's apps take, or on the order of events due at the
same time, so they are compared in this normal form instead. It works on any ARE `Environment`,
ours or ARE's, and imports nothing of the areasync engine.

Normal form (`normalized_log`)
    One `LogEntry` per completed event: (event type, time relative to `env.start_time`, app name,
    function name, args without `self`, return value, exception present). Values become JSON-ish
    data (dataclasses -> dicts, enums -> values, tuples/sets -> lists, bytes -> base64 text,
    datetimes -> timestamps), times and floats are rounded (default 1 digit: ARE's loops run on
    the wall clock, so every `time_manager.time()` read carries processing time; in the queue loop
    the first jump is computed from the `current_time` read in `Environment.__init__`, before
    `run()` resets the clock, so everything stamped in that run is ~1-5 ms late, e.g. an AUI
    message sent at 1 s has timestamp 1.001 or 1.002 from one run to the next), and every
    uuid-looking string (uuid4 with dashes, or 32 hex digits as `uuid4().hex` and the seeded
    `uuid_hex(rng)` make), anywhere including dict keys and inside longer strings such as event
    ids, becomes `<id1>`, `<id2>`, ... in order of first appearance. Numbers that look like the
    real wall clock (within `wall_clock_window`, default one day, of the process start or now)
    become `<wall-clock>`: ARE's app dataclasses default their timestamps to `time.time()` (an
    `Email` built while a scenario is created carries the creation time), so two constructions
    of the same scenario never agree on them. Simulated times are untouched unless a scenario
    starts at "now" (ScenarioImportedFromJson's default start time), and event times are relative.

Ordering and ties
    ARE's `EventLog` is a heap keyed on `event_time` only, and its `EventQueue` breaks time ties by
    `event_id`, which for most events embeds a uuid4. So the execution order of events due at the
    same time is random in ARE itself, and `list_view()` (a stable sort of the heap array) does not
    give insertion order back either. The normal form therefore sorts by (rounded relative time,
    canonical JSON of the entry with every id masked) and only then numbers the ids: two runs that
    did the same things at the same times compare equal whatever order they did tied things in,
    while a different result of a tied pair still shows in its return values. ReminderApp's
    `get_due_reminders` (logged as an AGENT event at the start of every tick)
    ties with the events of its tick in the same way. Values are serialised when `normalized_log`
    is called, i.e. in their final state: ARE keeps references (an `Email` argument, the
    `Reminder`s a tick returned and later marked `already_notified`), so compare two environments
    at the end of their runs, not a stream serialised at execution time against an end state.

"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import enum
import json
import math
import re
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

from are.simulation.environment import Environment
from are.simulation.types import Action, CompletedEvent, ConditionCheckAction

from areasync.protocol.records import GENERATED_ID

__all__ = ["LogEntry", "first_difference", "normalize_events", "normalized_log", "to_jsonish"]

# Python reprs of objects that have no better form carry their address: drop it, as ARE does.
_ADDRESS_RE = re.compile(r" at 0x[0-9a-fA-F]+")
_MASK = "<id>"
_WALL_CLOCK_MARK = "<wall-clock>"
_PROCESS_START = time.time()


class LogEntry(NamedTuple):
    """One completed event in comparable form (see the module docstring)."""

    event_type: str
    time: float
    app: str | None
    function: str | None
    args: dict[str, Any]
    return_value: Any
    exception: bool


class _Options(NamedTuple):
    ndigits: int
    wall_low: float  # numbers in [wall_low, wall_high] are taken for wall-clock readings
    wall_high: float


def _options(ndigits: int, wall_clock_window: float | None) -> _Options:
    if wall_clock_window is None:
        return _Options(ndigits, float("inf"), float("-inf"))  # an empty interval
    return _Options(ndigits, _PROCESS_START - wall_clock_window, time.time() + wall_clock_window)


def to_jsonish(value: Any, ndigits: int = 1, wall_clock_window: float | None = 86400.0) -> Any:
    """`value` as JSON-ish data (dict/list/str/int/float/bool/None), floats rounded.

    Numbers within `wall_clock_window` seconds of the real clock become "<wall-clock>"
    (None: keep them).
    """
    return _jsonish(value, _options(ndigits, wall_clock_window), set())


def _jsonish(value: Any, opts: _Options, active: set[int]) -> Any:
    if isinstance(value, enum.Enum):  # first: IntEnum and StrEnum are ints and strs too
        return _jsonish(value.value, opts, active)
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int | float):
        if opts.wall_low <= value <= opts.wall_high:
            return _WALL_CLOCK_MARK
        if isinstance(value, int):
            return value
        if not math.isfinite(value):
            return repr(value)  # NaN would never compare equal to itself
        return round(value, opts.ndigits) + 0.0  # + 0.0 turns -0.0 into 0.0
    if isinstance(value, bytes | bytearray | memoryview):
        return "base64:" + base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, dt.datetime):
        return _jsonish(value.timestamp(), opts, active)
    if isinstance(value, dt.date | dt.time | dt.timedelta):
        return str(value)
    if id(value) in active:  # a reference cycle
        return "<cycle>"
    active.add(id(value))
    try:
        return _jsonish_container(value, opts, active)
    finally:
        active.discard(id(value))


def _jsonish_container(value: Any, opts: _Options, active: set[int]) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: _jsonish(getattr(value, f.name, None), opts, active)
            for f in dataclasses.fields(value)
        }
    if isinstance(value, Mapping):
        return {_key(k): _jsonish(v, opts, active) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonish(v, opts, active) for v in value]
    if isinstance(value, set | frozenset):
        # Set order is arbitrary: order by content, with ids masked so random ids do not decide.
        items = [_jsonish(v, opts, active) for v in value]
        return sorted(items, key=lambda item: _canonical(_mask_ids(item)))
    model_dump = getattr(value, "model_dump", None)  # pydantic models
    if callable(model_dump):
        return _jsonish(model_dump(), opts, active)
    return _ADDRESS_RE.sub("", str(value))


def _key(key: Any) -> str:
    if isinstance(key, enum.Enum):
        key = key.value
    return key if isinstance(key, str) else str(key)


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _map_strings(value: Any, fn: Callable[[str], str]) -> Any:
    """Apply `fn` to every string in JSON-ish `value`, dict keys included, in traversal order."""
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, dict):
        return {fn(k): _map_strings(v, fn) for k, v in value.items()}
    if isinstance(value, list):
        return [_map_strings(v, fn) for v in value]
    return value


def _mask_ids(value: Any) -> Any:
    return _map_strings(value, lambda s: GENERATED_ID.sub(_MASK, s))


def _raw_entry(event: CompletedEvent, start_time: float, opts: _Options) -> LogEntry:
    app, function, raw_args = _action_view(event)
    args = {k: v for k, v in raw_args.items() if k != "self"}
    metadata = event.metadata
    return LogEntry(
        event_type=event.event_type.value,
        time=round((event.event_time or 0.0) - start_time, opts.ndigits) + 0.0,
        app=app,
        function=function,
        args=_jsonish(args, opts, set()),
        return_value=_jsonish(metadata.return_value if metadata else None, opts, set()),
        exception=bool(metadata is not None and metadata.exception is not None),
    )


def _action_view(event: CompletedEvent) -> tuple[str | None, str | None, dict[str, Any]]:
    """(app, function, args) of a completed event, whatever its action is.

    A completed `ValidationEvent` carries its bound `validate` method as its action, which
    ARE's `app_name()`, `function_name()` and `get_args()` cannot read: no app, the callable's
    name, no args (ARE's own trace export writes `{}` for that action).
    """
    action = event.action
    if isinstance(action, Action | ConditionCheckAction):
        return event.app_name(), event.function_name(), event.get_args()
    if callable(action):
        return None, getattr(action, "__name__", None), {}
    return None, None, {}


def normalize_events(
    events: Iterable[CompletedEvent],
    start_time: float,
    ndigits: int = 1,
    wall_clock_window: float | None = 86400.0,
) -> list[LogEntry]:
    """The normal form of completed events (see the module docstring)."""
    opts = _options(ndigits, wall_clock_window)
    raw = [_raw_entry(event, start_time, opts) for event in events]
    # Sort on content with ids masked *before* numbering ids, so numbering cannot depend on the
    # arbitrary order of ties; Python's sort is stable for entries that are identical even then.
    raw.sort(key=lambda e: (e.time, _canonical(_mask_ids(list(e._replace(time=0.0))))))
    numbers: dict[str, str] = {}

    def number(match: re.Match[str]) -> str:
        found = match.group(0)
        if found not in numbers:
            numbers[found] = f"<id{len(numbers) + 1}>"
        return numbers[found]

    def renumber(text: str) -> str:
        return GENERATED_ID.sub(number, text)

    return [
        entry._replace(
            app=_map_strings(entry.app, renumber),
            function=_map_strings(entry.function, renumber),
            args=_map_strings(entry.args, renumber),
            return_value=_map_strings(entry.return_value, renumber),
        )
        for entry in raw
    ]


def normalized_log(
    env: Environment, ndigits: int = 1, wall_clock_window: float | None = 86400.0
) -> list[LogEntry]:
    """The completed-event log of an ARE environment (ours or ARE's) in normal form.

    `ndigits`: rounding of times and floats; `wall_clock_window`: see `to_jsonish`.
    """
    events = env.event_log.list_view()
    return normalize_events(events, env.start_time or 0.0, ndigits, wall_clock_window)


def first_difference(left: list[LogEntry], right: list[LogEntry]) -> str | None:
    """A readable description of where two normal forms first differ, or None if equal."""
    for index, (a, b) in enumerate(zip(left, right, strict=False)):
        if a != b:
            return f"entry {index} differs:\n  left:  {a}\n  right: {b}"
    if len(left) != len(right):
        longer = left if len(left) > len(right) else right
        side = "left" if longer is left else "right"
        return (
            f"lengths differ ({len(left)} vs {len(right)}); "
            f"first extra on the {side}: {longer[min(len(left), len(right))]}"
        )
    return None
