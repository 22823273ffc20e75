"""`SyncEnvironment`: ARE's blocking Environment API, on the virtual clock, without threads.

Existing synchronous ARE code (scripts, ARE's own tests, RL loops) constructs an `Environment`,
calls `run()`/`start()`, sleeps, calls tools, `pause()`s, `join()`s. `SyncEnvironment` keeps that
API and its semantics but replaces the background thread with the same `Engine` the async
service uses, run synchronously whenever the caller could observe progress:

* `config.queue_based_loop=True` (oracle runs): ARE's queue-based loop, run straight through on
  `join()` (or when the virtual wall moves), as fast as the CPU allows;
* otherwise ARE's time-based loop: one tick per `time_increment_in_seconds`, paced by a
  `VirtualWall` - a wall clock that moves only when someone calls `VirtualWall.sleep()` (or
  `join()` needs it to). Where ARE makes a test sleep one real second per tick, this one returns
  at once with every tick that second would have run.

Because the wall is virtual, `time.sleep` in code written for ARE must be routed to
`VirtualWall.sleep` (ARE's conformance suite does so in its conftest); nothing here sleeps.
"""

from __future__ import annotations

from collections.abc import Callable
from weakref import WeakSet

from are.simulation.environment import EnvironmentConfig
from are.simulation.notification_system import BaseNotificationSystem
from are.simulation.types import CompletedEvent, EnvironmentState, EnvironmentType

from areasync.bridge.environment import AsyncEnvironment
from areasync.protocol.frames import Mode

# A join() that would need this many ticks without the scenario ending is treated as endless.
MAX_JOIN_TICKS = 10_000_000


class VirtualWall:
    """A wall clock that moves only by `sleep()`; moving it runs the environments bound to it."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = start
        self._envs: WeakSet[SyncEnvironment] = WeakSet()

    def now(self) -> float:
        return self._now

    def time(self) -> float:
        return self._now

    def bind(self, env: SyncEnvironment) -> None:
        self._envs.add(env)

    def sleep(self, seconds: float) -> None:
        """Let `seconds` of wall time pass: every bound environment runs what falls due."""
        if seconds < 0:
            raise ValueError("sleep length must be non-negative")
        self.advance_to(self._now + seconds)

    def advance_to(self, wall: float) -> None:
        # Move in steps, so that environments interleave as their threads would have.
        while True:
            running = [env for env in list(self._envs) if env.is_background_running()]
            due = [env.next_wall_due() for env in running]
            due_times = [t for t in due if t is not None and t <= wall]
            if not due_times:
                break
            step_to = max(self._now, min(due_times))
            self._now = step_to
            for env in running:
                env.run_pending()
        self._now = max(self._now, wall)
        for env in list(self._envs):
            env.run_pending()


DEFAULT_WALL = VirtualWall()


class SyncEnvironment(AsyncEnvironment):
    """Drop-in for ARE's `Environment` (same constructor and methods), with no thread."""

    def __init__(
        self,
        config: EnvironmentConfig | None = None,
        environment_type: EnvironmentType = EnvironmentType.UNKNOWN,
        notification_system: BaseNotificationSystem | None = None,
        add_event_to_agent_log: Callable[[CompletedEvent], None] | None = None,
        *,
        wall: VirtualWall | None = None,
    ) -> None:
        config = EnvironmentConfig() if config is None else config
        self.wall = DEFAULT_WALL if wall is None else wall
        super().__init__(
            config,
            environment_type,
            notification_system,
            add_event_to_agent_log,
            mode=Mode.FAST if config.queue_based_loop else Mode.REALTIME,
            speed=float(config.time_increment_in_seconds),
            wall=self.wall.now,
        )
        self.wall.bind(self)

    # -- what the background thread would have done -----------------------------------------

    def is_background_running(self) -> bool:
        return self.engine.started and not self.engine.finished

    def next_wall_due(self) -> float | None:
        """Wall time at which the loop next has work (None: only a state change can help)."""
        if not self.is_background_running():
            return None
        if self.engine.stopping and self._stops_at_once():
            return self.wall.now()
        if self.clock.paused:
            return None
        if self.queue_based_loop:
            return self.wall.now()
        delay = self.clock.wall_delay_until(self.engine.next_grid_us())
        return None if delay is None else self.wall.now() + delay

    def run_pending(self) -> None:
        """Run every step whose time has come on the virtual wall."""
        engine = self.engine
        if not self.is_background_running():
            return
        if engine.stopping and self._stops_at_once():
            engine.finish()
            return
        if self.clock.paused:
            return
        if self.queue_based_loop:
            self._run_queue_loop()
            return
        while not engine.finished and not self.clock.paused:
            delay = self.clock.wall_delay_until(engine.next_grid_us())
            if delay is None or delay > 0:
                break
            # Each tick happens at its own time, as if the thread had woken on schedule, or at
            # the latest time already read if that is later (time never goes back).
            tick_us = max(engine.next_grid_us(), self.clock.reported_us)
            self.clock.anchor(tick_us, self.wall.now() - (delay or 0.0))
            engine.step_grid()

    def _stops_at_once(self) -> bool:
        """Whether a stop request ends the loop now, rather than at its next wake-up.

        ARE's time-based thread spends its life in `time.sleep(1)` between ticks and checks the
        stop flag only when it wakes: after `stop()` (or a StopEvent, or a failed validation
        during a tick) its epilogue - final validation checks, the ENVIRONMENT_STOP message,
        the final time - happens at the next grid time, without a tick there. `step_grid`
        does exactly that when the wall reaches that time. The queue-based loop never sleeps,
        so it stops at once; and a paused clock would leave ARE's thread spinning on the pause
        flag forever, so there the stop takes effect at once rather than never.
        """
        return self.queue_based_loop or self.clock.paused

    def _run_queue_loop(self) -> None:
        # ARE's queue loop: until the queue is empty, whatever exit_when_no_events says.
        engine = self.engine
        while not engine.finished:
            if engine.stopping or len(self.event_queue) == 0:
                engine.finish()
                return
            if self.clock.paused:
                return
            engine.step_fast()

    # -- ARE's API ---------------------------------------------------------------------------

    def start(self, debug: bool = False) -> None:
        if self.state == EnvironmentState.RUNNING:
            return
        super().start(debug)
        if not self.queue_based_loop:
            # ARE's thread runs its first tick as soon as it starts.
            self.run_pending()

    def join(self) -> None:
        """Run the loop to its end, moving the virtual wall as far as it needs to."""
        if not self.engine.started:
            raise ValueError("Event loop not started")
        if self.queue_based_loop:
            self.run_pending()
            if not self.engine.finished and self.clock.paused:
                raise RuntimeError(
                    "join() on a paused environment would wait forever: nothing else can resume "
                    "it without threads; call resume() first"
                )
            return
        for _ in range(MAX_JOIN_TICKS):
            if self.engine.finished:
                return
            due = self.next_wall_due()
            if due is None:
                raise RuntimeError(
                    "join() would wait forever: the environment is paused, and without a "
                    "thread nothing else can resume it; call resume() or stop() first"
                )
            self.wall.advance_to(due)
        raise RuntimeError(
            f"join() ran {MAX_JOIN_TICKS} ticks without the scenario ending: set a duration, "
            "exit_when_no_events=True, or call stop()"
        )
