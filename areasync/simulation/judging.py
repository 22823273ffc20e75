"""`Judge`: the part of a simulation scored by Gaia2's LLM judge that keeps the loop free.

Why: a benchmark-imported scenario built with a judge (`areasync.bridge.judge.llm`) calls its LLM
from ARE's synchronous code: a turn's condition in a tick, and `scenario.validate` when the
session ends. A simulation given a `Judge` (`Simulation.load(..., judge=Judge.of(scenario))`)
runs everything that can reach that code - the driver's task, controls that tick (`jump`,
`next_event`, `tick`), anything that can end the session (`stop`, leaving the context) and the
other commands, for good measure - through `areasync.bridge.offload.bridged`, so that each LLM
call is awaited in a worker thread (under the server's limiter of concurrent judge calls) while
the event loop serves everything else; the session's lane stays held meanwhile, as ARE's
environment stays paused while its judge runs. The service runs the session's whole task
through `bridge` too (the validation of a session that fails).

When the judge's LLM fails at the end of a turn (inside a tick), ARE's judge raises out of the
tick; ARE's own runner would then lose its environment thread. Here the session ends there,
failed, and its validation is the one ARE gives when its judge raises on the last turn (not a
success, the exception saying which judge failed and why, rationale "Exception": `verdict`); a
command that ran the tick gets an error saying so. A failure on the last turn needs nothing
special: ARE's `validate_current_turn` catches it and returns that validation itself.

Durable and replayable: every answer of the judge's LLM (and every failure) is logged as the
session's `judge` record where it took effect (`areasync.simulation.answers`), so it is
journaled with the other records and gates what it caused; a replay (a restart, a fork) gives
the judge the recorded answers in order and asks the model only past them.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from functools import wraps
from typing import Any, ParamSpec, TypeVar

import anyio

from areasync.bridge.environment import Scenario
from areasync.bridge.judge.llm import JudgeError, JudgeLink, judge_link
from areasync.bridge.offload import bridged
from areasync.protocol.records import Validation
from areasync.simulation.answers import RecordedAnswers
from areasync.simulation.errors import BadStateError

T = TypeVar("T")
P = ParamSpec("P")


class Judge:
    """A scenario's LLM judge, as a part of its simulation (module docstring)."""

    def __init__(self, link: JudgeLink, limiter: anyio.CapacityLimiter | None = None) -> None:
        self.link = link
        self.limiter = limiter
        self._fail: Callable[[str], None] | None = None

    @classmethod
    def of(cls, scenario: Scenario, limiter: anyio.CapacityLimiter | None = None) -> Judge:
        """The judge `scenario` was imported with; ValueError if it has none."""
        link = judge_link(scenario)
        if link is None:
            raise ValueError(
                "a judged simulation needs a scenario with a judge: import it with a judge "
                "(areasync.bridge.scenarios.loading.load(..., judge=JudgeOptions(...)))"
            )
        return cls(link, limiter)

    def attach(self, answers: RecordedAnswers, fail: Callable[[str], None]) -> None:
        """Judge the session whose answers are logged in `answers` and that `fail` ends."""
        self.link.answers = answers  # logged as records, given back on replay
        self._fail = fail

    async def bridge(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await `coro`, its judge calls awaited in worker threads (`bridged`)."""
        return await bridged(coro, limiter=self.limiter)

    async def drive(self, coro: Coroutine[Any, Any, None]) -> None:
        """The driver's task, bridged; a judge failure inside a tick ends the session."""
        try:
            await self.bridge(coro)
        except JudgeError as exc:
            self._failed(exc)

    def guarded(
        self, command: Callable[P, Coroutine[Any, Any, T]], action: str
    ) -> Callable[P, Coroutine[Any, Any, T]]:
        """`command`, bridged, ending the session when the judge fails inside one of its ticks
        (its caller then gets `BadStateError`, saying so)."""

        @wraps(command)
        async def judged(*args: P.args, **kwargs: P.kwargs) -> T:
            try:
                return await self.bridge(command(*args, **kwargs))
            except JudgeError as exc:
                self._failed(exc)
                raise BadStateError(f"cannot {action}: the session ended, {exc}") from exc

        return judged

    def verdict(self) -> Validation | None:
        """The validation if the judge failed at a turn's end (ARE's verdict is that failure:
        asking again would only wait on the failed endpoint once more); else None."""
        if self.link.failure is not None:
            return self.link.failed_validation()
        return None

    def _failed(self, exc: JudgeError) -> None:
        assert self._fail is not None, "a judge judges the simulation it is attached to"
        state = self.link.judge.state  # the turn it was judging (ARE counts from 0)
        self._fail(
            f"{exc}, judging turn {state.turn_idx + 1} of {state.nb_turns} (ARE's judge "
            "raised at the end of that turn; the session ends there)"
        )
