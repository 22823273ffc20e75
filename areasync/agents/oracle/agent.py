"""The oracle agent: a perfect agent that does what the scenario's oracle says, when it says.

ARE scenarios carry their expected agent behaviour as ``OracleEvent``s whose times are relative
to their dependencies; only running the scenario tells when each one happens. So the plan comes
from ARE's own oracle run, done in-process on the virtual clock (``Simulation.load(...,
oracle=True)``, the same engine as a fast session): every completed AGENT event whose id is an
OracleEvent's is one action, with its time, tool and resolved arguments. The agent then connects
to a live session (which runs the scenario *without* oracle mode) and makes those tool calls at
those simulated times, idling in between.

Two ways to get to an action's time (``pace``):

- ``jump`` (the default when a controller is at hand): with a second connection as
  ``controller``, ``jump`` the clock to the action's time while the agent holds its turn.
  Exact, works in every mode (realtime: see below). Needs a token valid for the controller role (the
  server's admin token is). In ARE's oracle run an oracle action is one of the items of its
  tick, ordered among them; a live agent acts between ticks. So an action that ARE ran before
  everything else due at its time (:attr:`OracleAction.before_tick`) is made after an
  *exclusive* jump, ``jump{to, inclusive: false}``: the clock rests at exactly the action's
  time with nothing due then run yet, the call is logged at that time, and the items of its
  tick run after it. That is what Gaia2's end-of-turn ordering needs: the turn trigger is a
  condition checked every tick that counts the agent's ``send_message_to_user``, and in ARE's
  oracle run the message comes first in its tick, so the check sees it in that same tick. Any
  other action is made after an ordinary (inclusive) jump, once its tick has run.
- ``wait`` (the agent-only way): ARE's ``SystemApp__wait_for_notification(timeout)``, repeated
  until the clock reaches the time (a notification may end a wait early). Exact to ARE's
  one-second resolution of that timeout; needs the scenario to have a SystemApp. It cannot
  place an action ahead of the other items of its tick: a wait ends only once the tick at its
  timeout has run (ARE's ``wait_for_next_notification`` runs the events due at exactly the
  timeout before it returns, and so does the session), and the agent role has no other way to
  move time. So a Gaia2 turn condition checked in the same tick as the end-of-turn message
  sees it one tick late, and the next turn starts one increment later than in ARE's oracle
  run - as it would for any agent of ARE's own that waits. Only a controller's exclusive jump
  (pace ``jump``) can do better.

Realtime. In a realtime session the clock flows on between the agent reading it and its
controller's jump arriving, so "jump to the action's time" may name a time already passed (the
server refuses jumps backwards). With pace ``jump`` the agent therefore pauses the clock around
each action: pause (the reply is the exact, stopped clock), jump there if the action's time is
still ahead - otherwise act at once, late by what the clock ran past it -, make the call, resume.
The action is then logged at exactly its time, as in fast and manual sessions, and the clock
flows on from there (an exclusive jump's owed items run as soon as it resumes). A session
someone else paused stays paused: the agent jumps and acts in it and does not resume it. With
pace ``wait`` nothing changes: the waits end on the session's own ticks.

What differs from ARE's own oracle log, and why. When an *agent* calls a tool, ARE logs every
app call the tool makes (``forward_email`` first logs the ``get_email_by_id`` it does), and it
logs the agent's waits; when its *oracle run* executes the same action, it logs one event
(``Event.execute`` disables the nested ones). The agent records the ids of both kinds of extra
events as it goes (:attr:`OracleReport.extra_event_ids`); :func:`comparable_log` is the session's
log without them, which must equal ARE's oracle log in the conformance normal form.

Ids generated when the scenario was built differ between the oracle run and the live session:
the agent maps them (``areasync.agents.oracle.ids``). The pacing decisions (which jump or wait
next) are made without I/O in ``areasync.agents.oracle.pacing``.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from typing import Any

from areasync.agents.oracle.ids import EventAligner, IdMap
from areasync.agents.oracle.pacing import JumpPacing, WaitPacing
from areasync.agents.oracle.plan import OracleAction, OraclePlan, oracle_plan
from areasync.client import (
    BadStateError,
    Client,
    ForbiddenError,
    SessionEndedError,
    ToolError,
)
from areasync.protocol import WAIT_TOOL, EventItem, EventRecord

__all__ = [
    "OracleAction",
    "OraclePlan",
    "OracleReport",
    "Pace",
    "comparable_log",
    "oracle_plan",
    "run_oracle_agent",
]

logger = logging.getLogger("areasync.agents.oracle.agent")


class Pace(enum.StrEnum):
    """How the oracle agent gets the clock to an action's time (see the module docstring)."""

    WAIT = "wait"
    JUMP = "jump"


@dataclass
class CallOutcome:
    action: OracleAction
    args: dict[str, Any]  # as sent, ids translated
    time: float  # session time (relative) when the call was made
    result: Any = None
    error: str | None = None


@dataclass
class OracleReport:
    """What the oracle agent did: each call with its outcome, and the waits it needed."""

    session_id: str
    scenario_id: str
    pace: Pace
    calls: list[CallOutcome] = field(default_factory=list)
    waits: int = 0
    unexpected_failures: list[str] = field(default_factory=list)
    # Events of the session's log that ARE's oracle run has no counterpart for: the agent's
    # waits, and app calls nested inside its tool calls (see `comparable_log`).
    extra_event_ids: set[str] = field(default_factory=set)

    @property
    def ok(self) -> bool:
        return not self.unexpected_failures

    def to_json(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "scenario_id": self.scenario_id,
            "pace": self.pace.value,
            "ok": self.ok,
            "waits": self.waits,
            "unexpected_failures": self.unexpected_failures,
            "calls": [
                {
                    "time": call.time,
                    "tool": call.action.tool,
                    "args": call.args,
                    "result": call.result,
                    "error": call.error,
                }
                for call in self.calls
            ],
        }


# -- running --------------------------------------------------------------------------------


async def run_oracle_agent(
    client: Client,
    plan: OraclePlan,
    *,
    pace: Pace | str | None = None,
    controller: Client | None = None,
    observer: Client | None = None,
    finish: bool = True,
) -> OracleReport:
    """Perform ``plan``'s actions on the session ``client`` is attached to (as an agent).

    ``pace`` defaults to ``jump`` when a ``controller`` (a client of the same session in the
    controller role) is given, else ``wait``. ``observer`` (or ``controller``) lets the agent
    read the apps' initial state, to learn the ids a scenario generated when it was built; the
    agent role itself may not read state. With ``finish``, after the last action the agent
    lets the clock reach the end of the oracle run (so everything the oracle run logged has
    happened), then idles.
    """
    pace = _chosen_pace(pace, controller)
    can_wait = await _can_wait(client, plan, pace)
    report = OracleReport(session_id=client.session_id, scenario_id=plan.scenario_id, pace=pace)
    # The agent role may not read the apps' state; an observer or controller may.
    ids = await _ids_from_initial_state(plan, observer or controller or client)
    run = _OracleRun(client, controller, report)
    aligner = EventAligner(plan, ids)
    for action in plan.actions:
        async with run.held():
            if not await run.reach(action.time, before_tick=action.before_tick):
                report.unexpected_failures.append(
                    f"the session ended at {client.now - run.start:g} s, before the oracle's "
                    f"{action.tool} at {action.time:g} s"
                )
                return report
            aligner.catch_up(client)
            outcome = await _perform(client, action, ids, report, run.start)
        logger.info("%7.1f s  %s -> %s", outcome.time, action.tool, outcome.error or "ok")
    if finish:
        if pace is Pace.JUMP or can_wait:
            async with run.held():
                await run.reach(plan.end_time)
        if client.ended is None:
            await client.idle()
    return report


def _chosen_pace(pace: Pace | str | None, controller: Client | None) -> Pace:
    chosen = Pace(pace) if pace is not None else (Pace.JUMP if controller else Pace.WAIT)
    if chosen is Pace.JUMP and controller is None:
        raise ValueError("pace='jump' needs a controller client of the same session")
    return chosen


async def _can_wait(client: Client, plan: OraclePlan, pace: Pace) -> bool:
    """Pace wait and the session has ARE's wait tool (SystemApp's, which not every scenario
    has); ValueError if the plan needs it and it has none."""
    can_wait = pace is Pace.WAIT and WAIT_TOOL in {tool.name for tool in await client.list_tools()}
    if pace is Pace.WAIT and plan.actions and not can_wait:
        raise ValueError(
            f"the session has no {WAIT_TOOL} tool (its scenario has no SystemApp), so an "
            "agent cannot wait for a time: use pace='jump' with a controller"
        )
    return can_wait


async def _ids_from_initial_state(plan: OraclePlan, reader: Client) -> IdMap:
    ids = IdMap()
    try:
        ids.learn(plan.initial_state, await reader.get_state())
    except ForbiddenError:
        logger.info("no role that may read the state: learning ids from events only")
    return ids


class _OracleRun:
    """The I/O around the pacing decisions (`pacing.py`): jumps through the controller or
    waits of the agent's own, and, in a realtime session with a controller, the clock paused
    around each action (see "Realtime" in the module docstring)."""

    def __init__(self, client: Client, controller: Client | None, report: OracleReport) -> None:
        self.client = client
        self.controller = controller
        self.report = report
        self.start = client.clock.start_time
        self.jumps = JumpPacing()
        self.waits = WaitPacing()
        # Realtime with a controller: the clock flows between reading it and jumping.
        self.hold = report.pace is Pace.JUMP and client.clock.mode == "realtime"

    async def reach(self, relative: float, *, before_tick: bool = False) -> bool:
        """Get the session's clock to ``relative``: after the items due then, or (pace jump,
        ``before_tick``) just before them; False if the session ended first."""
        target = self.start + relative
        if self.report.pace is Pace.JUMP:
            return await self._jump_to(target, before_tick)
        return await self._wait_until(target)

    async def _jump_to(self, target: float, before_tick: bool) -> bool:
        client, controller = self.client, self.controller
        assert controller is not None
        while (
            jump := self.jumps.next_jump(target, before_tick=before_tick, seen=client.now)
        ) is not None:
            if client.ended is not None:
                return False
            try:
                clock = await controller.jump(to=jump.to, inclusive=jump.inclusive)
            except SessionEndedError:
                return False
            arrived = self.jumps.landed(jump, clock.time, target)
            # Replies and stream items share one ordered connection: once the agent's own
            # ping comes back, its stream holds everything the jump produced.
            await client.ping()
            if arrived:
                break
        return client.ended is None

    async def _wait_until(self, target: float) -> bool:
        client = self.client
        while (timeout := self.waits.next_wait(target, client.now)) is not None:
            if client.ended is not None:
                return False
            before = client.seq
            try:
                await client.wait_for_notification(timeout)
            except SessionEndedError:
                return False
            self.report.waits += 1
            waits = self.waits.wait_events(_agent_events(client, before))
            self.report.extra_event_ids.update(waits)
        return client.ended is None

    @asynccontextmanager
    async def held(self) -> AsyncIterator[None]:
        """In a realtime session with a controller: the clock paused for the duration (then
        resumed, if this agent paused it); elsewhere nothing."""
        if not self.hold:
            yield
            return
        controller = self.controller
        assert controller is not None
        paused_here = False
        try:
            self.jumps.held((await controller.pause()).time)
            paused_here = True
        except SessionEndedError:
            pass  # `reach` finds the session ended and reports it
        except BadStateError:
            # Not running: paused by someone else (it stays paused), or ending. The clock
            # stands still either way; the controller's view of it is exact once its own
            # reply comes back.
            await controller.ping()
            self.jumps.held(controller.clock.time)
        try:
            yield
        finally:
            resumed = paused_here and self.client.ended is None
            self.jumps.unheld(resumed=resumed)
            if resumed:
                with suppress(BadStateError, SessionEndedError):
                    await controller.resume()


async def _perform(
    client: Client, action: OracleAction, ids: IdMap, report: OracleReport, start: float
) -> CallOutcome:
    """Make one oracle action's tool call now; record its outcome in ``report``."""
    args = ids.translate(action.args)
    outcome = CallOutcome(action=action, args=args, time=client.now - start)
    before = client.seq
    try:
        outcome.result = await client.call_tool(action.tool, args)
    except ToolError as exc:
        outcome.error = str(exc)
        if not action.failed:
            report.unexpected_failures.append(f"{action.tool} at {action.time:g} s: {exc}")
    else:
        if action.failed:
            report.unexpected_failures.append(
                f"{action.tool} at {action.time:g} s succeeded; it failed in the oracle run"
            )
        ids.learn(action.return_value, outcome.result)
    report.extra_event_ids.update(_nested(_agent_events(client, before), action))
    report.calls.append(outcome)
    return outcome


def _agent_events(client: Client, since: int) -> list[EventRecord]:
    return [
        item.event
        for item in client.items_since(since)
        if isinstance(item, EventItem) and item.event.event_type == "AGENT"
    ]


def _nested(records: list[EventRecord], action: OracleAction) -> list[str]:
    """Ids of the events ARE logged for app calls nested inside the action's own tool call.

    A tool call runs synchronously on the server, so its events are contiguous on the stream
    and end with the call's own event; the ones just before it, at the same time, were made by
    the tool itself (``forward_email`` reads the email with ``get_email_by_id`` first).
    """
    for index in range(len(records) - 1, -1, -1):
        own = records[index]
        if (own.app, own.function) == (action.app, action.function):
            nested = []
            for record in reversed(records[:index]):
                if record.time != own.time:
                    break
                nested.append(record.event_id)
            return nested
    return []


# -- comparing ------------------------------------------------------------------------------


def comparable_log(env: Any, report: OracleReport, ndigits: int = 1) -> list[Any]:
    """The session's event log in conformance normal form, without what only an agent's run
    has: the agent's waits and the app calls nested inside its tool calls.

    ARE logs both when an agent calls tools (``AppTool`` runs the app method with events on)
    and neither when its oracle run executes the same actions (``Event.execute`` runs them
    with events disabled: one event per action). Everything else must match ARE's oracle run
    exactly: compare the result with ``normal_form.normalized_log`` of ARE's run.
    """
    from areasync.conformance.normal_form import normalize_events

    events = [
        event
        for event in env.event_log.list_view()
        if str(event.event_id) not in report.extra_event_ids
    ]
    return normalize_events(events, env.start_time or 0.0, ndigits)
