"""`Simulation`: an ARE scenario run by an asyncio task on the virtual clock, made of parts.

It holds its parts and delegates to them; each part is a class of its own, given the few
collaborators it works with (never the whole simulation):

- `RecordBook` (`record_book`): the records a replay consumes, as they are logged;
- `Publisher` (`publisher`): the events and clock changes it puts on its stream;
- `Ending` (`ending`): how the run ends, and its validation (`Verdict`);
- `LeaseKeeper` (`lease_keeper`; `leases`, their bookkeeping): the agents' busy leases (fast mode);
- `Driver` (`driver`): the asyncio task that runs the engine;
- `Controls` (`controls`): the clock controls;
- `AgentSide` (`agent`): tool calls, the wait for a notification, the user's messages;
- `Judge` (`judging`), if it is given one: its LLM judge, whose calls go to worker threads.

`apply_record` is the one way to apply a record, live or replayed (`replay`, `snapshots`,
the judge's recorded answers); `revive` makes a thawed copy a session of its own.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Sequence
from types import TracebackType
from typing import Any, Self, Unpack

from areasync.bridge.budget import CallBudget
from areasync.bridge.convert import to_plain
from areasync.bridge.environment import AsyncEnvironment, Scenario, session_environment
from areasync.bridge.operator_files import DEFAULT_MAX_SCENARIO_BYTES
from areasync.bridge.sandbox.audit import Sandbox
from areasync.bridge.state_copy import with_attributes
from areasync.bridge.tools import ToolBox
from areasync.engine.clock import WallSleep, to_s
from areasync.engine.stream import StreamLog
from areasync.policies import DEFAULT_MAX_FILE_BYTES, LagPolicy
from areasync.protocol.frames import EventItem, ImportMode, Mode, NotificationItem, StreamItem
from areasync.protocol.records import (
    WAIT_TOOL,
    ClockState,
    EventRecord,
    NotificationRecord,
    ToolInfo,
    Validation,
)
from areasync.simulation.agent import AgentSide
from areasync.simulation.answers import RecordedAnswers
from areasync.simulation.controls import Controls
from areasync.simulation.driver import Driver
from areasync.simulation.ending import Ending, EndState, Verdict
from areasync.simulation.errors import InvalidRequestError, ReplayDivergedError
from areasync.simulation.input_records import (
    Abandoned,
    CallTool,
    Creation,
    Exit,
    Fail,
    InputRecord,
    Interrupted,
    Jump,
    LeaseBegin,
    LeaseEnd,
    LeaseExpired,
    Pause,
    RealtimeTick,
    Restore,
    Resume,
    SendUserMessage,
    SetMode,
    SetSpeed,
    Steps,
    Stop,
    Tick,
)
from areasync.simulation.input_records import (
    Judge as JudgeRecord,
)
from areasync.simulation.judging import Judge
from areasync.simulation.lane import CommandLane
from areasync.simulation.lease_keeper import LeaseKeeper
from areasync.simulation.leases import Leases
from areasync.simulation.loading import Loadable, load_in, sandboxed_loading
from areasync.simulation.options import SimulationOptions, SimulationSettings
from areasync.simulation.publisher import Publisher
from areasync.simulation.record_book import RecordBook
from areasync.simulation.replay import replay_into
from areasync.simulation.stops import StopAnnouncements
from areasync.simulation.wakeup import Wakeup


class Simulation:
    """An ARE scenario on a virtual clock, driven by an asyncio task (see `areasync.simulation`)."""

    def __init__(
        self,
        scenario: Scenario,
        env: AsyncEnvironment,
        *,
        sandbox: Sandbox | None = None,
        judge: Judge | None = None,
        **options: Unpack[SimulationOptions],
    ) -> None:
        settings = self.settings = SimulationSettings.of(options)
        self.scenario = scenario
        self.env = env
        if sandbox is None:
            sandbox = Sandbox()
            sandbox.adopt(scenario.apps or [])
        # The host files the session's code may touch (`areasync.bridge.sandbox.audit`): everything
        # that holds the lane runs inside it.
        self.sandbox = sandbox
        sandbox.max_files_created = settings.max_files_created
        self.engine = env.engine
        clock = self.clock = env.clock
        # What one tool call or event may cost: every one of them runs within it.
        env.budget = CallBudget(settings.tool_budget, settings.max_listing)
        self.tools = ToolBox(env, env.budget)
        log = self.log = StreamLog[StreamItem]()
        self._lane = lane = CommandLane(sandbox, clock)
        lane.charges_time = settings.lag_policy is LagPolicy.CATCH_UP
        # Stops on their way (announced, not yet run): long controls give way to them.
        self.stops = StopAnnouncements()
        # Rebuilt from a journal by `Simulation.replay` (a realtime one comes back paused).
        self.restored = False
        # How it was made (`Simulation.load` sets it): with `records`, all a replay needs.
        self.creation: Creation | None = None
        # The parts (module docstring).
        self._book = book = RecordBook(clock, log)
        self._publisher = publisher = Publisher(env, clock, log)
        self._wakeup = wakeup = Wakeup()
        leases = Leases(settings.lease_timeout)
        self._ending = ending = Ending(
            env,
            clock,
            log,
            book=book,
            leases=leases,
            publisher=publisher,
            wakeup=wakeup,
            verdict=Verdict(scenario, env, sandbox, judge),
            drain_notifications=settings.drain_notifications,
        )
        self._keeper = keeper = LeaseKeeper(
            leases,
            clock,
            book=book,
            wakeup=wakeup,
            policy=settings.lease_policy,
            ending=ending,
        )
        self._driver = Driver(
            env,
            clock,
            lane,
            book=book,
            keeper=keeper,
            ending=ending,
            publisher=publisher,
            wakeup=wakeup,
            settings=settings,
            judge=judge,
        )
        self._controls = Controls(
            env,
            clock,
            lane,
            book=book,
            ending=ending,
            publisher=publisher,
            wakeup=wakeup,
            stops=self.stops,
            settings=settings,
        )
        self._agent = agent = AgentSide(
            env, self.tools, lane, log, book=book, keeper=keeper, ending=ending, wakeup=wakeup
        )
        self.answers = RecordedAnswers(book, keeper)  # a judge's answers, as records (`answers`)
        self.judge = judge
        if judge is not None:
            judge.attach(self.answers, ending.fail)
        # The agent's tool call, bound once (the hot path: no call of the simulation's own in
        # between); a judged one goes through its judge.
        self.call_tool = (
            agent.call_tool if judge is None else judge.guarded(agent.call_tool, "call a tool")
        )
        env.event_listeners.append(publisher.event_listener())
        env.wake = wakeup.wake

    # -- reading -----------------------------------------------------------------------------

    @property
    def ended(self) -> bool:
        return self._ending.state.ended

    @property
    def end_state(self) -> EndState:
        return self._ending.state

    @property
    def end_reason(self) -> str | None:
        """Why the run ended early (a stop, a lease policy, a failure); None when it ran out."""
        return self._ending.reason

    @property
    def validation(self) -> Validation | None:
        return self._ending.validation

    @property
    def state(self) -> str:
        return self._publisher.state

    @property
    def now(self) -> float:
        return self.clock.now()

    @property
    def lag(self) -> float:
        """How late the last realtime tick ran (wall seconds)."""
        return self._publisher.lag

    def next_due(self) -> float | None:
        """The simulated time (seconds since the epoch) of the next scheduled event or
        timeout, None when nothing is scheduled."""
        due = self.engine.next_due_us()
        return None if due is None else to_s(due)

    @property
    def lane(self) -> CommandLane:
        """The session's ordered command lane: hold it (`async with sim.lane:`) to run
        synchronous methods such as `set_speed` in turn with the session's other commands."""
        return self._lane

    @property
    def wall_sleep(self) -> WallSleep | None:
        """How the driver waits wall seconds of the clock's wall (`load`'s `sleep`); None: on
        the event loop's clock."""
        return self._driver.wall_sleep

    @wall_sleep.setter
    def wall_sleep(self, sleep: WallSleep | None) -> None:
        self._driver.wall_sleep = sleep

    def clock_state(self, *, peek: bool = False) -> ClockState:
        """The clock as the stream reports it (`Publisher.clock_state`; `peek`: without
        binding it, for listings)."""
        return self._publisher.clock_state(peek=peek)

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

    # -- records -----------------------------------------------------------------------------

    @property
    def records(self) -> list[InputRecord]:
        """What a replay consumes: the inputs, in order with the engine steps the driver ran
        between them (fast steps counted, realtime ticks one by one; see `replay`)."""
        return self._book.records

    @property
    def inputs(self) -> list[InputRecord]:
        """The external inputs alone."""
        return self._book.inputs

    @property
    def record_listeners(self) -> list[Callable[[InputRecord], None]]:
        """Called with each record as it joins `records` (a journal persists them as they come)."""
        return self._book.listeners

    @property
    def pending_steps(self) -> int:
        """The fast steps run since the last record, not logged yet (`flush_records` logs them)."""
        return self._book.pending_steps

    def flush_records(self) -> list[InputRecord]:
        """Every record so far, the fast steps run since the last one included (a journal
        calls this before it persists what the run has done)."""
        self._book.flush_steps()
        return self._book.records

    def log_answer(self, call: str, answer: Any = None, failure: str | None = None) -> None:
        """Log an answer the session got from outside (its judge's: `RecordedAnswers`)."""
        self._book.log_answer(call, answer, failure)

    # -- leases (fast mode) -------------------------------------------------------------------

    def begin_lease(self, holder: str) -> None:
        """`holder` is busy: in fast mode, time stands still until it ends its lease (or the
        lease times out)."""
        self._keeper.begin(holder)

    def end_lease(self, holder: str) -> None:
        """`holder` is idle; once no lease is held, a fast session jumps to the next due item."""
        self._keeper.end(holder)

    @property
    def leases(self) -> dict[str, float]:
        """Holder -> wall deadline of every lease held."""
        return self._keeper.leases.deadlines()

    def busy(self, holder: str = "agent") -> Any:
        """A lease for the duration of an `async with` block."""
        return self._keeper.busy(holder)

    # -- running -----------------------------------------------------------------------------

    async def run(self) -> Validation | None:
        """Run to the scenario's end (or wait for it, inside `async with`). Returns validation."""
        return await self._driver.run()

    async def __aenter__(self) -> Self:
        await self._driver.enter()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        return await self._driver.exit(exc_type, exc, tb)

    def leave(self) -> None:
        """End the run because its `async with` block exited while it still ran."""
        self._driver.leave()

    def fail(self, reason: str) -> None:
        """End the run now in ARE's FAILED state, e.g. because the scenario's own code raised
        out of a tick (ARE's thread would die there and leave the environment RUNNING)."""
        self._ending.fail(reason)

    def replay_fast_step(self) -> None:
        """One fast step and what follows it, as the driver runs it (a replay runs as many as
        a `steps` record counts); raises what the scenario's code raised, as the live step."""
        self._driver.fast_step()

    # -- the controls (`Controls`) and the user's side (`AgentSide`) ---------------------------

    def _judged(self, command: Any, action: str) -> Any:
        return command if self.judge is None else self.judge.guarded(command, action)

    async def pause(self) -> ClockState:
        return await self._judged(self._controls.pause, "pause")()

    async def resume(self) -> ClockState:
        return await self._judged(self._controls.resume, "resume")()

    async def jump(
        self, *, to: float | None = None, by: float | None = None, inclusive: bool = True
    ) -> ClockState:
        """Move simulated time forward to `to` or by `by` seconds (`Controls.jump`)."""
        jump = self._judged(self._controls.jump, "jump")
        return await jump(to=to, by=by, inclusive=inclusive)

    async def next_event(self) -> ClockState:
        """Jump to the next due item (event or wait timeout) and fire it."""
        return await self._judged(self._controls.next_event, "jump to the next event")()

    async def tick(self, n: int = 1) -> ClockState:
        """Run `n` ticks of ARE's time-based loop (`Controls.tick`)."""
        return await self._judged(self._controls.tick, "tick")(n)

    def set_speed(self, speed: float) -> ClockState:
        """Change the realtime speed; synchronous: call it holding `lane`."""
        return self._controls.set_speed(speed)

    def set_mode(self, mode: Mode | str) -> ClockState:
        """Change the clock's mode; synchronous, as `set_speed`."""
        return self._controls.set_mode(mode)

    async def stop(self, reason: str = "stopped by request") -> Validation | None:
        """End the session now (ARE's `stop`); returns the validation result (`Controls.stop`)."""
        return await self._judged(self._controls.stop, "stop")(reason)

    def announce_stop(self) -> Callable[[], None]:
        """A stop is on its way: long controls give way to it from their next yield on
        (`Controls.announce_stop`). Returns the withdrawal (idempotent)."""
        return self._controls.announce_stop()

    @property
    def stop_announced(self) -> bool:
        """True while a stop is on its way (see `announce_stop`)."""
        return self._controls.stop_announced

    async def send_user_message(self, content: str) -> Any:
        """The user writes to the agent (ARE's `AgentUserInterface.send_message_to_agent`)."""
        send = self._judged(self._agent.send_user_message, "send a user message")
        return await send(content)

    def mark_restored(self) -> None:
        """The session was rebuilt from its records (`areasync.simulation.replay`): it is
        `restored`, and a realtime one still running comes back paused."""
        self.restored = True
        self._controls.pause_if_restored_running()

    # -- applying a record (a replay's: `areasync.simulation.replay`) -------------------------

    def apply_record(self, record: InputRecord, following: InputRecord | None = None) -> None:
        """Run what `record` logged through the live code (each command's synchronous body),
        logging it again. `following`, the record after it, says whether the control was
        interrupted (`Interrupted`: it stops where the live one stopped) or the call never
        returned (`Abandoned`: logged again, never run). Raises what the live command raised,
        and `ReplayDivergedError` for a record no command logs (a judge's answer nobody asked,
        steps or an interruption on their own)."""
        interrupted = following if isinstance(following, Interrupted) else None
        controls, agent, keeper = self._controls, self._agent, self._keeper
        match record:
            case CallTool() if isinstance(following, Abandoned):
                self._book.record_again(record)
            case CallTool(tool=tool, args=args) if tool != WAIT_TOOL:
                agent.call_now(tool, args)
            case CallTool(args=args, holder=holder):
                agent.apply_wait(args, holder)
            case SendUserMessage(content=content):
                agent.send_now(content)
            case Jump():
                controls.apply_jump(record, interrupted)
            case Tick(n=n):
                controls.apply_tick(n, interrupted)
            case Pause():
                controls.pause_now()
            case Resume():
                controls.resume_now()
            case SetSpeed(speed=speed):
                controls.set_speed(speed)
            case SetMode(mode=mode):
                controls.set_mode(mode)
            case Stop(reason=reason):
                controls.stop_now(reason)
            case Fail(reason=reason):
                self._ending.fail(reason)
            case Exit():
                self._driver.leave()
            case Restore():
                controls.pause_restored()
            case LeaseBegin(holder=holder):
                keeper.begin(holder)
            case LeaseEnd(holder=holder):
                keeper.end(holder)
            case LeaseExpired(expired=holder):
                keeper.leases.end(holder)
                keeper.expire(holder)
            case RealtimeTick(lag=lag, publish=publish):
                self._driver.tick_as_recorded(lag, publish)
                self._ending.after_step()
            case Abandoned():
                self._book.record_again(record)
            case JudgeRecord(call=call):
                raise ReplayDivergedError(
                    f"the run's judge answered a call here ({call[:12]}), but the replay asked "
                    "it nothing: the replay diverged from the run it replays"
                )
            case Steps() | Interrupted():
                raise ReplayDivergedError(
                    f"a {record.source} record is not applied on its own (a replay runs the "
                    "steps it counts, an interruption with the control it ends)"
                )

    # -- copies (`areasync.simulation.snapshots`) ----------------------------------------------

    def copy_reductions(self) -> list[tuple[object, tuple[Any, ...]]]:
        """How `state_copy.freeze` stores this session's parts: without what a copy must not
        take along (the service's record and stream listeners, the driver's task group, the
        lane's waiters); `revive` makes the rest the copy's own."""
        return [
            (self._book, with_attributes(self._book, listeners=[])),
            (self._driver, with_attributes(self._driver, _task_group=None)),
            (self._lane, self._lane.copy_reduction()),
            (self.log, with_attributes(self.log, listeners=[], _changed=None)),
        ]

    def revive(self) -> None:
        """Make a thawed copy a session of its own: fresh wake-up and end events, the clock
        held once as after a load (the driver lets it go), lease deadlines counted from now,
        waits whose callers are gone counted as unawaited (as a replay counts them), its
        sandbox's roots the new directories its file systems were written into."""
        self._wakeup.revive()
        self._ending.revive()
        self._driver.revive()
        self.log.revive()
        self.clock.revive()
        self._keeper.revive()
        self._agent.revive()
        self.sandbox.revive(self.scenario.apps or [])

    # -- making one --------------------------------------------------------------------------

    @classmethod
    def load(
        cls,
        source: Loadable,
        *,
        mode: Mode | str = Mode.FAST,
        oracle: bool = False,
        speed: float = 1.0,
        exit_when_no_events: bool | None = None,
        wall: Callable[[], float] = time.monotonic,
        sleep: WallSleep | None = None,
        judge: Judge | None = None,
        import_mode: ImportMode | str = ImportMode.AUTO,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        max_scenario_bytes: int = DEFAULT_MAX_SCENARIO_BYTES,
        sandbox: Sandbox | None = None,
        seed: int | None = None,
        created_at: float | None = None,
        **options: Unpack[SimulationOptions],
    ) -> Simulation:
        """Load a scenario (registered id, JSON path, JSON text or Scenario) ready to run.

        `oracle=True` runs the scenario's oracle events as the agent's actions (ARE's oracle
        mode); by default the run then ends when no event is left, as ARE's does.
        `import_mode` says how a JSON scenario is imported: `auto` (default), `benchmark`
        (Gaia2's runner: turns rewired so that a live agent reaches each one) or `plain`
        (ARE's plain import); see `areasync.bridge.scenarios.loading`. The session's code runs in a
        sandbox (`areasync.bridge.sandbox.audit`) from the moment the scenario is built: its apps
        may touch only its file-system apps' files, and read none larger than `max_file_bytes`;
        a scenario file (the operator's) may be up to `max_scenario_bytes`.
        A Scenario built by `build_scenario` comes with its `sandbox`: pass it on (it is
        cleaned up if the simulation cannot be made). `judge`: the scenario's LLM judge, a part
        of the simulation (`Judge.of(scenario)`, `areasync.simulation.judging`), for a scenario
        imported with one. `options`: the session's tuning (`SimulationOptions`).

        `seed` (a random one if None) makes every id the session's code draws, and
        `created_at` (the wall's epoch seconds now if None) every wall-clock read it makes
        while loading (`areasync.bridge.determinism`): with them and its records, the run can
        be replayed exactly (`sim.creation`, `sim.records`, `Simulation.replay`). A sandbox
        from `build_scenario` brings the seed and time it was built with.

        `wall` is what realtime pacing and lease deadlines read; the driver waits on the event
        loop's clock, unless `sleep` says how to wait seconds of an injected `wall`.
        """
        with sandboxed_loading(
            source,
            sandbox=sandbox,
            max_file_bytes=max_file_bytes,
            seed=seed,
            created_at=created_at,
        ) as box:
            scenario = load_in(
                box,
                source,
                import_mode=import_mode,
                oracle=oracle,
                max_scenario_bytes=max_scenario_bytes,
            )
            env = session_environment(
                scenario,
                oracle=oracle,
                exit_when_no_events=exit_when_no_events,
                mode=mode,
                speed=speed,
                wall=wall,
            )
            assert box.entropy is not None  # `sandboxed_loading` gives every sandbox one
            box.entropy.clock = env.clock
            sim = cls(scenario, env, sandbox=box, judge=judge, **options)
            sim.wall_sleep = sleep
            sim.creation = Creation.of(
                box.entropy,
                mode=Mode(mode),
                speed=speed,
                oracle=oracle,
                exit_when_no_events=exit_when_no_events,
                import_mode=ImportMode(import_mode),
                max_file_bytes=box.max_file_bytes,
                settings=sim.settings,
            )
            env.start_scenario(scenario)
            sim._publisher.publish_clock()
            return sim

    @classmethod
    def replay(
        cls,
        source: Loadable,
        creation: Creation,
        records: Sequence[InputRecord],
        *,
        until_seq: int | None = None,
        until_time: float | None = None,
        wall: Callable[[], float] = time.monotonic,
        sandbox: Sandbox | None = None,
        judge: Judge | None = None,
    ) -> Simulation:
        """The session that `creation` and `records` describe, rebuilt from `source` (the same
        scenario: its registered id, JSON, or a fresh, uninitialised Scenario), positioned where
        the original was after its last record, or at the cut (`until_seq`: the first boundary
        where the stream has reached that seq; `until_time`: nothing past that simulated time)
        to fork it. Applied synchronously, with no wall clock (`areasync.simulation.replay`);
        raises `ReplayDivergedError` if the rebuilt session logs anything differently. It comes
        back `restored`, a realtime one paused; drive it as any other (`async with`, `run`)."""
        sim = cls.load(source, wall=wall, sandbox=sandbox, judge=judge, **creation.load_arguments())
        replay_into(sim, records, until_seq=until_seq, until_time=until_time)
        return sim
