"""`Simulation`: an ARE scenario run by an asyncio task on the virtual clock.

This is the async driver over the sans-I/O `Engine`. It owns the session's stream (every
completed event, notification and clock change, numbered by `seq`), the agents' busy leases
(fast mode), and the controls. All mutation of the ARE environment happens on the event loop
(there is no thread), under the session's one ordered command lane, `Simulation.lane`: a
FIFO lock that every mutating method (tool calls, user messages, controls) and each batch of
the driver's steps holds while it runs. Commands therefore apply atomically and in the order
they arrive, never inside a tick or inside one another, even when one of them yields:

- a long `jump`, `next_event` or `tick(n)` fires its items in pieces of `control_budget` wall
  seconds and yields to the event loop between them (other sessions, sockets and keepalives
  go on; subscribers get the burst as it is made), but it keeps the lane throughout, so
  another command of this session, or the driver, runs after it, at the time it left. Once
  started, such a control runs to its end even if its caller is cancelled (a half-done jump
  is no state to leave a session in), and it holds the realtime clock, so that the wall time
  its yields take does not flow into simulated time: it fires exactly what one uninterrupted
  jump would;
- a `stop` never waits behind a long control: it announces itself before it takes its place
  in the lane (`announce_stop`; the service also announces a stop frame it has read but not
  yet run), and a long control that sees a stop announced at one of its yields ends there,
  raising `ControlInterruptedError`. What it did stays done: the items it fired stay fired
  (and streamed), the clock rests where it got to (the time of the last item it fired; a
  jump's target is not reached, so nothing is owed there), and the interruption is logged in
  `inputs`. A control that gets the lane while a stop is announced does nothing. Everything
  else keeps its place in the lane: only a stop preempts;
- `tick(n)` takes at most `max_ticks` ticks and a jump moves the clock at most `max_jump`
  simulated seconds (`next_event` too): a bigger one is refused, changing nothing, with a
  message saying to split it;
- the uncontended case costs no task switch: the lane is taken without a checkpoint when it
  is free (`CommandLane`), and a control that finishes within its budget never yields;
- `SystemApp__wait_for_notification` holds the lane for its synchronous part only, never
  while it waits.

    sim = Simulation.load("scenario_tutorial", mode="fast", oracle=True)
    await sim.run()

    async with Simulation.load(path, mode="manual") as sim:
        async for item in sim.stream(since=0): ...
        await sim.call_tool("EmailClientApp__send_email", {...})
        await sim.jump(by=60)
"""

from __future__ import annotations

import collections
import math
import os
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractContextManager, asynccontextmanager
from types import TracebackType
from typing import Any

import anyio
import anyio.abc
import msgspec
from are.simulation.apps.agent_user_interface import AgentUserInterface
from are.simulation.environment import EnvironmentConfig
from are.simulation.notification_system import VerboseNotificationSystem
from are.simulation.scenarios.scenario import Scenario
from are.simulation.types import EnvironmentState, EnvironmentType

from areasync.bridge import scenarios
from areasync.bridge.environment import AsyncEnvironment
from areasync.bridge.judge_options import JudgeOptions
from areasync.bridge.records import to_plain
from areasync.bridge.sandbox import DEFAULT_MAX_FILE_BYTES, Sandbox
from areasync.bridge.tools import ToolBox
from areasync.loop.clock import ClockError, ClockMode, to_s, to_us
from areasync.loop.engine import EngineError
from areasync.loop.stream import StreamLog

# Defined apart from this module (which imports ARE) so that the CLI and ServiceConfig can
# read them without importing ARE; re-exported here, where they have always been.
from areasync.policies import MAX_JUMP_S, MAX_TICKS, LagPolicy, LeasePolicy
from areasync.protocol.frames import (
    ClockItem,
    EndedItem,
    EventItem,
    NotificationItem,
    StreamItem,
)
from areasync.protocol.records import ClockState, EventRecord, NotificationRecord, ToolInfo

WAIT_TOOL = "SystemApp__wait_for_notification"

# In fast mode the driver runs engine steps back to back; it yields to the event loop at least
# this often (wall seconds) so sockets, dashboards and controls are never starved. Items logged
# in one stretch reach subscribers together at its end, so the service, which has subscribers,
# uses a shorter stretch (ServiceConfig.step_budget); a longer one gives more events per second.
STEP_BUDGET_S = 0.002
# A long control (jump, next_event, tick{n}) fires its items in pieces of this many wall
# seconds. It is one command whose reply waits for its end, so its pieces are longer than fast
# mode's steps (a piece's overhead - a hand-out to every subscriber - would otherwise slow the
# control down: a 20,000-event jump took 1.4-1.5 s in pieces of 1 ms, 1.04-1.07 s in pieces of
# 20 ms, 1.04 s in one piece); 20 ms is the longest another session or socket then waits.
CONTROL_BUDGET_S = 0.02
# Realtime mode publishes the clock at most this often (wall seconds) while it flows.
CLOCK_PUBLISH_INTERVAL_S = 0.25


class SimulationError(Exception):
    """A request the simulation cannot carry out; nothing was changed."""

    code = "bad_state"


class BadStateError(SimulationError):
    code = "bad_state"


class InvalidRequestError(SimulationError):
    code = "invalid_field"


class ControlInterruptedError(SimulationError):
    """A long control (jump, next_event, tick) gave way to a stop before it was done.

    What it did stays done (see the module docstring); the message says how far it got."""

    code = "interrupted"


class InputRecord(msgspec.Struct, frozen=True):
    """One external input, logged so that a fast or manual run can be replayed exactly."""

    time: float
    seq: int
    source: str
    payload: dict[str, Any]


class CommandLane:
    """A FIFO lock for one session's commands: `async with lane:` runs a command in turn.

    Free, it is taken with no await at all (no checkpoint, no task switch): the common case of
    one command at a time costs a flag. Held, a taker waits in line; a release hands the lane
    straight to the longest waiter, so nobody can overtake in between and commands run in the
    order they asked. (anyio's `Lock(fast_acquire=True)` behaves the same, FIFO with hand-off,
    but costs several times more per uncontended round trip: it tracks the owner task and
    checks for cancellation.) Not re-entrant: a command must not await another command.
    """

    __slots__ = ("_busy", "_sandbox", "_scope", "_waiters")

    def __init__(self, sandbox: Sandbox | None = None) -> None:
        self._busy = False
        self._waiters: collections.deque[anyio.Event] = collections.deque()
        # Whoever holds the lane runs the session's code: inside the session's sandbox.
        self._sandbox = sandbox
        self._scope: AbstractContextManager[None] | None = None

    def locked(self) -> bool:
        return self._busy

    @property
    def waiting(self) -> int:
        """How many commands wait for the lane."""
        return len(self._waiters)

    async def __aenter__(self) -> None:
        if not self._busy:
            self._busy = True
            self._enter_sandbox()
            return
        turn = anyio.Event()
        self._waiters.append(turn)
        try:
            await turn.wait()
        except BaseException:
            if turn.is_set():
                self._release()  # handed the lane, but cancelled before running: pass it on
            else:
                self._waiters.remove(turn)
            raise
        self._enter_sandbox()

    def _enter_sandbox(self) -> None:
        if self._sandbox is not None:
            self._scope = self._sandbox.entered()
            self._scope.__enter__()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        scope, self._scope = self._scope, None
        if scope is not None:
            scope.__exit__(None, None, None)
        self._release()

    def _release(self) -> None:
        if self._waiters:
            self._waiters.popleft().set()  # still busy: it is the next command's now
        else:
            self._busy = False


class Simulation:
    """An ARE scenario on a virtual clock, driven by an asyncio task. See the module docstring."""

    def __init__(
        self,
        scenario: Scenario,
        env: AsyncEnvironment,
        *,
        lag_policy: LagPolicy | str = LagPolicy.SLIP,
        max_lag: float = 5.0,
        lease_timeout: float = 300.0,
        lease_policy: LeasePolicy | str = LeasePolicy.RELEASE,
        drain_notifications: bool = True,
        step_budget: float = STEP_BUDGET_S,
        control_budget: float = CONTROL_BUDGET_S,
        max_ticks: int = MAX_TICKS,
        max_jump: float = MAX_JUMP_S,
        sandbox: Sandbox | None = None,
    ) -> None:
        if isinstance(max_ticks, bool) or not isinstance(max_ticks, int) or max_ticks < 1:
            raise InvalidRequestError(
                f"max_ticks must be a whole number >= 1 (ticks per tick control), got {max_ticks!r}"
            )
        if not (isinstance(max_jump, int | float) and math.isfinite(max_jump) and max_jump > 0):
            raise InvalidRequestError(
                f"max_jump must be a finite number > 0 (simulated seconds per jump), got "
                f"{max_jump!r}"
            )
        for name, budget in (("step_budget", step_budget), ("control_budget", control_budget)):
            if not budget > 0:
                raise InvalidRequestError(
                    f"{name} must be > 0 wall seconds (how long fast mode, or a long control, "
                    f"runs between yields to the event loop), got {budget!r}"
                )
        self.scenario = scenario
        self.env = env
        if sandbox is None:
            sandbox = Sandbox()
            sandbox.adopt(scenario.apps or [])
        # The host files the session's code may touch (`areasync.bridge.sandbox`): everything
        # that holds the lane runs inside it.
        self.sandbox = sandbox
        self.engine = env.engine
        self.clock = env.clock
        self.tools = ToolBox(env)
        self.lag_policy = LagPolicy(lag_policy)
        self.max_lag = max_lag
        self.lease_timeout = lease_timeout
        self.lease_policy = LeasePolicy(lease_policy)
        self.drain = drain_notifications
        self.step_budget = step_budget
        self.control_budget = control_budget
        self.max_ticks = max_ticks
        self.max_jump = float(max_jump)
        self.log: StreamLog[StreamItem] = StreamLog()
        self.inputs: list[InputRecord] = []
        self.validation: dict[str, Any] | None = None
        # Why the run ended early (a stop, a lease policy, a failure); None when it ran out.
        self.end_reason: str | None = None
        self.lag = 0.0
        self._leases: dict[str, float] = {}
        self._wake_event = anyio.Event()
        self._driving = False
        self._ended = anyio.Event()
        self._concluded = False
        self._waiting_for_notification = 0
        self._last_clock_publish = -math.inf
        self._task_group: anyio.abc.TaskGroup | None = None
        # The session's ordered command lane (see the module docstring).
        # Stops on their way (announced, not yet run): long controls give way to them.
        self._stops_announced = 0
        self._lane = CommandLane(sandbox)
        # Realtime starts when the driver does, not when the scenario was loaded: until then
        # the clock stands still, so nothing read during setup is ever taken back.
        self.clock.hold()
        self._held_until_driven = True
        env.event_listeners.append(self._on_event)
        env.notification_listeners.append(self._on_notification)
        env.wake = self._wake
        env.wait_handler = self._begin_wait

    # -- construction ------------------------------------------------------------------------

    @classmethod
    def load(
        cls,
        source: str | os.PathLike[str] | Scenario,
        *,
        mode: ClockMode | str = ClockMode.FAST,
        oracle: bool = False,
        speed: float = 1.0,
        exit_when_no_events: bool | None = None,
        wall: Callable[[], float] = time.monotonic,
        import_mode: scenarios.ImportMode | str = scenarios.ImportMode.AUTO,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        sandbox: Sandbox | None = None,
        **options: Any,
    ) -> Simulation:
        """Load a scenario (registered id, JSON path, JSON text or Scenario) ready to run.

        `oracle=True` runs the scenario's oracle events as the agent's actions (ARE's oracle
        mode); by default the run then ends when no event is left, as ARE's does.
        `import_mode` says how a JSON scenario is imported: `auto` (default), `benchmark`
        (Gaia2's runner: turns rewired so that a live agent reaches each one) or `plain`
        (ARE's plain import); see `areasync.bridge.scenarios`. The session's code runs in a
        sandbox (`areasync.bridge.sandbox`) from the moment the scenario is built: its apps may
        touch only its file-system apps' files, and read none larger than `max_file_bytes`.
        A Scenario built by `build_scenario` comes with its `sandbox`: pass it on (it is
        released if the simulation cannot be made).
        """
        if sandbox is None:
            _discover_registered(source)
            sandbox = Sandbox(max_file_bytes=max_file_bytes)
        try:
            with sandbox.loading(_scenario_file(source)):
                return cls._build(
                    source,
                    sandbox,
                    mode,
                    oracle,
                    speed,
                    exit_when_no_events,
                    wall,
                    import_mode,
                    options,
                )
        except BaseException:
            sandbox.release()  # what ARE created for a scenario that did not load
            raise

    @classmethod
    def _build(
        cls,
        source: str | os.PathLike[str] | Scenario,
        sandbox: Sandbox,
        mode: ClockMode | str,
        oracle: bool,
        speed: float,
        exit_when_no_events: bool | None,
        wall: Callable[[], float],
        import_mode: scenarios.ImportMode | str,
        options: dict[str, Any],
    ) -> Simulation:
        scenario = scenarios.load(source, import_mode=import_mode, oracle=oracle)
        sandbox.adopt(scenario.apps or [])
        config = EnvironmentConfig(
            oracle_mode=oracle,
            time_increment_in_seconds=scenario.time_increment_in_seconds,
            exit_when_no_events=oracle if exit_when_no_events is None else exit_when_no_events,
            verbose=False,
        )
        if scenario.start_time and scenario.start_time > 0:
            config.start_time = scenario.start_time
        env = AsyncEnvironment(
            config,
            EnvironmentType.CLI,
            notification_system=VerboseNotificationSystem(),
            mode=ClockMode(mode),
            speed=speed,
            wall=wall,
        )
        sim = cls(scenario, env, sandbox=sandbox, **options)
        env.run(scenario, wait_for_end=False)
        aui = env.get_app_with_class(AgentUserInterface)
        if aui is not None:
            # ARE's GUI mode busy-waits (time.sleep) for a reply to send_message_to_user;
            # here the user's reply arrives on the stream like any other notification.
            aui.wait_for_user_response = False
        sim._publish_clock()
        return sim

    # -- reading -----------------------------------------------------------------------------

    @property
    def ended(self) -> bool:
        return self._concluded

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
            time=to_s(max(self.clock.peek_us(), self.clock.reported_us))
            if peek
            else self.clock.now(),
            tick=int(self.env.tick_count),
            mode=self.clock.mode.value,
            speed=self.clock.speed,
            start_time=float(self.env.start_time or 0.0),
            duration=None if self.env.duration is None else float(self.env.duration),
            lag=self.lag,
        )

    def list_tools(self) -> list[ToolInfo]:
        return self.tools.infos()

    def get_state(self, apps: list[str] | None = None) -> dict[str, Any]:
        """The apps' state (ARE's `get_state` of each app), optionally only the named apps."""
        names = list(self.env.apps) if apps is None else apps
        unknown = [name for name in names if name not in self.env.apps]
        if unknown:
            raise InvalidRequestError(
                f"unknown app(s) {', '.join(unknown)}: the session has {', '.join(self.env.apps)}"
            )
        return {name: to_plain(self.env.apps[name].get_state()) for name in names}

    def stream(self, since: int = 0) -> AsyncIterator[StreamItem]:
        """Every stream item after `since`, then live ones, until (and including) `ended`."""
        return self.log.follow(since)

    def events(self) -> list[EventRecord]:
        return [item.event for item in self.log.items if isinstance(item, EventItem)]

    def notifications(self) -> list[NotificationRecord]:
        return [item.notification for item in self.log.items if isinstance(item, NotificationItem)]

    # -- running -----------------------------------------------------------------------------

    async def run(self) -> dict[str, Any] | None:
        """Run to the scenario's end (or wait for it, inside `async with`). Returns validation."""
        if self._driving:
            await self._ended.wait()
        else:
            self._driving = True
            await self._drive()
        return self.validation

    async def __aenter__(self) -> Simulation:
        self._task_group = anyio.create_task_group()
        await self._task_group.__aenter__()
        # Marked before the task starts, so that a `run()` right after entering waits for it.
        self._driving = True
        self._task_group.start_soon(self._drive)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        assert self._task_group is not None
        if not self._concluded:
            self._stop_now("the simulation context exited")
        self._wake()
        return await self._task_group.__aexit__(exc_type, exc, tb)

    async def _drive(self) -> None:
        if self._held_until_driven:
            self._held_until_driven = False
            self.clock.unhold()
        if self.engine.started and self.env.tick_count == 0 and self.clock.flowing:
            # The first tick is due now (the clock rests at it unless a later time was read).
            first_tick_us = max(self.engine.next_grid_us(), self.clock.reported_us)
            self.clock.anchor(first_tick_us, self.clock.wall())
        try:
            while not self._concluded:
                # Planning may end the session (a lease policy): it is a command like any other.
                async with self._lane:
                    if self._concluded:
                        break
                    delay = self._plan()
                    if delay is not None and delay <= 0:
                        self._run_steps()
                if delay is None or delay > 0:
                    await self._sleep(delay)
                    continue
                await anyio.lowlevel.checkpoint()
        finally:
            self._driving = False

    def _plan(self) -> float | None:
        """Wall seconds until the next step (0: now; None: only when woken)."""
        engine = self.engine
        if engine.finished or engine.stopping:
            return 0.0
        if self.clock.paused:
            return None
        mode = self.clock.mode
        if mode is ClockMode.FAST:
            if self._leases:
                return self._lease_delay()
            if engine.next_due_us() is None and not self.env.exit_when_no_events:
                return 0.0 if engine.end_us is not None else None
            return 0.0
        if mode is ClockMode.REALTIME:
            delay = self.clock.wall_delay_until(engine.next_grid_us())
            return 0.0 if delay is None else delay
        return None  # manual: only controls move time

    def _run_steps(self) -> None:
        """Engine steps back to back until the budget is spent or the driver must re-plan."""
        out_of_time = _out_of_time(self.step_budget)
        while True:
            more = self._step()
            self._after_step()
            if not more or out_of_time():
                return

    def _out_of_time(self) -> Callable[[], bool]:
        """A fresh `control_budget` of wall time, as the engine's `out_of_time` callable."""
        return _out_of_time(self.control_budget)

    async def _advance(self, target: int, inclusive: bool, action: str) -> None:
        """The engine's jump to `target`, in pieces of `control_budget`, yielding in between.

        The caller holds the lane and the clock. The first piece raises if the jump cannot be
        made (nothing changed then); once items have fired, the rest runs to its end, shielded
        from cancellation - the jump is one command - unless a stop is announced: then it ends
        at the yield where it sees it (`ControlInterruptedError`), where it got to.
        """
        engine = self.engine
        if engine.advance_to(target, inclusive=inclusive, out_of_time=self._out_of_time()):
            return
        with anyio.CancelScope(shield=True):
            while True:
                await anyio.lowlevel.checkpoint()
                self._give_way_to_a_stop(
                    action, f"{to_s(target - self.clock.now_us()):g} s short of its target"
                )
                if engine.advance_to(target, inclusive=inclusive, out_of_time=self._out_of_time()):
                    return

    def _give_way_to_a_stop(self, action: str, progress: str | None = None) -> None:
        """Raise `ControlInterruptedError` if a stop is announced. Called when a control gets
        the lane (`progress` None: it has done nothing, and does nothing) and at each of its
        yields (the lane and the clock are the caller's to release)."""
        if not self._stops_announced:
            return
        if progress is None:
            raise ControlInterruptedError(
                f"{action} not run: a stop is on its way (it ends the session); nothing was done"
            )
        self._record("interrupted", {"control": action, "progress": progress})
        self._after_control()
        raise ControlInterruptedError(
            f"{action} interrupted by a stop (it ends the session): {progress}; the clock rests "
            f"at {self.clock.now():.6f}, and the items it fired stay fired and on the stream"
        )

    def _check_span(self, now: int, target: int, action: str) -> None:
        """Refuse (before anything changes) a jump that would move the clock past `max_jump`."""
        span = to_s(target - now)
        if span > self.max_jump:
            raise InvalidRequestError(
                f"{action} would move the clock {span:g} simulated seconds, above this "
                f"session's limit of {self.max_jump:g} s per jump (max_jump); nothing was "
                f"done: split it into jumps of at most {self.max_jump:g} s"
            )

    def _step(self) -> bool:
        """One engine step. False when the driver should plan again (wait, or done)."""
        engine = self.engine
        if engine.finished or engine.stopping:
            engine.finish()
            return False
        if self.clock.mode is not ClockMode.FAST:
            self._realtime_tick()  # one tick per wake-up: the next one is paced by the wall
            return False
        if self._leases or self.clock.paused:
            return False
        if engine.step_fast():
            return True
        if not engine.finished and engine.next_due_us() is None:
            engine.run_out()
        return False

    def _realtime_tick(self) -> None:
        target = self.engine.next_grid_us()
        late_us = self.clock.peek_us() - target  # pacing only: not a reading anyone sees
        self.lag = max(0.0, late_us / 1e6 / self.clock.speed)
        if self.lag_policy is LagPolicy.STRICT and self.lag > self.max_lag:
            self._stop_now(
                f"realtime tick ran {self.lag:.3f} s late, above max_lag={self.max_lag}",
                failed=True,
            )
            return
        if self.lag_policy is LagPolicy.CATCH_UP:
            self.engine.step_grid()
        else:
            # A tick takes no simulated time: ARE's thread spends ~1 ms of wall time per tick,
            # which at speed k would otherwise become k ms of simulated time inside the tick.
            # A late tick runs at the latest time already given out, if that is later than its
            # own: what was read stays read.
            self.clock.anchor(max(target, self.clock.reported_us), self.clock.wall())
            self.clock.hold()
            try:
                self.engine.step_grid()
            finally:
                self.clock.unhold()
        wall = self.clock.wall()
        if wall - self._last_clock_publish >= CLOCK_PUBLISH_INTERVAL_S:
            self._publish_clock()

    def _after_step(self) -> None:
        if self.drain and self.env.notification_system.message_queue.messages.queue:
            self.engine.drain_notifications()
        if self.engine.finished:
            self._conclude()

    async def _sleep(self, delay: float | None) -> None:
        event = self._wake_event
        if delay is None:
            await event.wait()
        else:
            with anyio.move_on_after(delay):
                await event.wait()
        if self._wake_event is event and event.is_set():
            self._wake_event = anyio.Event()

    def _wake(self) -> None:
        self._wake_event.set()

    # -- leases (fast mode) -------------------------------------------------------------------

    def acquire(self, holder: str) -> None:
        """`holder` is busy: in fast mode, time stands still until it releases (or times out)."""
        self._leases[holder] = self.clock.wall() + self.lease_timeout
        self._wake()

    def release(self, holder: str) -> None:
        """`holder` is idle; once no lease is held, a fast session jumps to the next due item."""
        if self._leases.pop(holder, None) is not None:
            self._wake()

    @property
    def leases(self) -> dict[str, float]:
        return dict(self._leases)

    @asynccontextmanager
    async def busy(self, holder: str = "agent") -> AsyncIterator[None]:
        self.acquire(holder)
        try:
            yield
        finally:
            self.release(holder)

    def _lease_delay(self) -> float | None:
        now = self.clock.wall()
        expired = [holder for holder, deadline in self._leases.items() if deadline <= now]
        for holder in expired:
            del self._leases[holder]
            self._record("lease", {"expired": holder, "policy": self.lease_policy.value})
            if self.lease_policy is LeasePolicy.END:
                self._stop_now(f"agent {holder!r} held its busy lease past the deadline")
                return 0.0
        if not self._leases:
            return 0.0
        return max(0.0, min(self._leases.values()) - now)

    # -- tool calls --------------------------------------------------------------------------

    async def call_tool(
        self, name: str, args: dict[str, Any] | None = None, *, holder: str | None = None
    ) -> Any:
        """Call an ARE tool by public name between ticks; returns its JSON-typed result.

        `SystemApp__wait_for_notification` returns once a notification arrives or its timeout
        passes in simulated time; meanwhile the stream keeps flowing and, in fast mode, the
        caller's lease (if `holder` is given) is released.
        """
        if name != WAIT_TOOL:
            async with self._lane:
                self._require_live("call a tool")
                arguments = dict(args or {})
                self._record("call_tool", {"tool": name, "args": to_plain(arguments)})
                result = self.tools.call(name, arguments)
                self._after_command()
                return result
        # The lane for the call itself only: the wait is not a command, others go on.
        async with self._lane:
            self._require_live("call a tool")
            arguments = dict(args or {})
            self._record("call_tool", {"tool": name, "args": to_plain(arguments)})
            seq = self.log.seq
            self._waiting_for_notification += 1
            try:
                result = self.tools.call(name, arguments)
                if holder is not None:
                    self.release(holder)
                self._after_command()
            except BaseException:
                self._waiting_for_notification -= 1
                raise
        try:
            await self._wait_for_notification_after(seq)
        finally:
            self._waiting_for_notification -= 1
        return result

    def _begin_wait(self) -> None:
        # ARE's SystemApp set the timeout; the driver treats it as a due item. Nothing blocks.
        self.env.waiting_for_notification = True
        self._wake()

    async def _wait_for_notification_after(self, seq: int) -> None:
        position = seq
        while not self._concluded:
            for item in self.log.items[position:]:
                if isinstance(item, NotificationItem):
                    return
            position = self.log.seq
            await self.log.wait_beyond(position)

    async def send_user_message(self, content: str) -> Any:
        """The user writes to the agent (ARE's `AgentUserInterface.send_message_to_agent`)."""
        async with self._lane:
            self._require_live("send a user message")
            aui = self.env.get_app_with_class(AgentUserInterface)
            if aui is None:
                raise BadStateError(
                    "this scenario has no AgentUserInterface app, so there is no user to speak as"
                )
            self._record("send_user_message", {"content": content})
            result = aui.send_message_to_agent(content=content)
            self._after_command()
            return to_plain(result)

    # -- controls ----------------------------------------------------------------------------

    async def pause(self) -> ClockState:
        async with self._lane:
            self._require_live("pause")
            if self.env.state != EnvironmentState.RUNNING:
                raise BadStateError(f"cannot pause: the simulation is {self.state}, not running")
            self._record("pause", {})
            self.env.pause()
            return self._after_control()

    async def resume(self) -> ClockState:
        async with self._lane:
            self._require_live("resume")
            if self.env.state != EnvironmentState.PAUSED:
                raise BadStateError(
                    f"cannot resume: the simulation is {self.state}, not paused; pause it first"
                )
            self._record("resume", {})
            self.env.resume()
            return self._after_control()

    async def jump(
        self, *, to: float | None = None, by: float | None = None, inclusive: bool = True
    ) -> ClockState:
        """Move simulated time forward to `to` or by `by` seconds; due items fire on the way.

        `inclusive=False` stops just before the target's own items: everything due strictly
        before it fires, the clock rests at exactly the target, and what is due there (events,
        a wait's timeout, the time-based loop's tick) runs at that time on the next step - in
        fast mode once no agent is busy, in manual mode on the next `tick`/`jump`. A tool call
        made in between is logged at the target, ahead of its items, as ARE's oracle run
        orders an action first in its tick.

        A long jump yields to the event loop every `control_budget` but holds the lane: the
        session's other commands run after it (see the module docstring).
        """
        if (to is None) == (by is None):
            raise InvalidRequestError("jump needs exactly one of `to` (a time) or `by` (seconds)")
        if not isinstance(inclusive, bool):
            raise InvalidRequestError(
                f"jump's `inclusive` must be true or false, got {inclusive!r}"
            )
        value = to if to is not None else by
        if (
            not isinstance(value, int | float)
            or isinstance(value, bool)
            or not math.isfinite(value)
        ):
            raise InvalidRequestError(f"jump target must be a finite number, got {value!r}")
        if by is not None and by < 0:
            raise InvalidRequestError(
                f"cannot jump by {by} s: jumps only move time forward; use a positive amount"
            )
        async with self._lane:
            self._require_live("jump")
            self._give_way_to_a_stop("jump")
            # Held for the whole jump: in realtime, the wall time its pieces and yields take
            # must not flow into simulated time (nor a `by` target move while it runs).
            self.clock.hold()
            try:
                now = self.clock.now_us()
                target = now + to_us(by) if by is not None else to_us(float(value))
                if target < now:
                    raise InvalidRequestError(
                        f"cannot jump to {to_s(target)}: the clock is already at {to_s(now)}; "
                        "jumps only move time forward"
                    )
                self._check_span(now, target, "jump")
                self._record("jump", {"to": to, "by": by, "inclusive": inclusive})
                try:
                    await self._advance(target, inclusive, "jump")
                except ClockError as exc:
                    raise InvalidRequestError(str(exc)) from exc
            finally:
                self.clock.unhold()
            return self._after_control()

    async def next_event(self) -> ClockState:
        """Jump to the next due item (event or wait timeout) and fire it."""
        async with self._lane:
            self._require_live("jump to the next event")
            self._give_way_to_a_stop("next_event")
            if self.engine.next_due_us() is None:
                raise BadStateError(
                    "no event is scheduled, so there is no next event to jump to; jump by an amount"
                )
            self.clock.hold()
            try:
                try:
                    target = self.engine.next_event_target_us()
                except EngineError as exc:
                    raise BadStateError(str(exc)) from exc
                self._check_span(self.clock.now_us(), target, "next_event")
                self._record("jump", {"next_event": True})
                await self._advance(target, True, "next_event")
            finally:
                self.clock.unhold()
            return self._after_control()

    async def tick(self, n: int = 1) -> ClockState:
        """Run `n` ticks of ARE's time-based loop (one every `time_increment_in_seconds`).

        Many ticks yield to the event loop every `control_budget`, holding the lane, as a jump;
        a stop announced meanwhile interrupts them (`ControlInterruptedError`). At most
        `max_ticks` per call."""
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise InvalidRequestError(f"tick needs a whole number of ticks >= 1, got {n!r}")
        if n > self.max_ticks:
            raise InvalidRequestError(
                f"tick n={n} is above this session's limit of {self.max_ticks} ticks per "
                f"control (max_ticks); nothing was done: split it into ticks of at most "
                f"{self.max_ticks}, or jump"
            )
        async with self._lane:
            self._require_live("tick")
            self._give_way_to_a_stop("tick")
            self._record("tick", {"n": n})
            self.clock.hold()
            try:
                done = self._ticks(n, self._out_of_time())
                if done < n and not self.engine.finished:
                    with anyio.CancelScope(shield=True):
                        while done < n and not self.engine.finished:
                            await anyio.lowlevel.checkpoint()
                            self._give_way_to_a_stop("tick", f"{done} of its {n} ticks ran")
                            done += self._ticks(n - done, self._out_of_time())
            finally:
                self.clock.unhold()
            return self._after_control()

    def _ticks(self, n: int, out_of_time: Callable[[], bool]) -> int:
        """Up to `n` grid ticks, fewer when out of time; how many ran (n when the run ended)."""
        for i in range(n):
            if not self.engine.step_grid():
                return n
            self._after_step()
            if out_of_time():
                return i + 1
        return n

    def set_speed(self, speed: float) -> ClockState:
        """Change the realtime speed (simulated seconds per wall second); never a jump.

        Synchronous: call it holding `lane` to order it among the session's commands."""
        self._require_live("set the speed")
        try:
            self.clock.set_speed(speed)
        except ClockError as exc:
            raise InvalidRequestError(str(exc)) from exc
        self._record("set_speed", {"speed": speed})
        return self._after_control()

    def set_mode(self, mode: ClockMode | str) -> ClockState:
        """Change the clock's mode. Synchronous, as `set_speed`."""
        self._require_live("change the mode")
        try:
            new_mode = ClockMode(mode)
        except ValueError as exc:
            raise InvalidRequestError(
                f"unknown mode {mode!r}: use one of {', '.join(m.value for m in ClockMode)}"
            ) from exc
        self.clock.set_mode(new_mode)
        self._record("set_mode", {"mode": new_mode.value})
        return self._after_control()

    async def stop(self, reason: str = "stopped by request") -> dict[str, Any] | None:
        """End the session now (ARE's `stop`); returns the validation result. `reason` goes
        on the `ended` item. It takes its turn in the lane, but a long control running (or
        waiting) ahead of it gives way at its next yield (see the module docstring)."""
        withdraw = self.announce_stop()
        try:
            async with self._lane:
                self._require_live("stop")
                self._record("stop", {})
                self._stop_now(reason)
                return self.validation
        finally:
            withdraw()

    def announce_stop(self) -> Callable[[], None]:
        """A stop is on its way: long controls give way to it from their next yield on.

        `stop()` announces itself; a caller that has a stop in hand but must first run what
        came before it (the service, for a stop frame read while a control of its own
        connection runs) announces it early. Returns the function that withdraws the
        announcement (idempotent); call it once the stop has run or will not."""
        self._stops_announced += 1
        withdrawn = False

        def withdraw() -> None:
            nonlocal withdrawn
            if not withdrawn:
                withdrawn = True
                self._stops_announced -= 1

        return withdraw

    @property
    def stop_announced(self) -> bool:
        """True while a stop is on its way (see `announce_stop`)."""
        return self._stops_announced > 0

    # -- internals ---------------------------------------------------------------------------

    def _require_live(self, action: str) -> None:
        if self._concluded:
            raise BadStateError(f"cannot {action}: the simulation has ended ({self.state})")

    def _record(self, source: str, payload: dict[str, Any]) -> None:
        self.inputs.append(InputRecord(self.clock.now(), self.log.seq, source, payload))

    def _after_command(self) -> None:
        self._after_step()
        self._wake()

    def _after_control(self) -> ClockState:
        self._after_step()
        self._publish_clock()
        self._wake()
        return self.clock_state()

    def fail(self, reason: str) -> None:
        """End the run now in ARE's FAILED state, e.g. because the scenario's own code raised
        out of a tick (ARE's thread would die there and leave the environment RUNNING)."""
        self._stop_now(reason, failed=True)

    def _stop_now(self, reason: str, *, failed: bool = False) -> None:
        if self._concluded:
            return
        if self.end_reason is None:
            self.end_reason = reason
        final = EnvironmentState.FAILED if failed else EnvironmentState.STOPPED
        if not self.engine.finished:
            self.env.stop(final_state=final)
            self.engine.finish()
        self._after_step()

    def _on_event(self, record: EventRecord) -> None:
        self.log.append(lambda seq: EventItem(seq=seq, event=record))

    def _on_notification(self, record: NotificationRecord) -> None:
        if self._waiting_for_notification and self.env.system_app is not None:
            # The wait is over: a stale timeout must not fire later (ARE resets it on return).
            self.env.system_app.reset_wait_for_notification_timeout()
            self.env.waiting_for_notification = False
        self.log.append(lambda seq: NotificationItem(seq=seq, notification=record))

    def _publish_clock(self) -> None:
        if self.log.closed:
            return
        state = self.clock_state()
        self._last_clock_publish = self.clock.wall()
        self.log.append(lambda seq: ClockItem(seq=seq, clock=state))

    def _conclude(self) -> None:
        if self._concluded:
            return
        self._concluded = True
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


def build_scenario(
    source: str | os.PathLike[str] | Scenario,
    *,
    import_mode: scenarios.ImportMode | str = scenarios.ImportMode.AUTO,
    oracle: bool = False,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    judge: JudgeOptions | None = None,
) -> tuple[Scenario, Sandbox]:
    """The initialised scenario of `source`, built inside a new sandbox, and that sandbox (for
    `Simulation.load(scenario, sandbox=...)`). It creates no event-loop object, so that a
    server can build an untrusted scenario in a worker thread: the sandbox's context variable
    follows the thread's copied context, so the guard covers the import there too. `judge`:
    a benchmark import is judged by it (`areasync.bridge.scenarios`)."""
    _discover_registered(source)
    sandbox = Sandbox(max_file_bytes=max_file_bytes)
    try:
        with sandbox.loading(_scenario_file(source)):
            scenario = scenarios.load(source, import_mode=import_mode, oracle=oracle, judge=judge)
            sandbox.adopt(scenario.apps or [])
    except BaseException:
        sandbox.release()  # what ARE created for a scenario that did not load
        raise
    return scenario, sandbox


def _discover_registered(source: object) -> None:
    if isinstance(source, str) and not _scenario_file(source) and not source.startswith("{"):
        # A registered id: ARE's registry discovers its scenarios by importing every module
        # of its own (trusted code, which opens files such as /dev/null), once per process.
        scenarios.registered_ids()


def _scenario_file(source: object) -> list[str]:
    """The JSON file `source` names, if it does (`scenarios.load` reads it in the sandbox)."""
    if isinstance(source, os.PathLike) or (
        isinstance(source, str) and source.endswith(".json") and not source.lstrip().startswith("{")
    ):
        return [os.fspath(source)]
    return []


def _out_of_time(budget: float) -> Callable[[], bool]:
    """True once `budget` wall seconds from now have passed."""
    deadline = time.perf_counter() + budget
    return lambda: time.perf_counter() > deadline
