"""`AsyncEnvironment`: ARE's Environment on a virtual clock, with publishing hooks and no thread.

Everything ARE users know keeps working (`event_log`, `apps`, `tick`, `process_event`,
`get_state`, `schedule`, `run(wait_for_end=False)`...). What changes:

* the TimeManager reads the `VirtualClock` (swapped in right after ARE's constructor, before any
  app, agent or the notification system can keep a reference to the old one);
* `start()` schedules events but starts no thread: an `Engine` (owned here, driven by the async
  `Simulation` or the synchronous `SyncEnvironment`) advances time, through the few methods of
  `areasync.engine.environment.SteppableEnvironment` implemented here (the engine imports no ARE);
* `session_environment` configures one for a session, as ARE's CLI runner does, and
  `start_scenario` runs the scenario in it: the simulation reaches ARE only through bridge;
* every completed event (as it enters the log) and every notification (`MessageQueue.put`) is
  converted to a plain record and handed to listeners the moment ARE produces it;
* events that cannot produce a notification skip ARE's template search, in the notification
  system and in the world log of `add_to_log` (`notifications`: exactly ARE's answer);
* each event's action runs within the session's per-call budget (`budget`, as its tool calls
  do: `areasync.bridge.budget`); an event stopped there is logged as failed, like any event
  whose app raises, and the run goes on;
* a session's tools are built from docstrings and signatures parsed once per app class
  function, not once per session (`tool_cache`: the same AppTools);
* ARE's scaling traps are avoided: the queue length is `len(queue)`, not a sorted copy; the
  sorted log view is built only for events whose arguments hold a `{{placeholder}}`; the event
  queue compares plain tuples (`queues.FastEventQueue`); log lines are formatted only when
  they will be printed (`tick`, `schedule` and `prepare_events_for_start` are ARE's
  without building their debug lines).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import msgspec
from are.simulation import environment as are_environment
from are.simulation.agents.agent_log import ActionLog
from are.simulation.apps.agent_user_interface import AgentUserInterface
from are.simulation.apps.system import SystemApp
from are.simulation.environment import Environment, EnvironmentConfig
from are.simulation.notification_system import (
    BaseNotificationSystem,
    Message,
    VerboseNotificationSystem,
)
from are.simulation.scenarios.scenario import Scenario
from are.simulation.tool_utils import AppTool
from are.simulation.types import (
    AbstractEvent,
    CompletedEvent,
    EnvironmentState,
    EnvironmentType,
    Event,
    EventLog,
    EventMetadata,
    EventType,
    OracleEvent,
    StopEvent,
    ValidationException,
)

from areasync.bridge import notifications, tool_cache
from areasync.bridge.budget import UNBOUNDED, CallBudget, OverBudget
from areasync.bridge.convert import event_record, notification_record
from areasync.bridge.queues import EventLogQueue, FastEventQueue
from areasync.bridge.sandbox.host_paths import as_agent_sees
from areasync.bridge.time_manager import VirtualTimeManager
from areasync.engine.clock import US_PER_S, VirtualClock, to_us
from areasync.engine.ticks import Engine
from areasync.protocol.frames import Mode
from areasync.protocol.records import EventRecord, NotificationRecord

__all__ = ["AsyncEnvironment", "PublishingEventLog", "Scenario", "session_environment"]

EventListener = Callable[[EventRecord], object]  # what it returns is ignored
NotificationListener = Callable[[NotificationRecord], None]

_are_logger = logging.getLogger("are.simulation.environment")
_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}
_PLACEHOLDER = re.compile(r"^\{\{(.*?)\}\}$")
_are_get_content_for_message = are_environment.get_content_for_message


class AsyncEnvironment(Environment):
    """ARE's Environment, advanced by an `Engine` on a `VirtualClock` instead of a thread."""

    state: EnvironmentState
    # What one event's action may cost (the session sets it; ARE's own runners: no bound).
    budget: CallBudget = UNBOUNDED

    def __init__(
        self,
        config: EnvironmentConfig | None = None,
        environment_type: EnvironmentType = EnvironmentType.UNKNOWN,
        notification_system: BaseNotificationSystem | None = None,
        add_event_to_agent_log: Callable[[CompletedEvent], None] | None = None,
        *,
        mode: Mode | str = Mode.FAST,
        speed: float = 1.0,
        wall: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(config, environment_type, notification_system, add_event_to_agent_log)
        self.clock = VirtualClock(self.start_time, mode=Mode(mode), speed=speed, wall=wall)
        self.time_manager = VirtualTimeManager(self.clock, self.start_time)
        # ARE's constructor handed its own TimeManager to the notification system: redo it.
        self.notification_system.initialize(self.time_manager)
        notifications.install(self.notification_system, self._publish_message)
        self.current_time = self.time_manager.time()
        self.event_log = PublishingEventLog(self._publish_event)
        self.event_queue = FastEventQueue()
        self.engine = Engine(self)
        self.event_listeners: list[EventListener] = []
        self.notification_listeners: list[NotificationListener] = []
        # Called when something outside the engine (StopEvent, stop()) wants the driver awake.
        self.wake: Callable[[], None] = _nothing
        # How a `wait_for_notification` tool call waits: blocking (ARE's jump rules, run to
        # completion) unless an async driver installs its own non-blocking handler.
        self.wait_handler: Callable[[], None] = self.engine.wait_for_notification_blocking
        self._system_app: SystemApp | None = None
        self._system_app_for = -1

    # -- hooks -------------------------------------------------------------------------------

    def delete_all_completed_events(self) -> None:
        # ARE replaces the log at the start of `run()`; keep the hook on the new one.
        self.event_log = PublishingEventLog(self._publish_event)

    def add_to_log(self, events: CompletedEvent | list[CompletedEvent]) -> None:
        # One event of an `Action` that cannot notify (`notifications.cannot_notify`), with no
        # validator, no replay and a notification system that ignores it: ARE's `add_to_log`
        # written out (an event per call; a dozen calls of ARE's fewer): the log's put, then
        # the world log's `ActionLog` of ARE's content for an event with no template, with the
        # same fields. Nothing the log's put runs (the stream's listeners) changes what decides
        # this. Anything else: ARE's own, below.
        event: Any = events
        if (
            type(event) is CompletedEvent
            and notifications.cannot_notify(event)
            and not self.is_replaying
            and not self.agent_action_validators
            and event.event_time is not None
            and event.metadata is not None
            and type(event.action.args) is dict
            and are_environment.get_content_for_message is _are_get_content_for_message
            and ((system := self.notification_system) is None or notifications.ignores(system))
        ):
            self.event_log.put(event)
            action, metadata, event_type = event.action, event.metadata, event.event_type
            app = action.app
            if hasattr(app, "name"):
                app_name = app.name
            elif app:
                app_name = app.app_name()
            else:
                app_name = "unknown_app"
            function = action.function.__name__
            inputs = dict(action.args)
            inputs.pop("self", None)
            action_log = ActionLog(
                content=f"{None if app is None else app.__class__.__name__}: {function}",
                event_type=event_type._value_
                if type(event_type) is EventType
                else event_type.value,
                input=inputs,
                output=metadata.return_value,
                action_name=function,
                app_name=app_name,
                exception=metadata.exception,
                exception_stack_trace=metadata.exception_stack_trace,
                timestamp=event.event_time,
                agent_id="unknown",
            )
            action_log.id = event.event_id
            self.append_world_logs(action_log)
            return
        # ARE's own, unchanged, except that the world log's `get_content_for_message` (a module
        # global of ARE's environment module) is ARE's function behind the notification
        # pre-filter for the duration of the call: the same answer for every event, without
        # the template search for events that have no message (see `notifications`). The
        # swap is scoped to this call, so ARE's own environments in the process (the
        # conformance suite's reference runs) keep calling ARE's function, and a function
        # someone else put there (a mock) is left alone.
        if are_environment.get_content_for_message is not _are_get_content_for_message:
            super().add_to_log(events)
            return
        are_environment.get_content_for_message = notifications.get_content_for_message
        try:
            super().add_to_log(events)
        finally:
            are_environment.get_content_for_message = _are_get_content_for_message

    def _publish_event(self, event: CompletedEvent) -> None:
        if self.event_listeners:
            record = event_record(event)
            if record.exception is not None:  # what an agent reads: its paths, not the host's
                shown = as_agent_sees(self.apps.values(), record.exception)
                record = msgspec.structs.replace(record, exception=shown)
            for listener in self.event_listeners:
                listener(record)

    def _publish_message(self, message: Message) -> None:
        if self.notification_listeners:
            record = notification_record(message)
            for listener in self.notification_listeners:
                listener(record)

    # -- ARE's scaling traps -----------------------------------------------------------------

    def get_event_queue_length(self) -> int:
        queue = self.event_queue  # asked at every step: `len(queue)`, one call less for ours
        return len(queue.future_events) if type(queue) is FastEventQueue else len(queue)

    def get_event_log_size(self) -> int:
        return len(self.event_log)

    def process_event(self, event: AbstractEvent) -> list[AbstractEvent]:
        # ARE's version hands `event_log.list_view()` (a full sort of the log) to the placeholder
        # resolver for every event: quadratic over a run. The resolver only reads the logged
        # events whose id a placeholder names, so those are all it gets (`_placeholder_sources`);
        # everything else is delegated to ARE unchanged.
        if type(event) is OracleEvent and self.oracle_mode:
            event = event.make(self).with_type(EventType.AGENT)
        if isinstance(event, Event) and type(event) is not StopEvent:
            action = event.action
            args = None if action is None else action.args
            ids = None
            if args:
                for value in args.values():  # `"{{" in` first, as `_placeholder_ids` tests
                    if isinstance(value, str) and "{{" in value:
                        ids = _placeholder_ids(args)
                        break
            if ids:
                event = self.resolve_arg_placeholders(event, self._placeholder_sources(ids))
            elif args is not None:
                # What ARE's resolver does to arguments none of which is a placeholder (the
                # same test as `_placeholder_ids`): each is its own resolved value.
                action.resolved_args.update(args)
            completed = self._execute(event) if self.budget.bounded else event.execute()
            self.add_to_log(completed)
            # ARE's `get_successors` of an event with none is an empty list: no call for it.
            return self.get_successors(event) if event.successors else []
        return super().process_event(event)

    # ARE's `tick()`, `schedule()` and `prepare_events_for_start()`, step for step, except for
    # their debug lines: ARE builds them (f-strings, a datetime per event scheduled) before
    # `log_debug` can decide not to print them, per event and per tick. With ARE's logger at
    # DEBUG, ARE's own run, lines included. `tick()` also converts its time to the queue's
    # microseconds once, not once per pass, and skips ARE's two notification hooks where they
    # would do nothing (`notifications.idle_before_events`, `idle_after_events`).

    def schedule(self, events: AbstractEvent | list[AbstractEvent]) -> None:
        if _are_logger.isEnabledFor(logging.DEBUG):
            super().schedule(events)
            return
        self.events_to_schedule.extend(self._get_events_to_schedule(events))

    def prepare_events_for_start(self) -> None:
        if _are_logger.isEnabledFor(logging.DEBUG):
            super().prepare_events_for_start()
            return
        first = [event for event in self.events_to_schedule if len(event.dependencies) == 0]
        for event in first:
            event.compute_absolute_time(self.start_time)
        self.event_queue.put(first)  # one list: ours sorts it once (`FastEventQueue.put`)

    def tick(self) -> None:
        # Also: ARE walks its validators (none, in a session) to tell each the tick count.
        if self.agent_action_validators or _are_logger.isEnabledFor(logging.DEBUG):
            super().tick()
            return
        manager = self.time_manager
        # `time_manager.time()` and `to_us` written out for ours: once per tick.
        if type(manager) is VirtualTimeManager:
            self.current_time = manager.clock.now_us() / US_PER_S
        else:
            self.current_time = manager.time()
        # ARE's two notification hooks, skipped where they would do nothing (`notifications`).
        system = self.notification_system
        if system is not None and not notifications.idle_before_events(system):
            system.handle_time_based_notifications()
        now_us = round(self.current_time * US_PER_S)
        while True:
            queue = self.event_queue
            if type(queue) is FastEventQueue:
                # `pop_due_us`'s first test written out: the pass after the due events is
                # almost always empty.
                future = queue.future_events
                head = future.head_us
                if head is None or head > now_us:
                    break
                events_to_process = future.pop_due_us(now_us)
            else:
                events_to_process = queue.pop_events_to_process(self.current_time)
            if not events_to_process:
                break
            for event in events_to_process:
                try:
                    event_successors = self.process_event(event)
                except ValidationException as e:
                    self.log_error(f"Validation failed with exception: {e}")
                    self.log_error("Stopping environment")
                    self.stop(final_state=EnvironmentState.FAILED)
                    return
                for suc in event_successors:
                    if suc.event_time is None:
                        suc.event_time = event.event_time + suc.event_relative_time
                    self.event_queue.put(suc)
        system = self.notification_system
        if system is not None and not notifications.idle_after_events(system):
            system.handle_timeout_after_events()

    def _execute(self, event: Event) -> CompletedEvent:
        """ARE's `event.execute()`, within the budget. ARE logs an action that raises as a
        failed event; one stopped by the budget outside the action (in ARE's own bookkeeping
        around it) is logged the same way here."""
        try:
            return self.budget.run(event.execute)
        except OverBudget as exc:
            return CompletedEvent(
                event_type=event.event_type,
                action=event.action,
                event_time=event.event_time,
                event_id=event.event_id,
                metadata=EventMetadata(exception=str(exc)),
            )

    def _placeholder_sources(self, ids: set[str]) -> list[CompletedEvent]:
        """What ARE's placeholder resolver needs of the log for an event whose placeholders
        name `ids`: those logged events (in the log's order), or the whole sorted log when the
        index cannot say (an id logged twice, a log ARE replaced)."""
        queue = self.event_log.past_events
        if not isinstance(queue, EventLogQueue):
            return self.event_log.list_view()
        found: list[CompletedEvent] = []
        for event_id in ids:
            logged = queue.logged_with_id(event_id)
            if logged is None:
                return self.event_log.list_view()
            found.extend(logged)
        return found

    def _log(self, message: str, level: str, color: str, attrs: list[str] | None = None) -> None:
        # ARE formats a coloured, timestamped line for every debug call in `tick()` even when
        # nothing will print it; only format what the logger will actually emit.
        if _are_logger.isEnabledFor(_LEVELS.get(level, logging.INFO)):
            super()._log(message, level, color, attrs)

    # -- lifecycle without a thread ----------------------------------------------------------

    def start(self, debug: bool = False) -> None:
        if self.state == EnvironmentState.RUNNING:
            return
        self.engine.start()

    def join(self) -> None:
        raise RuntimeError(
            "AsyncEnvironment has no thread to join: drive it with `await Simulation.run()`, "
            "or use areasync.SyncEnvironment for ARE's blocking start()/join() API"
        )

    def stop(self, final_state: EnvironmentState = EnvironmentState.STOPPED) -> None:
        super().stop(final_state)
        self.wake()

    def pause(self) -> None:
        if self.state != EnvironmentState.RUNNING:
            return
        self.pause_event.set()
        self.time_manager.pause()
        self.state = EnvironmentState.PAUSED
        self.wake()

    def resume(self) -> None:
        if self.state != EnvironmentState.PAUSED:
            return
        self.time_manager.resume()
        self.pause_event.clear()
        self.state = EnvironmentState.RUNNING
        self.wake()

    def resume_with_offset(self, offset: float) -> None:
        if self.state != EnvironmentState.PAUSED:
            return
        self.time_manager.add_offset(offset)
        self.resume()
        self.tick()

    def _queue_based_loop(self) -> None:
        # The engine runs the loop; `_event_loop` is reused only for ARE's epilogue.
        return None

    def _time_based_loop(self) -> None:
        return None

    def run_loop_epilogue(self) -> None:
        """What ARE does when its event loop ends: final checks, final state, stop message."""
        self._event_loop()
        self.wake()

    def wait_for_next_notification(self) -> None:
        self.wait_handler()

    # -- what the engine steps (`areasync.engine.environment.SteppableEnvironment`) --------------

    def begin_run(self) -> None:
        self.state = EnvironmentState.RUNNING
        self.prepare_events_for_start()
        self.current_time = self.time_manager.time()

    def note_current_time(self) -> None:
        self.current_time = self.time_manager.time()

    def stop_requested(self) -> bool:
        return bool(self.stop_event.is_set())

    def next_event_time(self) -> float | None:
        queue = self.event_queue
        # ARE's `EventQueue.peek` (which ours does not override), one call less.
        head = queue.future_events.peek() if type(queue) is FastEventQueue else queue.peek()
        return None if head is None else float(head.event_time)

    def wait_timeout_time(self) -> float | None:
        # `system_app`'s cache read here while it is fresh: asked at every step.
        system = self._system_app if self._system_app_for == len(self.apps) else self.system_app
        timeout = system.wait_for_notification_timeout if system is not None else None
        return None if timeout is None else float(timeout.timeout_timestamp)

    def next_step_due_us(self) -> int | None:
        # `stop_requested`, `get_event_queue_length` and `next_due_us` in one call, for ours.
        queue = self.event_queue
        if self.stop_event.is_set() or type(queue) is not FastEventQueue:
            return None
        head = queue.future_events.head_us
        if head is None and self.exit_when_no_events:
            return None
        return self._due_us(head)

    def next_due_us(self) -> int | None:
        # `next_event_time` and `wait_timeout_time` written out: asked at every step. The
        # head's time is read as our queue keys it (`to_us` of its `event_time` when it was
        # put): the same key `pop_due_us` tells due events by.
        queue = self.event_queue
        if type(queue) is FastEventQueue:
            event = queue.future_events.head_us
        else:
            head = queue.peek()
            event = None if head is None else to_us(float(head.event_time))
        return self._due_us(event)

    def _due_us(self, event: int | None) -> int | None:
        """The earlier of `event` and a wait's timeout, in microseconds."""
        system = self._system_app if self._system_app_for == len(self.apps) else self.system_app
        timeout = system.wait_for_notification_timeout if system is not None else None
        if timeout is None:
            return event
        timeout_us = to_us(float(timeout.timeout_timestamp))
        return timeout_us if event is None or timeout_us < event else event

    def reset_wait_timeout(self) -> None:
        system = self.system_app
        if system is not None:
            system.reset_wait_for_notification_timeout()

    def next_notification_time(self) -> float | None:
        t = self.notification_system.get_next_notification_time()
        return None if t is None else float(t)

    def take_notifications_until(self, t: float) -> None:
        stamp = datetime.fromtimestamp(t, tz=UTC)
        self.notification_system.message_queue.get_by_timestamp(stamp)

    # -- a session's run ----------------------------------------------------------------------

    def start_scenario(self, scenario: Scenario) -> None:
        """ARE's `run(scenario, wait_for_end=False)`: register the apps, schedule the events."""
        self.run(scenario, wait_for_end=False)
        aui = self.agent_user_interface
        if aui is not None:
            # ARE's GUI mode busy-waits (time.sleep) for a reply to send_message_to_user;
            # here the user's reply arrives on the stream like any other notification.
            aui.wait_for_user_response = False

    @property
    def agent_user_interface(self) -> AgentUserInterface | None:
        """The scenario's AgentUserInterface app (the user the agent talks to), if it has one."""
        return self.get_app_with_class(AgentUserInterface)

    def stop_run(self, *, failed: bool = False) -> None:
        """ARE's `stop`, ending in its FAILED state if `failed`, else in STOPPED."""
        self.stop(final_state=EnvironmentState.FAILED if failed else EnvironmentState.STOPPED)

    # -- conveniences --------------------------------------------------------------------------

    def get_tools_by_app(self) -> dict[str, list[AppTool]]:
        # ARE's own; the apps that have not built their tools yet build them from parts parsed
        # once per app class function (`tool_cache`: the same AppTools, nothing of a session
        # cached).
        with tool_cache.building():
            return super().get_tools_by_app()

    @property
    def system_app(self) -> SystemApp | None:
        # Looked up on every engine step: cache it (None included) until the apps change.
        if self._system_app_for != len(self.apps):
            self._system_app = self.get_app_with_class(SystemApp)
            self._system_app_for = len(self.apps)
        return self._system_app

    def register_apps(self, apps: list[Any]) -> None:
        super().register_apps(apps)
        self._system_app_for = -1


class PublishingEventLog(EventLog):
    """ARE's EventLog that hands every logged event to a hook, at the instant it is logged.

    Publishing here rather than after `add_to_log` keeps ARE's order: an event is on the stream
    before the notification it causes (`add_to_log` notifies right after logging).
    """

    def __init__(self, hook: Callable[[CompletedEvent], None]) -> None:
        super().__init__()
        self.past_events = EventLogQueue()  # ARE's heap, cheaper comparisons (`queues`)
        self._hook = hook
        # Events taken in so far: what a tool call compares to see whether ARE logged it
        # (`len` would take the queue's lock twice per call).
        self.logged = 0

    def put(self, event: CompletedEvent | list[CompletedEvent]) -> None:
        if type(event) is list:
            for one in event:
                self.put(one)
            return
        # ARE's `EventLog.put` of one event: a copy, so that later changes to the event are
        # not logged.
        self.past_events.put(event.copy())
        self.logged += 1
        self._hook(event)


def _placeholder_ids(args: dict[str, Any]) -> set[str]:
    """The event ids an event's arguments `args` name as `{{event_id.key...}}` (ARE's syntax)."""
    ids = set()
    for value in args.values():
        # `"{{" in` first: a C substring scan rules out almost every argument before the regex.
        if (
            isinstance(value, str)
            and "{{" in value
            and (match := _PLACEHOLDER.match(value.strip())) is not None
        ):
            ids.add(match.group(1).split(".")[0])
    return ids


def _nothing() -> None:
    return None


def session_environment(
    scenario: Scenario,
    *,
    oracle: bool,
    exit_when_no_events: bool | None,
    mode: Mode | str,
    speed: float,
    wall: Callable[[], float],
) -> AsyncEnvironment:
    """The environment a session runs `scenario` in, as ARE's CLI runner configures it.

    `oracle` runs the oracle events as the agent's actions; by default the run then ends when
    no event is left (`exit_when_no_events`), as ARE's does.
    """
    config = EnvironmentConfig(
        oracle_mode=oracle,
        time_increment_in_seconds=scenario.time_increment_in_seconds,
        exit_when_no_events=oracle if exit_when_no_events is None else exit_when_no_events,
        verbose=False,
    )
    if scenario.start_time and scenario.start_time > 0:
        config.start_time = scenario.start_time
    return AsyncEnvironment(
        config,
        EnvironmentType.CLI,
        notification_system=VerboseNotificationSystem(),
        mode=Mode(mode),
        speed=speed,
        wall=wall,
    )
