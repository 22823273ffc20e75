"""How a simulation ends: as one value (`EndState`), and the part that ends it (`Ending`).

A run ends in exactly one way, decided by the first thing that ends it; the `ended` stream
item reports ARE's final state, the validation (`Verdict`: the scenario's, or its judge's)
and, for every ending but running to its end, a reason.
"""

from __future__ import annotations

import enum

import anyio

from areasync.bridge.environment import AsyncEnvironment, Scenario
from areasync.bridge.sandbox.audit import Sandbox
from areasync.engine.clock import VirtualClock
from areasync.engine.stream import StreamLog
from areasync.protocol.frames import EndedItem, StreamItem
from areasync.protocol.records import Validation
from areasync.simulation.errors import BadStateError
from areasync.simulation.input_records import Fail
from areasync.simulation.judging import Judge
from areasync.simulation.leases import Leases
from areasync.simulation.publisher import Publisher
from areasync.simulation.record_book import RecordBook
from areasync.simulation.wakeup import Wakeup


class EndState(enum.Enum):
    """Whether, and how, a simulation has ended."""

    RUNNING = "running"  # not ended yet
    RAN_TO_END = "ran_to_end"  # on its own: its duration passed, no event was left, ARE stopped
    STOPPED = "stopped"  # a stop was requested (`Simulation.stop`)
    LEFT = "left"  # its `async with` block exited while it still ran
    LEASE_EXPIRED = "lease_expired"  # an agent stayed busy past its lease (`LeasePolicy.END`)
    TOO_LATE = "too_late"  # a realtime tick ran later than `max_lag` (`LagPolicy.STRICT`)
    FAILED = "failed"  # `Simulation.fail`: the scenario's own code raised, a judge failed

    @property
    def ended(self) -> bool:
        return self is not EndState.RUNNING

    @property
    def failed(self) -> bool:
        """Whether ARE's environment ends in its FAILED state (otherwise STOPPED or its own)."""
        return self in (EndState.TOO_LATE, EndState.FAILED)


class Verdict:
    """A run's validation: its judge's failure if its judge failed at a turn's end, else the
    scenario's own `validate` (user code: what it raises is the validation's exception)."""

    def __init__(
        self,
        scenario: Scenario,
        env: AsyncEnvironment,
        sandbox: Sandbox,
        judge: Judge | None = None,
    ) -> None:
        self._scenario = scenario
        self._env = env
        self._sandbox = sandbox
        self._judge = judge

    def __call__(self) -> Validation:
        if self._judge is not None:
            failed = self._judge.verdict()
            if failed is not None:
                return failed
        try:
            with self._sandbox.entered():  # also reached outside the lane (`fail`, exit)
                return _validation_of(self._scenario.validate(self._env))
        except Exception as exc:  # a scenario's validate() is user code
            return Validation(exception=f"{type(exc).__name__}: {exc}")


def _validation_of(result: object) -> Validation:
    """What a scenario's `validate` returned (ARE's `ScenarioValidationResult`) as a
    `Validation`. Its fields are user data: a `success` that is not a bool (or None) or a
    `rationale` that is not a string is the scenario's error (`TypeError`), never a frame that
    clients cannot decode."""
    success = getattr(result, "success", None)
    if success is not None and not isinstance(success, bool):
        raise TypeError(
            f"validate() returned success of type {type(success).__name__}: it must be a bool "
            "or None (ARE's ScenarioValidationResult)"
        )
    rationale = getattr(result, "rationale", None)
    if rationale is not None and not isinstance(rationale, str):
        raise TypeError(
            f"validate() returned rationale of type {type(rationale).__name__}: it must be a "
            "str or None (ARE's ScenarioValidationResult)"
        )
    exception = getattr(result, "exception", None)
    return Validation(
        success=success,
        exception=None if exception is None else f"{type(exception).__name__}: {exception}",
        rationale=rationale,
    )


class Ending:
    """Ends the run (the first ending asked for is the one it gets) and reports it."""

    def __init__(
        self,
        env: AsyncEnvironment,
        clock: VirtualClock,
        log: StreamLog[StreamItem],
        *,
        book: RecordBook,
        leases: Leases,
        publisher: Publisher,
        wakeup: Wakeup,
        verdict: Verdict,
        drain_notifications: bool,
    ) -> None:
        self._env = env
        self._engine = env.engine
        self._clock = clock
        self._log = log
        self._book = book
        self._leases = leases
        self._publisher = publisher
        self._wakeup = wakeup
        self._verdict = verdict
        self._drain = drain_notifications
        self.state = EndState.RUNNING
        # Why the run ended early (a stop, a lease policy, a failure); None when it ran out.
        self.reason: str | None = None
        self.validation: Validation | None = None
        # How the first request to end it asked for it to end, until the run has ended.
        self._asked: EndState | None = None
        self.done = anyio.Event()

    @property
    def ended(self) -> bool:
        return self.state.ended

    def require_live(self, action: str) -> None:
        """`BadStateError` if the run has ended: `action` cannot be done."""
        if self.state.ended:
            raise BadStateError(
                f"cannot {action}: the simulation has ended ({self._publisher.state})"
            )

    def after_step(self) -> None:
        """What follows every engine step and command: notifications drained, the run
        concluded once the engine has finished."""
        if self._drain and self._env.notification_system.message_queue.messages.queue:
            self._engine.drain_notifications()
        if self._engine.finished:
            self._conclude()

    def fail(self, reason: str) -> None:
        """End the run now in ARE's FAILED state (`Simulation.fail`)."""
        if self.ended:
            return
        self._book.record(Fail, reason=reason)
        self.end_now(EndState.FAILED, reason)

    def end_now(self, how: EndState, reason: str) -> None:
        """End the run now, `how` (the first ending asked for is the one it gets)."""
        if self.ended:
            return
        if self._asked is None:
            self._asked, self.reason = how, reason
        engine = self._engine
        if not engine.finished:
            self._env.stop_run(failed=how.failed)
            engine.finish()
        self.after_step()

    def _conclude(self) -> None:
        if self.ended:
            return
        self._book.flush_steps()
        self.state = EndState.RAN_TO_END if self._asked is None else self._asked
        self._clock.freeze()  # an ended session's time is where it ended (every way it ends)
        self._leases.clear()
        self.validation = validation = self._verdict()
        self._publisher.publish_clock()
        state = self._publisher.state
        reason = self.reason
        self._log.append(
            lambda seq: EndedItem(seq=seq, state=state, validation=validation, reason=reason)
        )
        self._log.close()
        self.done.set()
        self._wakeup.wake()

    def revive(self) -> None:
        """A thawed copy's own end event (set if it has ended)."""
        self.done = anyio.Event()
        if self.ended:
            self.done.set()
