"""`SimulationCore`: a simulation's state, what it reads, and how it ends.

The driver (`driver.Driver`), the controls (`controls.Controls`) and the tool calls
(`simulation.Simulation`) all work on this state; this module holds what they share: the
stream and the input log, the leases, the command lane, the end of the run (`EndState`) and the
read-only views (clock state, tools, app state, events).
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from functools import partial
from typing import Any, TypeVar, Unpack

import anyio
import anyio.abc
import msgspec

from areasync.bridge.budget import CallBudget
from areasync.bridge.environment import AsyncEnvironment, Scenario
from areasync.bridge.records import to_plain
from areasync.bridge.sandbox import Sandbox
from areasync.bridge.state_copy import with_attributes
from areasync.bridge.tools import ToolBox
from areasync.loop.clock import WallSleep, to_s
from areasync.loop.stream import StreamLog
from areasync.policies import LagPolicy, LeasePolicy
from areasync.protocol.frames import ClockItem, EndedItem, EventItem, NotificationItem, StreamItem
from areasync.protocol.records import ClockState, EventRecord, NotificationRecord, ToolInfo
from areasync.simulation.answers import RecordedAnswers
from areasync.simulation.ending import EndState
from areasync.simulation.errors import BadStateError, InvalidRequestError
from areasync.simulation.lane import CommandLane
from areasync.simulation.leases import Leases
from areasync.simulation.options import SimulationOptions, SimulationSettings
from areasync.simulation.records import (
    Creation,
    Fail,
    InputRecord,
    Judge,
    LeaseBegin,
    LeaseEnd,
    Steps,
)
from areasync.simulation.stops import StopAnnouncements

_Kind = TypeVar("_Kind", bound=InputRecord)


class SimulationCore:
    """The state of an ARE scenario run on a virtual clock (see `areasync.simulation`)."""

    def __init__(
        self,
        scenario: Scenario,
        env: AsyncEnvironment,
        *,
        sandbox: Sandbox | None = None,
        **options: Unpack[SimulationOptions],
    ) -> None:
        self.settings = SimulationSettings.of(options)
        self.scenario = scenario
        self.env = env
        if sandbox is None:
            sandbox = Sandbox()
            sandbox.adopt(scenario.apps or [])
        # The host files the session's code may touch (`areasync.bridge.sandbox`): everything
        # that holds the lane runs inside it.
        self.sandbox = sandbox
        sandbox.max_files_created = self.settings.max_files_created
        self.engine = env.engine
        self.clock = env.clock
        # What one tool call or event may cost: every one of them runs within it.
        env.budget = CallBudget(self.settings.tool_budget, self.settings.max_listing)
        self.tools = ToolBox(env, env.budget)
        self.log: StreamLog[StreamItem] = StreamLog()
        self.inputs: list[InputRecord] = []
        # What a replay consumes: the inputs, in order with the engine steps the driver ran
        # between them (fast steps counted, realtime ticks one by one; see
        # `areasync.simulation.replay`).
        self.records: list[InputRecord] = []
        # Called with each record as it joins `records` (a journal persists them as they come).
        self.record_listeners: list[Callable[[InputRecord], None]] = []
        self._pending_steps = 0
        self.answers = RecordedAnswers(self)  # a judge's answers, as records (`answers`)
        # Waits for a notification made by a replayed tool call, whose caller is not awaiting
        # them (`Simulation._wait_for_notification` counts the awaited ones).
        self._unawaited_waits = 0
        # Rebuilt from a journal by `Simulation.replay` (a realtime one comes back paused).
        self.restored = False
        # How it was made (`Simulation.load` sets it): with `records`, all a replay needs.
        self.creation: Creation | None = None
        self.validation: dict[str, Any] | None = None
        self.end_state = EndState.RUNNING
        # Why the run ended early (a stop, a lease policy, a failure); None when it ran out.
        self.end_reason: str | None = None
        # How the first request to end it asked for it to end, until the run has ended.
        self._ending: EndState | None = None
        self.lag = 0.0
        self._leases = Leases(self.settings.lease_timeout)
        self._wake_event = anyio.Event()
        # How the driver waits wall seconds of the clock's wall (`Simulation.load`'s `sleep`);
        # None: on the event loop's clock.
        self.wall_sleep: WallSleep | None = None
        self._ended = anyio.Event()
        self._waiting_for_notification = 0
        self._last_clock_publish = -math.inf
        # Stops on their way (announced, not yet run): long controls give way to them.
        self.stops = StopAnnouncements()
        self._lane = CommandLane(sandbox, self.clock)
        self._lane.charges_time = self.settings.lag_policy is LagPolicy.CATCH_UP
        self._driving = False
        self._task_group: anyio.abc.TaskGroup | None = None
        # Realtime starts when the driver does, not when the scenario was loaded: until then
        # the clock stands still, so nothing read during setup is ever taken back.
        self.clock.hold()
        self._held_until_driven = True
        # Each event's record straight onto the stream, as an `EventItem` (no call between).
        env.event_listeners.append(partial(self.log.append_with, _event_item))
        env.notification_listeners.append(self._on_notification)
        env.wake = self._wake
        env.wait_handler = self._begin_wait

    # -- settings ----------------------------------------------------------------------------

    @property
    def lag_policy(self) -> LagPolicy:
        return self.settings.lag_policy

    @property
    def max_lag(self) -> float:
        return self.settings.max_lag

    @property
    def lease_timeout(self) -> float:
        return self.settings.lease_timeout

    @property
    def lease_policy(self) -> LeasePolicy:
        return self.settings.lease_policy

    @property
    def step_budget(self) -> float:
        return self.settings.step_budget

    @property
    def control_budget(self) -> float:
        return self.settings.control_budget

    @property
    def max_ticks(self) -> int:
        return self.settings.max_ticks

    @property
    def max_jump(self) -> float:
        return self.settings.max_jump

    # -- reading -----------------------------------------------------------------------------

    @property
    def ended(self) -> bool:
        return self.end_state.ended

    @property
    def state(self) -> str:
        return str(self.env.state.name.lower())

    @property
    def now(self) -> float:
        return self.clock.now()

    @property
    def lane(self) -> CommandLane:
        """The session's ordered command lane: hold it (`async with sim.lane:`) to run
        synchronous methods such as `set_speed` in turn with the session's other commands."""
        return self._lane

    def clock_state(self, *, peek: bool = False) -> ClockState:
        """The clock as the stream reports it. `peek=True` reads it without binding it (for
        listings such as `/api/sessions`): a time given out on the stream is never followed by
        an earlier one, so every binding read may move an overdue tick (see `loop.clock`);
        a listing must not change what the simulation logs."""
        return ClockState(
            state=self.state,
            time=to_s(self.clock.latest_us()) if peek else self.clock.now(),
            tick=int(self.env.tick_count),
            mode=self.clock.mode.value,
            speed=self.clock.speed,
            start_time=float(self.env.start_time or 0.0),
            duration=None if self.env.duration is None else float(self.env.duration),
            lag=self.lag,
        )

    def list_tools(self) -> list[ToolInfo]:
        return self.tools.infos()

    def app_names(self, apps: list[str] | None = None) -> list[str]:
        """The apps `get_state(apps)` reads: all of them for None; raises InvalidRequestError
        for a name the session has no app of."""
        names = list(self.env.apps) if apps is None else apps
        unknown = [name for name in names if name not in self.env.apps]
        if unknown:
            raise InvalidRequestError(
                f"unknown app(s) {', '.join(unknown)}: the session has {', '.join(self.env.apps)}"
            )
        return names

    def get_state(self, apps: list[str] | None = None) -> dict[str, Any]:
        """The apps' state (ARE's `get_state` of each app), optionally only the named apps."""
        return {name: to_plain(self.env.apps[name].get_state()) for name in self.app_names(apps)}

    def stream(self, since: int = 0) -> AsyncIterator[StreamItem]:
        """Every stream item after `since`, then live ones, until (and including) `ended`."""
        return self.log.follow(since)

    def events(self) -> list[EventRecord]:
        return [item.event for item in self.log.items if isinstance(item, EventItem)]

    def notifications(self) -> list[NotificationRecord]:
        return [item.notification for item in self.log.items if isinstance(item, NotificationItem)]

    # -- leases (fast mode) -------------------------------------------------------------------

    def begin_lease(self, holder: str) -> None:
        """`holder` is busy: in fast mode, time stands still until it ends its lease (or the
        lease times out)."""
        if self.ended:
            return
        self._record(LeaseBegin, internal=True, holder=holder)
        self._leases.begin(holder, self.clock.wall())
        self._wake()

    def end_lease(self, holder: str) -> None:
        """`holder` is idle; once no lease is held, a fast session jumps to the next due item."""
        if holder not in self._leases.deadlines():
            return
        self._record(LeaseEnd, internal=True, holder=holder)
        self._leases.end(holder)
        self._wake()

    # The names the lease methods had before (`release` also named a sandbox's cleanup and a
    # clock's hold, so the lease methods now say what they do); kept for existing callers.
    acquire = begin_lease
    release = end_lease

    @property
    def leases(self) -> dict[str, float]:
        """Holder -> wall deadline of every lease held."""
        return self._leases.deadlines()

    @asynccontextmanager
    async def busy(self, holder: str = "agent") -> AsyncIterator[None]:
        """A lease for the duration of the block."""
        self.begin_lease(holder)
        try:
            yield
        finally:
            self.end_lease(holder)

    # -- what every command does -------------------------------------------------------------

    def _require_live(self, action: str) -> None:
        if self.ended:
            raise BadStateError(f"cannot {action}: the simulation has ended ({self.state})")

    def _record(self, kind: type[_Kind], *, internal: bool = False, **fields: Any) -> None:
        """Log an input of this kind, now (`internal`: for the replay only, not in `inputs`)."""
        self._flush_steps()
        record = kind(self.clock.now(), self.log.seq, **fields)
        self._add_record(record)
        if not internal:
            self.inputs.append(record)

    def _record_again(self, record: InputRecord, *, internal: bool = False) -> None:
        """Log `record` again as it was, now (a replay's copy of what the run logged)."""
        self._flush_steps()
        again = msgspec.structs.replace(record, time=self.clock.now(), seq=self.log.seq)
        self._add_record(again)
        if not internal:
            self.inputs.append(again)

    def _add_record(self, record: InputRecord) -> None:
        self.records.append(record)
        for listener in self.record_listeners:
            listener(record)

    def _flush_steps(self) -> None:
        """Log the count of fast steps run since the last record, if any (one record for a
        whole stretch: which steps they were follows from the state, not how many)."""
        if self._pending_steps:
            n, self._pending_steps = self._pending_steps, 0
            self._add_record(Steps(self.clock.now(), self.log.seq, n=n))

    def flush_records(self) -> list[InputRecord]:
        """Every record so far, the fast steps run since the last one included (a journal
        calls this before it persists what the run has done)."""
        self._flush_steps()
        return self.records

    @property
    def pending_steps(self) -> int:
        """The fast steps run since the last record, not logged yet (`flush_records` logs them)."""
        return self._pending_steps

    def log_answer(self, call: str, answer: Any = None, failure: str | None = None) -> None:
        """Log an answer the session got from outside (its judge's: `RecordedAnswers`)."""
        self._record(Judge, call=call, answer=answer, failure=failure)

    # -- copies (`areasync.simulation.snapshots`) ----------------------------------------------

    def copy_reduction(self) -> tuple[Any, ...]:
        """How `state_copy.freeze` stores this session: without what a copy must not take along
        (the service's record listeners, the driver's task group, the lane and its waiters);
        `revive` gives the copy its own."""
        return with_attributes(self, record_listeners=[], _task_group=None, _lane=None)

    def revive(self) -> None:
        """Make a thawed copy a session of its own: a new lane, fresh wake-up and end events,
        the clock held once as after a load (the driver lets it go), lease deadlines counted
        from now, waits whose callers are gone counted as unawaited (as a replay counts them),
        its sandbox's roots the new directories its file systems were written into."""
        self._lane = CommandLane(self.sandbox, self.clock)
        self._lane.charges_time = self.settings.lag_policy is LagPolicy.CATCH_UP
        self._wake_event = anyio.Event()
        self._ended = anyio.Event()
        if self.ended:
            self._ended.set()
        self._task_group = None
        self._driving = False
        self.log._changed = None
        self.clock._held = 0
        self.clock.hold()
        self._held_until_driven = True
        wall = self.clock.wall()
        for holder in self._leases.deadlines():
            self._leases.begin(holder, wall)
        self._unawaited_waits = self._waiting_for_notification
        sandbox = self.sandbox
        sandbox.temp_files = set()
        sandbox.adopt(self.scenario.apps or [])
        sandbox._created = list(sandbox.roots)

    def _after_step(self) -> None:
        if (
            self.settings.drain_notifications
            and self.env.notification_system.message_queue.messages.queue
        ):
            self.engine.drain_notifications()
        if self.engine.finished:
            self._conclude()

    def _after_command(self) -> None:
        self._after_step()
        self._wake()

    def _after_control(self) -> ClockState:
        self._after_step()
        self._publish_clock()
        self._wake()
        return self.clock_state()

    def _wake(self) -> None:
        self._wake_event.set()

    def _publish_clock(self) -> None:
        if self.log.closed:
            return
        state = self.clock_state()
        self._last_clock_publish = self.clock.wall()
        self.log.append(lambda seq: ClockItem(seq=seq, clock=state))

    def _begin_wait(self) -> None:
        # ARE's SystemApp set the timeout; the driver treats it as a due item. Nothing blocks.
        self.env.waiting_for_notification = True
        self._wake()

    def _on_notification(self, record: NotificationRecord) -> None:
        if self._waiting_for_notification:
            # The wait is over: a stale timeout must not fire later (ARE resets it on return).
            self.env.reset_wait_timeout()
            self.env.waiting_for_notification = False
            if self._unawaited_waits:
                self._waiting_for_notification -= self._unawaited_waits
                self._unawaited_waits = 0
        self.log.append_with(_notification_item, record)

    # -- the end -----------------------------------------------------------------------------

    def fail(self, reason: str) -> None:
        """End the run now in ARE's FAILED state, e.g. because the scenario's own code raised
        out of a tick (ARE's thread would die there and leave the environment RUNNING)."""
        if self.ended:
            return
        self._record(Fail, reason=reason)
        self._end_now(EndState.FAILED, reason)

    def _end_now(self, how: EndState, reason: str) -> None:
        """End the run now, `how` (the first ending asked for is the one it gets)."""
        if self.ended:
            return
        if self._ending is None:
            self._ending, self.end_reason = how, reason
        if not self.engine.finished:
            self.env.stop_run(failed=how.failed)
            self.engine.finish()
        self._after_step()

    def _conclude(self) -> None:
        if self.ended:
            return
        self._flush_steps()
        self.end_state = EndState.RAN_TO_END if self._ending is None else self._ending
        self.clock.freeze()  # an ended session's time is where it ended (every way it ends)
        self._leases.clear()
        self.validation = self._validate()
        self._publish_clock()
        state = self.state
        validation = self.validation
        reason = self.end_reason
        self.log.append(
            lambda seq: EndedItem(seq=seq, state=state, validation=validation, reason=reason)
        )
        self.log.close()
        self._ended.set()
        self._wake()

    def _validate(self) -> dict[str, Any]:
        try:
            with self.sandbox.entered():  # also reached outside the lane (`fail`, exit)
                result = self.scenario.validate(self.env)
        except Exception as exc:  # a scenario's validate() is user code
            return {"success": None, "exception": f"{type(exc).__name__}: {exc}", "rationale": None}
        exception = getattr(result, "exception", None)
        return {
            "success": getattr(result, "success", None),
            "exception": None if exception is None else f"{type(exception).__name__}: {exception}",
            "rationale": getattr(result, "rationale", None),
        }


def _event_item(seq: int, record: EventRecord) -> EventItem:
    return EventItem(seq=seq, event=record)


def _notification_item(seq: int, record: NotificationRecord) -> NotificationItem:
    return NotificationItem(seq=seq, notification=record)
