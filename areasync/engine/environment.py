"""What the engine needs from an environment, stated as a protocol.

The engine implements ARE's loop semantics on the virtual clock, but it does not import ARE:
it steps any object that offers these few members. `areasync.bridge.environment.AsyncEnvironment`
(ARE's Environment on the virtual clock) is the implementation the service uses; a test may
step a plain fake. Times cross this boundary as ARE's float seconds; the engine converts them to
the clock's integer microseconds.
"""

from __future__ import annotations

from typing import Protocol

from areasync.engine.clock import VirtualClock


class SteppableEnvironment(Protocol):
    """An environment the `Engine` can run one tick at a time (ARE's `Environment` surface)."""

    clock: VirtualClock
    # ARE's tick index: the engine sets it before each tick, as ARE's loops do.
    tick_count: int
    # True while an agent's `wait_for_notification` is on (ARE's own flag).
    waiting_for_notification: bool

    @property
    def start_time(self) -> float | None: ...

    @property
    def time_increment_in_seconds(self) -> float: ...

    @property
    def duration(self) -> float | None:
        """The scenario's length in simulated seconds; None when it has none."""

    @property
    def exit_when_no_events(self) -> bool: ...

    def tick(self) -> None:
        """One ARE tick at the clock's current time."""

    def get_event_queue_length(self) -> int: ...

    def begin_run(self) -> None:
        """The run starts: the environment is running and its first events are scheduled."""

    def run_loop_epilogue(self) -> None:
        """What ARE does when its event loop ends: final checks, final state, stop message."""

    def note_current_time(self) -> None:
        """The clock moved without a tick: record its time as the environment's current time."""

    def stop_requested(self) -> bool:
        """ARE asked to stop (StopEvent, `stop()`, a failed validation)."""

    def next_event_time(self) -> float | None:
        """When the head of the event queue is due; None when the queue is empty."""

    def wait_timeout_time(self) -> float | None:
        """When an agent's `wait_for_notification` times out; None when no wait is on."""

    def next_due_us(self) -> int | None:
        """The earlier of the two above, in the clock's microseconds (`to_us` of each); None
        when neither is set. One call for both: the engine asks at every step."""

    def next_step_due_us(self) -> int | None:
        """`next_due_us()` when a step of the queue-based loop would tick there: None when ARE
        asked to stop, when the run ends for want of events (`exit_when_no_events` and an empty
        queue), when nothing is due, or whenever the environment cannot tell in one call (the
        engine then asks the questions one by one). A fast step's one question."""

    def reset_wait_timeout(self) -> None:
        """The wait is over: forget its timeout."""

    def next_notification_time(self) -> float | None:
        """When the next undelivered notification is due; None when there is none."""

    def take_notifications_until(self, t: float) -> None:
        """Take every message delivered up to `t` off the agent's queue, as ARE's agents do."""
