"""The reference side of conformance: ARE's own loops, and an id-free view of an event log.

areasync is judged by comparison with ARE: for every registered scenario that needs no
network, in oracle mode, a `fast` run must give the same event log as ARE's queue-based loop and a
`realtime` run the same log and tick count as ARE's time-based loop. This module produces the ARE
side of that comparison and the normal form both sides are compared in. It is part of the package,
not of the tests, because users' harnesses want the same comparison. It never imports the areasync
core, so it works on any ARE `Environment`, ours or ARE's.

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

The two ARE loops, and tick counts
    `run_are_queue_loop` is ARE's oracle run as its tests and `scenario_runner` do it (queue-based
    loop, oracle mode, `exit_when_no_events`, the scenario's start time and increment) on the real
    clock: it is fast already. Its `env.tick_count` is set by `jump_to_next_event_time` to
    `ceil((t - start) / increment)` of the last event jumped to, i.e. the *index* of the last tick,
    not a count (scenario_tutorial: 17, last event at 17 s). When the loop stops on `duration` the
    jump has already set the index of a tick that never ran.

    `run_are_time_loop` is ARE's time-based loop: one tick per `time.sleep(1)`, `tick_count`
    incremented after each tick, so it *is* a count of ticks run (scenario_tutorial: 18, ticks at
    0..17 s, then the queue is empty). For real that takes a wall second per tick, so by default it
    runs ARE's unmodified loop code under `fake_wall_clock()`, which swaps the `time` module seen
    by `are.simulation.environment` and `are.simulation.time_manager` (those two module globals
    only, restored on exit) for a clock whose `sleep(s)` advances it by `s` at once.
    `wall_clock=True` runs the genuine thing (a slow test shows both agree on scenario_tutorial).

Epsilon at the duration bound
    The time loop runs while `time_passed() <= duration`. On the wall clock every tick also costs
    processing time, so after k sleeps `time_passed()` is k*increment plus a little, and a tick at
    exactly `start + duration` never runs: the bound is exclusive. A fake clock
    without that epsilon would run one more tick. `FakeWallClock` therefore adds `sleep_overhead`
    (default 1e-6 s) to every `sleep`: tiny next to ARE's own drift (~1 ms per tick here), big
    enough to survive float arithmetic, and it keeps the rule. The queue loop gets the same effect
    from the real clock (it checks `time_passed() > duration` right after jumping, and the jump
    lands a few microseconds late).

Termination with `duration=None` (scenario_find_image_file)
    The queue loop needs nothing: it loops while the queue is non-empty. The time loop has no bound
    at all then; only `exit_when_no_events=True` (ARE checks `get_event_queue_length() == 0` at the
    top of each iteration) ends it: ticks 0 and 1 run, the queue is empty, tick_count == 2. That is
    why `run_are_time_loop` defaults it to True, as ARE's `scenario_runner` does without an agent.

Reference scenarios (`reference_scenario_ids`) and their tick counts (queue loop, time loop)
    scenario_apps_tutorial (9, 10), scenario_events_tutorial (15, 16), scenario_find_image_file
    (1, 2), scenario_tutorial (17, 18), scenario_validation_tutorial (7, 8), and two of this
    module's own: `GAIA2_SHAPED_ID` (15, 16, see below) and `REMINDER_TICKS_ID` (12, 12: a
    ReminderApp, so ticks show in the log, and an event exactly on the duration bound, which runs
    in neither loop; the queue loop still reports tick 12, which never ran). Without per-tick
    events the two loops log the same normal form; with a ReminderApp they differ (the time loop
    checks reminders every second, the queue loop only at event times), which is why a realtime
    run is compared with the time loop and a fast run with the queue loop. An ARE trap met on the
    way: `App.__init__` seeds every app's rng with 0 and `Scenario.initialize()` re-seeds it with
    `scenario.seed` (default 0), so ids drawn while populating apps are drawn again at run time
    (a reminder added at population is silently replaced by the first one added during the run).

Scenario JSON (`export_scenario_json`, `load_scenario_json`)
    ARE's own registered scenarios do not survive `JsonScenarioExporter` -> `JsonScenarioImporter`:
    - the importer rebuilds completed events with `Action.from_dict`, which looks classes up in
      `are.simulation.apps`; MessagingApp, EmailClientApp and SimpleTaskApp are not exported there
      (AttributeError). `load_scenario_json` passes `load_completed_events=False`: completed events
      are a trace record, not needed to run;
    - apps are rebuilt from `ALL_APPS` only ("No class found for the app name EmailClientApp",
      the app is silently dropped);
    - events are rebuilt through the authoring API (`Scenario.add_event`), which enforces Gaia2's
      DAG rules: an ENV event needs exactly one predecessor, an oracle (AGENT) event at least one;
      every registered scenario has a root ENV event ("Env events must have only one predecessor");
    - arguments are exported as `str(value)` with a type name and parsed back only for
      str/int/float/bool/list/dict, lists and dicts via `json.loads`: an `Email` argument
      ("Unsupported type Email") or an oracle event's list argument (exported as the Python repr
      `['a@b.c']`, not JSON) fail.
    A Gaia2-shaped scenario (`gaia2_shaped_scenario()`, id `GAIA2_SHAPED_ID`) is built the way
    Gaia2's are: apps from `ALL_APPS`, a USER `send_message_to_agent` root, ENV events hanging off
    USER/ENV events, oracle events as `OracleEvent`s built from strings, `{{event_id}}`
    placeholders.
    It round-trips, and the imported scenario runs in oracle mode with nothing else: oracle events
    travel in the JSON `events` list as `ExportedOracleEvent` (class_name "OracleEvent", event_type
    "AGENT", action as app/function/string args), the importer turns them back into `OracleEvent`s
    with a factory calling the app, and `oracle_mode=True` executes them as AGENT events. One trap:
    `convert_event` exports `action.resolved_args` when set, and a run sets them, so exporting after
    a run would bake one run's resolved placeholder values (e.g. a generated email id) into the
    scenario; `export_scenario_json` exports the scenario events' original args. The benchmark path
    (`load_scenario_json(..., benchmark=True)`: `import_from_json_to_benchmark` +
    `preprocess_scenario` without a judge) also works offline; it rewires turns through
    `condition_turn_N` ConditionCheckEvents that are checked every tick and logged as CONDITION
    events.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import dataclasses
import datetime as dt
import enum
import json
import math
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, NamedTuple

from are.simulation.environment import Environment, EnvironmentConfig
from are.simulation.scenarios.scenario import Scenario
from are.simulation.scenarios.utils.constants import ALL_SCENARIOS
from are.simulation.types import (
    Action,
    CompletedEvent,
    ConditionCheckAction,
    Event,
    EventType,
)

__all__ = [
    "FAKE_SLEEP_OVERHEAD",
    "GAIA2_SHAPED_ID",
    "NETWORK_SCENARIOS",
    "REMINDER_TICKS_ID",
    "FakeClockLimitError",
    "FakeWallClock",
    "LogEntry",
    "export_scenario_json",
    "fake_wall_clock",
    "first_difference",
    "gaia2_shaped_scenario",
    "load_scenario",
    "load_scenario_json",
    "normalize_events",
    "normalized_log",
    "offline_scenario_ids",
    "reference_scenario_ids",
    "reminder_ticks_scenario",
    "run_are_queue_loop",
    "run_are_time_loop",
    "to_jsonish",
]

# Registered ARE scenarios that need the network (Hugging Face hub, MCP servers).
NETWORK_SCENARIOS: frozenset[str] = frozenset({"scenario_hf_demo_mcp", "scenario_mcp_demo"})

# Wall seconds a fake `sleep` costs on top of what it was asked for (see module docstring).
FAKE_SLEEP_OVERHEAD = 1e-6
# Per clock read in the fake queue loop: stands for the real clock's processing time, which is
# what keeps an event at exactly start + duration from running (see "Epsilon" above).
FAKE_READ_OVERHEAD = 1e-7

GAIA2_SHAPED_ID = "areasync_gaia2_shaped"
REMINDER_TICKS_ID = "areasync_reminder_ticks"

_UUID_RE = re.compile(
    r"(?<![0-9a-f])"
    r"(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{32})"
    r"(?![0-9a-f])"
)
# Python reprs of objects that have no better form carry their address: drop it, as ARE does.
_ADDRESS_RE = re.compile(r" at 0x[0-9a-fA-F]+")
_MASK = "<id>"
_WALL_CLOCK_MARK = "<wall-clock>"
_PROCESS_START = time.time()


# --------------------------------------------------------------------------- scenarios


def offline_scenario_ids() -> list[str]:
    """Registered ARE scenarios that run without network access, sorted."""
    return sorted(set(ALL_SCENARIOS) - NETWORK_SCENARIOS)


def reference_scenario_ids() -> list[str]:
    """Everything the conformance suite runs: the offline registered ids and this module's own."""
    return [*offline_scenario_ids(), GAIA2_SHAPED_ID, REMINDER_TICKS_ID]


def load_scenario(scenario: Scenario | str) -> Scenario:
    """A fresh, initialized scenario from a registered id, `GAIA2_SHAPED_ID` or `REMINDER_TICKS_ID`.

    A Scenario instance is initialized if needed and returned as is: ARE scenarios are single-use
    (a run mutates their apps and events), so callers pass a fresh one per run.
    """
    if isinstance(scenario, str):
        if scenario == GAIA2_SHAPED_ID:
            scenario = gaia2_shaped_scenario()
        elif scenario == REMINDER_TICKS_ID:
            scenario = reminder_ticks_scenario()
        elif scenario in ALL_SCENARIOS:
            scenario = ALL_SCENARIOS[scenario]()
        else:
            raise KeyError(f"unknown scenario id {scenario!r}")
    scenario.initialize()  # a no-op when already initialized
    return scenario


def _oracle_config(scenario: Scenario, *, queue_based_loop: bool) -> EnvironmentConfig:
    # As ARE's scenario_runner and preprocess_scenario: the scenario's own start and increment.
    return EnvironmentConfig(
        start_time=scenario.start_time or 0,
        duration=scenario.duration,
        time_increment_in_seconds=scenario.time_increment_in_seconds,
        oracle_mode=True,
        queue_based_loop=queue_based_loop,
        exit_when_no_events=True,
        verbose=False,
    )


# --------------------------------------------------------------------------- ARE's queue loop


def run_are_queue_loop(scenario: Scenario | str, *, wall_clock: bool = False) -> Environment:
    """ARE's own oracle run: queue-based loop, oracle mode, exit when no events, on ARE's thread.

    Returns the finished environment; `env.tick_count` is the index of the last tick jumped to.
    By default ARE's unmodified loop runs under `fake_wall_clock()` with a tiny cost per clock
    read (`FAKE_READ_OVERHEAD`), standing for the processing time of the real clock: on a loaded
    machine the real clock's drift can exceed the normal form's rounding (a `get_current_time`
    result 60 ms late), which would make two ARE runs disagree. `wall_clock=True` runs it for real.
    """
    scenario = load_scenario(scenario)
    if wall_clock:
        env = Environment(_oracle_config(scenario, queue_based_loop=True))
        env.exit_when_no_events = True  # as ARE's scenarios_test sets it
        _run_reraising(env, scenario)  # env.run: starts ARE's thread and joins it
        return env
    with fake_wall_clock(read_overhead=FAKE_READ_OVERHEAD):
        env = Environment(_oracle_config(scenario, queue_based_loop=True))
        env.exit_when_no_events = True
        _run_reraising(env, scenario)
    return env


# --------------------------------------------------------------------------- ARE's time loop


class FakeClockLimitError(RuntimeError):
    """The fake clock slept longer than allowed: the time-based loop would never end."""


class FakeWallClock:
    """Stands in for the `time` module inside ARE's environment and time manager.

    `time()` returns a fake wall time; `sleep(s)` advances it by `s + sleep_overhead` at once. The
    start is arbitrary (not 0, so nothing can take it for "unset"). Only ARE's event-loop thread
    sleeps and the caller's thread waits in `join`, so no lock is needed.
    """

    def __init__(
        self,
        start: float = 1_000_000.0,
        sleep_overhead: float = FAKE_SLEEP_OVERHEAD,
        max_sleeps: int | None = None,
        read_overhead: float = 0.0,
    ) -> None:
        self.now = start
        self.read_overhead = read_overhead
        self.sleep_overhead = sleep_overhead
        self.max_sleeps = max_sleeps
        self.sleeps = 0

    def time(self) -> float:
        self.now += self.read_overhead
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps += 1
        if self.max_sleeps is not None and self.sleeps > self.max_sleeps:
            raise FakeClockLimitError(f"more than {self.max_sleeps} fake sleeps")
        self.now += seconds + self.sleep_overhead


# The patch is process-wide (module globals): other threads wait for the current run to finish.
# Reentrant, so a nested fake clock saves and restores the outer one.
_PATCH_LOCK = threading.RLock()


@contextlib.contextmanager
def fake_wall_clock(
    sleep_overhead: float = FAKE_SLEEP_OVERHEAD,
    max_sleeps: int | None = None,
    read_overhead: float = 0.0,
) -> Iterator[FakeWallClock]:
    """Run ARE's unmodified loop code on a `FakeWallClock`, restoring the real clock on exit.

    Patches only the `time` global of `are.simulation.environment` and `are.simulation.time_manager`
    (the two modules whose `time.time()`/`time.sleep()` drive the loop); apps keep the real clock.
    `max_sleeps` bounds the run (the time loop sleeps once per tick): FakeClockLimitError beyond.
    """
    import are.simulation.environment as environment_module
    import are.simulation.time_manager as time_manager_module

    clock = FakeWallClock(
        sleep_overhead=sleep_overhead, max_sleeps=max_sleeps, read_overhead=read_overhead
    )
    with _PATCH_LOCK:
        saved = environment_module.time, time_manager_module.time
        environment_module.time = clock
        time_manager_module.time = clock
        try:
            yield clock
        finally:
            environment_module.time, time_manager_module.time = saved


def run_are_time_loop(
    scenario: Scenario | str,
    *,
    wall_clock: bool = False,
    exit_when_no_events: bool = True,
    sleep_overhead: float = FAKE_SLEEP_OVERHEAD,
    max_ticks: int = 1_000_000,
) -> Environment:
    """ARE's time-based loop in oracle mode; `env.tick_count` is the number of ticks run.

    By default ARE's own loop code runs under `fake_wall_clock()` (milliseconds instead of one wall
    second per tick); `wall_clock=True` runs it for real. `max_ticks` stops a fake run that would
    never end (no duration and events that keep rescheduling) with FakeClockLimitError.
    """
    scenario = load_scenario(scenario)
    config = _oracle_config(scenario, queue_based_loop=False)
    config.exit_when_no_events = exit_when_no_events
    if scenario.duration is None and not exit_when_no_events:
        raise ValueError("duration is None and exit_when_no_events is False: the loop never ends")
    if wall_clock:
        env = Environment(config)
        _run_reraising(env, scenario)
        return env
    with fake_wall_clock(sleep_overhead, max_sleeps=max_ticks) as clock:
        # Created inside the patch so that every TimeManager read is fake from the start.
        env = Environment(config)
        _run_reraising(env, scenario)
    if clock.sleeps < env.tick_count:  # one sleep per tick (more if paused): fewer means a leak
        raise AssertionError(f"only {clock.sleeps} fake sleeps for {env.tick_count} ticks")
    return env


def _run_reraising(env: Environment, scenario: Scenario) -> None:
    """`env.run(scenario)`, re-raising here what killed ARE's event-loop thread.

    ARE leaves such an exception to `threading.excepthook` and `join` returns as if the run had
    ended; a reference run must not pass for a finished one.
    """
    loop: Callable[[], None] = env._event_loop
    failure: list[BaseException] = []

    def guarded_loop() -> None:
        try:
            loop()
        except BaseException as exc:  # re-raised below, on the caller's thread
            failure.append(exc)

    env._event_loop = guarded_loop  # instance attribute: Environment.start targets self._event_loop
    env.run(scenario)
    if failure:
        raise failure[0]


# --------------------------------------------------------------------------- normal form


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
    return _map_strings(value, lambda s: _UUID_RE.sub(_MASK, s))


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
        return _UUID_RE.sub(number, text)

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


# --------------------------------------------------------------------------- scenario JSON


def gaia2_shaped_scenario() -> Scenario:
    """A small scenario shaped like Gaia2's, built through ARE's authoring API (not initialized).

    Two turns; apps from ARE's ALL_APPS with initial state; a USER root message; ENV events hanging
    off USER/ENV events, two of them tied; oracle events with string arguments, two tied; an ENV
    event whose argument is the `{{placeholder}}` of an oracle event's return value.
    """
    return _Gaia2Shaped()


class _Gaia2Shaped(Scenario):
    scenario_id: str = GAIA2_SHAPED_ID
    start_time: float | None = 1_728_979_200.0  # 2024-10-15 08:00:00 UTC, as Gaia2 uses dates
    duration: float | None = 60.0
    seed: int = 0

    def init_and_populate_apps(self, *args: Any, **kwargs: Any) -> None:
        from are.simulation.apps import (
            AgentUserInterface,
            CalendarApp,
            ContactsApp,
            EmailClientV2,
            SystemApp,
        )
        from are.simulation.apps.contacts import Contact

        contacts = ContactsApp()
        contacts.add_contact(
            Contact(
                first_name="Alice",
                last_name="Martin",
                email="alice@example.com",
                phone="+33 612 345 678",
                contact_id="c0ffee00c0ffee00c0ffee00c0ffee00",
            )
        )
        self.apps = [AgentUserInterface(), CalendarApp(), contacts, EmailClientV2(), SystemApp()]

    def build_events_flow(self) -> None:
        def arg(value: Any) -> dict[str, str]:
            if isinstance(value, list):
                return {"value": json.dumps(value), "type": "list"}
            return {"value": str(value), "type": type(value).__name__}

        def add(
            event_id: str,
            event_type: EventType,
            app: str,
            function: str,
            after: list[str],
            delay: float,
            **params: Any,
        ) -> None:
            self.add_event(
                app_name=app,
                function_name=function,
                parameters={k: arg(v) for k, v in params.items()},
                predecessor_event_ids=after,
                event_type=event_type,
                event_id=event_id,
                event_relative_time=delay,
            )

        user, env, agent = EventType.USER, EventType.ENV, EventType.AGENT
        ui, mail, cal = "AgentUserInterface", "EmailClientV2", "CalendarApp"
        add("user_1", user, ui, "send_message_to_agent", [], 2, content="Email Alice the agenda.")
        add("agent_time", agent, "SystemApp", "get_current_time", ["user_1"], 1)
        add("agent_lookup", agent, "ContactsApp", "search_contacts", ["user_1"], 1, query="Alice")
        add("env_mail", env, mail, "create_and_add_email", ["user_1"], 3,
            sender="bob@example.com", recipients=["user@meta.com"], subject="Lunch?",
            content="Lunch at noon?")  # fmt: skip
        add("env_invite", env, cal, "add_calendar_event_by_attendee", ["user_1"], 3,
            who_add="Bob", title="Lunch", start_datetime="2024-10-15 12:00:00",
            end_datetime="2024-10-15 13:00:00")  # fmt: skip
        add("agent_send", agent, mail, "send_email", ["agent_lookup"], 2,
            recipients=["alice@example.com"], subject="Agenda",
            content="1. Budget 2. Hiring")  # fmt: skip
        add("env_reply", env, mail, "reply_to_email_from_user", ["env_mail"], 2,
            sender="alice@example.com", email_id="{{agent_send}}", content="Thanks!")  # fmt: skip
        add("agent_done", agent, ui, "send_message_to_user", ["agent_send"], 6, content="Sent.")
        add("user_2", user, ui, "send_message_to_agent", ["agent_done"], 2,
            content="Book lunch with Alice tomorrow.")  # fmt: skip
        add("agent_book", agent, cal, "add_calendar_event", ["user_2"], 1,
            title="Lunch with Alice", start_datetime="2024-10-16 12:00:00",
            end_datetime="2024-10-16 13:00:00", attendees=["Alice Martin"])  # fmt: skip
        add("agent_done_2", agent, ui, "send_message_to_user", ["agent_book"], 1, content="Booked.")


def reminder_ticks_scenario() -> Scenario:
    """A scenario where ticks show in the log, and an event sits exactly on the duration bound.

    ReminderApp's `get_due_reminders` is logged as an AGENT event on every tick,
    so the log records when ticks ran: at event times only in the queue loop, every second in the
    time loop, which therefore give *different* logs here (a reminder due at 4 s is noticed at
    4 s by the time loop, at the next event time, 6 s, by the queue loop). The ENV event at exactly
    `start + duration` runs in neither loop (the bound is exclusive); the time loop then ends on
    the duration, not on an empty queue.
    """
    return _ReminderTicks()


class _ReminderTicks(Scenario):
    scenario_id: str = REMINDER_TICKS_ID
    start_time: float | None = 1_728_979_200.0  # 2024-10-15 08:00:00 UTC
    duration: float | None = 12.0
    # Not 0: App.__init__ seeds every app's rng with 0 and initialize() re-seeds it with the
    # scenario's seed, so with seed 0 the first id drawn at run time repeats the first drawn while
    # populating, and "Call Bob" would silently overwrite "Stand-up" in ReminderApp.reminders.
    seed: int = 7

    def init_and_populate_apps(self, *args: Any, **kwargs: Any) -> None:
        from are.simulation.apps import AgentUserInterface, ReminderApp, SystemApp

        reminders = ReminderApp()
        reminders.add_reminder(
            title="Stand-up", due_datetime="2024-10-15 08:00:04", description="Daily stand-up"
        )
        self.apps = [AgentUserInterface(), reminders, SystemApp()]

    def build_events_flow(self) -> None:
        from are.simulation.apps import AgentUserInterface, ReminderApp
        from are.simulation.types import EventRegisterer

        ui = self.get_typed_app(AgentUserInterface)
        reminders = self.get_typed_app(ReminderApp)
        with EventRegisterer.capture_mode():
            ask = ui.send_message_to_agent(content="Remind me to call Bob.").depends_on(
                None, delay_seconds=2
            )
            remind = (
                reminders.add_reminder(
                    title="Call Bob", due_datetime="2024-10-15 08:00:07", description="Bob"
                )
                .oracle()
                .depends_on(ask, delay_seconds=1)
            )
            nudge_a = ui.send_message_to_agent(content="Any news?").depends_on(
                None, delay_seconds=6
            )
            nudge_b = ui.send_message_to_agent(content="Still there?").depends_on(
                None, delay_seconds=6
            )
            done = (
                ui.send_message_to_user(content="Reminder set.")
                .oracle()
                .depends_on(remind, delay_seconds=6)
            )
            too_late = ui.send_message_to_agent(content="At the bound").depends_on(
                None, delay_seconds=12
            )
        self.events = [ask, remind, nudge_a, nudge_b, done, too_late]


def export_scenario_json(scenario: Scenario | str) -> str:
    """Run `scenario` in ARE's queue loop (oracle mode), then export it with ARE's exporter.

    The trace's `events` hold the scenario events with their original arguments (placeholders
    intact, see the module docstring); `completed_events` hold the oracle run.
    """
    from are.simulation.data_handler.exporter import JsonScenarioExporter

    scenario = load_scenario(scenario)
    env = run_are_queue_loop(scenario)
    for event in scenario.events:
        if isinstance(event, Event) and event.action is not None and event.action.resolved_args:
            # Replace, do not mutate: the completed events in the log share this Action.
            action = copy.copy(event.action)
            action.resolved_args = {}
            event.action = action
    exported: str = JsonScenarioExporter().export_to_json(env, scenario, scenario.scenario_id)
    return exported


def load_scenario_json(text: str | bytes, *, benchmark: bool = False) -> Scenario:
    """An initialized scenario from ARE/Gaia2 JSON text, via ARE's importer.

    `benchmark=False`: `JsonScenarioImporter.import_from_json` (completed events are not loaded:
    they are not needed to run, and the importer cannot rebuild actions of apps missing from
    `are.simulation.apps`). `benchmark=True`: `import_from_json_to_benchmark` + ARE's
    `preprocess_scenario` without a judge (Gaia2's runner path: SystemApp added, turns rewired
    through per-tick `condition_turn_N` condition events).
    """
    from are.simulation.data_handler.importer import JsonScenarioImporter

    importer = JsonScenarioImporter()
    if not benchmark:
        scenario, _, _ = importer.import_from_json(text, load_completed_events=False)
        scenario.initialize()
        return scenario
    from are.simulation.scenarios.scenario_imported_from_json.utils import preprocess_scenario

    bench_scenario, _, _ = importer.import_from_json_to_benchmark(text, load_completed_events=False)
    preprocess_scenario(bench_scenario, judge_config=None)
    return bench_scenario
