"""`JudgedSimulation`: a session scored by Gaia2's LLM judge, whose calls never stall the loop.

Why: a benchmark-imported scenario built with a judge (`areasync.bridge.judge`) calls its LLM
from ARE's synchronous code: a turn's condition in a tick, and `scenario.validate` when the
session ends. Everything that can reach that code here - the driver's steps, controls that
tick (`jump`, `next_event`, `tick`), anything that can end the session (`stop`, leaving the
context) and the other commands, for good measure - runs through
`areasync.bridge.offload.bridged`, so that each LLM call is awaited in a worker thread (under
the server's limiter of concurrent judge calls) while the event loop serves everything else;
the session's lane stays held meanwhile, as ARE's environment stays paused while its judge
runs. The service runs the session's whole task through `bridge` too (`Session.run`: the
validation of a session that fails).

When the judge's LLM fails at the end of a turn (inside a tick), ARE's judge raises out of the
tick; ARE's own runner would then lose its environment thread. Here the session ends there,
failed, and its validation is the one ARE gives when its judge raises on the last turn (not a
success, the exception saying which judge failed and why, rationale "Exception"); a control
that ran the tick gets an error saying so. A failure on the last turn needs nothing special:
ARE's `validate_current_turn` catches it and returns that validation itself.

Durable and replayable: every answer of the judge's LLM (and every failure) is logged as the
session's `judge` record where it took effect (`areasync.simulation.answers`), so it is
journaled with the other records and gates what it caused; a replay (a restart, a fork) gives
the judge the recorded answers in order and asks the model only past them.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any, TypeVar

import anyio

from areasync.bridge.judge import JudgeError, JudgeLink, judge_link
from areasync.bridge.offload import bridged
from areasync.protocol.records import ClockState
from areasync.simulation import BadStateError, Simulation

T = TypeVar("T")


class JudgedSimulation(Simulation):
    """A `Simulation` of a scenario with Gaia2's judge (see the module docstring)."""

    def __init__(
        self, *args: Any, judge_limiter: anyio.CapacityLimiter | None = None, **options: Any
    ) -> None:
        super().__init__(*args, **options)
        link = judge_link(self.scenario)
        if link is None:
            raise ValueError(
                "JudgedSimulation needs a scenario with a judge: import it with a judge "
                "(areasync.bridge.scenarios.load(..., judge=JudgeOptions(...)))"
            )
        self.judge: JudgeLink = link
        link.answers = self.answers  # logged as records, given back on replay
        self.judge_limiter = judge_limiter

    async def bridge(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await `coro`, its judge calls awaited in worker threads (`bridged`)."""
        return await bridged(coro, limiter=self.judge_limiter)

    async def _judged(self, coro: Coroutine[Any, Any, T], action: str) -> T:
        """`bridge`, ending the session when the judge fails inside one of its ticks."""
        try:
            return await self.bridge(coro)
        except JudgeError as exc:
            self._judge_failed(exc)
            raise BadStateError(f"cannot {action}: the session ended, {exc}") from exc

    def _judge_failed(self, exc: JudgeError) -> None:
        if not self.ended:
            state = self.judge.judge.state  # the turn it was judging (ARE counts from 0)
            self.fail(
                f"{exc}, judging turn {state.turn_idx + 1} of {state.nb_turns} (ARE's judge "
                "raised at the end of that turn; the session ends there)"
            )

    def _validate(self) -> dict[str, Any]:
        if self.judge.failure is not None:
            # It failed at a turn's end: ARE's verdict is that failure; asking again would
            # only wait on the failed endpoint once more.
            return self.judge.failed_validation()
        return super()._validate()

    # -- everything that may reach the judge, bridged ----------------------------------------

    async def _drive(self) -> None:
        try:
            await self.bridge(super()._drive())
        except JudgeError as exc:
            self._judge_failed(exc)

    async def jump(
        self, *, to: float | None = None, by: float | None = None, inclusive: bool = True
    ) -> ClockState:
        return await self._judged(super().jump(to=to, by=by, inclusive=inclusive), "jump")

    async def next_event(self) -> ClockState:
        return await self._judged(super().next_event(), "jump to the next event")

    async def tick(self, n: int = 1) -> ClockState:
        return await self._judged(super().tick(n), "tick")

    async def stop(self, reason: str = "stopped by request") -> dict[str, Any] | None:
        return await self._judged(super().stop(reason), "stop")

    async def pause(self) -> ClockState:
        return await self._judged(super().pause(), "pause")

    async def resume(self) -> ClockState:
        return await self._judged(super().resume(), "resume")

    async def call_tool(
        self, name: str, args: dict[str, Any] | None = None, *, holder: str | None = None
    ) -> Any:
        return await self._judged(super().call_tool(name, args, holder=holder), "call a tool")

    async def send_user_message(self, content: str) -> Any:
        return await self._judged(super().send_user_message(content), "send a user message")

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        return await self.bridge(super().__aexit__(*exc_info))
