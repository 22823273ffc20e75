"""`AgentSide`: what an agent and its user do to a simulation (tool calls, the wait for a
notification, the user's messages), each an async command and its synchronous body (the body
is what a replay runs again, `areasync.simulation.replay`).
"""

from __future__ import annotations

from typing import Any

from areasync.bridge.offload import bridged
from areasync.bridge.records import to_plain
from areasync.bridge.tools import InvalidArgsError
from areasync.protocol.frames import NotificationItem
from areasync.protocol.records import WAIT_TOOL
from areasync.protocol.values import NotJSONError, json_copy
from areasync.simulation.controls import Controls
from areasync.simulation.driver import Driver
from areasync.simulation.errors import BadStateError, InvalidRequestError, ReplayDivergedError
from areasync.simulation.records import (
    Abandoned,
    CallTool,
    Exit,
    Fail,
    InputRecord,
    Interrupted,
    Judge,
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


class AgentSide(Controls, Driver):
    """A simulation's controls, driver, and the agent's side of it."""

    # -- the agent's side --------------------------------------------------------------------

    async def call_tool(
        self, name: str, args: dict[str, Any] | None = None, *, holder: str | None = None
    ) -> Any:
        """Call an ARE tool by public name between ticks; returns its JSON-typed result.

        `SystemApp__wait_for_notification` returns once a notification arrives or its timeout
        passes in simulated time; meanwhile the stream keeps flowing and, in fast mode, the
        caller's lease (if `holder` is given) ends.
        """
        if name == WAIT_TOOL:
            return await self._wait_for_notification(args, holder)
        if self.tools.offloads(name):
            # Its work may go to a worker thread (an agent's regular expression, matched with
            # a timeout) while the loop serves the other sessions: `areasync.bridge.patterns`.
            return await bridged(self._call_tool_in_lane(name, args))
        async with self._lane:  # as `_call_tool_in_lane`, without a coroutine of its own
            return self._call_tool(name, args)

    async def _call_tool_in_lane(self, name: str, args: dict[str, Any] | None) -> Any:
        async with self._lane:
            return self._call_tool(name, args)

    def _call_tool(self, name: str, args: dict[str, Any] | None) -> Any:
        self._require_live("call a tool")
        recorded = _recordable(name, args)
        arguments = dict(args or {})
        self._record(CallTool, tool=name, args=recorded)
        result = self.tools.call(name, arguments)
        self._after_command()
        return result

    async def _wait_for_notification(self, args: dict[str, Any] | None, holder: str | None) -> Any:
        # The lane for the call itself only: the wait is not a command, others go on.
        async with self._lane:
            seq, result = self._begin_waiting(args, holder)
        try:
            await self._notification_after(seq)
        finally:
            self._waiting_for_notification -= 1
        return result

    def _begin_waiting(self, args: dict[str, Any] | None, holder: str | None) -> tuple[int, Any]:
        """The wait's call (its caller then awaits a notification): the seq it began at and
        the tool's result."""
        self._require_live("call a tool")
        recorded = _recordable(WAIT_TOOL, args)
        arguments = dict(args or {})
        # `holder`: its lease ends inside the call (a replay does the same).
        self._record(CallTool, tool=WAIT_TOOL, args=recorded, holder=holder)
        seq = self.log.seq
        self._waiting_for_notification += 1
        try:
            result = self.tools.call(WAIT_TOOL, arguments)
            if holder is not None:
                self.end_lease(holder)
            self._after_command()
        except BaseException:
            self._waiting_for_notification -= 1
            raise
        return seq, result

    async def _notification_after(self, seq: int) -> None:
        """Return once a notification is on the stream after `seq`, or the run has ended."""
        position = seq
        while not self.ended:
            if self._notified_since(position):
                return
            position = self.log.seq
            await self.log.wait_beyond(position)

    def _notified_since(self, seq: int) -> bool:
        """Whether a notification is on the stream after `seq`."""
        return any(isinstance(item, NotificationItem) for item in self.log.items[seq:])

    async def send_user_message(self, content: str) -> Any:
        """The user writes to the agent (ARE's `AgentUserInterface.send_message_to_agent`)."""
        async with self._lane:
            return self._send_user_message(content)

    def _send_user_message(self, content: str) -> Any:
        self._require_live("send a user message")
        _check_text(content)
        aui = self.env.agent_user_interface
        if aui is None:
            raise BadStateError(
                "this scenario has no AgentUserInterface app, so there is no user to speak as"
            )
        self._record(SendUserMessage, content=content)
        result = aui.send_message_to_agent(content=content)
        self._after_command()
        return to_plain(result)

    # -- applying a record (a replay's: `areasync.simulation.replay`) -------------------------

    def apply_record(self, record: InputRecord, following: InputRecord | None = None) -> None:
        """Run what `record` logged through the live code (each command's synchronous body),
        logging it again. `following`, the record after it, says whether the control was
        interrupted (`Interrupted`: it stops where the live one stopped) or the call never
        returned (`Abandoned`: logged again, never run). Raises what the live command raised,
        and `ReplayDivergedError` for a record no command logs (a judge's answer nobody asked,
        steps or an interruption on their own)."""
        interrupted = following if isinstance(following, Interrupted) else None
        match record:
            case CallTool() if isinstance(following, Abandoned):
                self._record_again(record)
            case CallTool(tool=tool, args=args) if tool != WAIT_TOOL:
                self._call_tool(tool, args)
            case CallTool(args=args, holder=holder):
                self._apply_wait(args, holder)
            case SendUserMessage(content=content):
                self._send_user_message(content)
            case Jump():
                self._apply_jump(record, interrupted)
            case Tick(n=n):
                self._apply_tick(n, interrupted)
            case Pause():
                self._pause()
            case Resume():
                self._resume()
            case SetSpeed(speed=speed):
                self.set_speed(speed)
            case SetMode(mode=mode):
                self.set_mode(mode)
            case Stop(reason=reason):
                self._stop(reason)
            case Fail(reason=reason):
                self.fail(reason)
            case Exit():
                self.leave()
            case Restore():
                self._pause_restored()
            case LeaseBegin(holder=holder):
                self.begin_lease(holder)
            case LeaseEnd(holder=holder):
                self.end_lease(holder)
            case LeaseExpired(expired=holder):
                self._leases.end(holder)
                self._expire_lease(holder)
            case RealtimeTick(lag=lag, publish=publish):
                self._record(RealtimeTick, internal=True, lag=lag, publish=publish)
                self._tick_as_recorded(lag, publish)
                self._after_step()
            case Abandoned():
                self._record_again(record)
            case Judge(call=call):
                raise ReplayDivergedError(
                    f"the run's judge answered a call here ({call[:12]}), but the replay asked "
                    "it nothing: the replay diverged from the run it replays"
                )
            case Steps() | Interrupted():
                raise ReplayDivergedError(
                    f"a {record.source} record is not applied on its own (a replay runs the "
                    "steps it counts, an interruption with the control it ends)"
                )

    def _apply_wait(self, args: dict[str, Any], holder: str | None) -> None:
        seq, _result = self._begin_waiting(args, holder)
        # Its caller is gone: the wait ends with the next notification, or has already.
        if self._notified_since(seq) or self.ended:
            self._waiting_for_notification -= 1
        else:
            self._unawaited_waits += 1

    def _apply_jump(self, jump: Jump, interrupted: Interrupted | None) -> None:
        with self.clock.held():
            if jump.next_event:
                target, inclusive = self._next_event_target(), True
            else:
                inclusive = jump.inclusive
                target = self._jump_target(jump.to, jump.by, inclusive)
            if interrupted is None:
                self.engine.advance_to(target, inclusive=inclusive)
            else:
                fired = 0
                limit = interrupted.done

                def counted() -> bool:
                    nonlocal fired
                    fired += 1
                    return fired >= limit

                self.engine.advance_to(target, inclusive=inclusive, out_of_time=counted)
        self._end_applied_control(interrupted)

    def _apply_tick(self, n: int, interrupted: Interrupted | None) -> None:
        self._require_live("tick")
        self._record(Tick, n=n)
        with self.clock.held():
            self._ticks(n if interrupted is None else interrupted.done, lambda: False)
        self._end_applied_control(interrupted)

    def _end_applied_control(self, interrupted: Interrupted | None) -> None:
        if interrupted is not None:
            self._record_again(interrupted)
        self._after_control()


def _recordable(name: str, args: dict[str, Any] | None) -> dict[str, Any]:
    """The copy of a tool call's arguments its record keeps; `InvalidArgsError` (before
    anything is recorded or run) if they are not an object of JSON values a journal can hold
    and a replay give back unchanged (`areasync.protocol.values`)."""
    if args is None:
        return {}
    if not isinstance(args, dict):
        raise InvalidArgsError(f"arguments of {name} must be an object of named arguments")
    try:
        recorded: dict[str, Any] = json_copy(dict(args))
    except NotJSONError as exc:
        raise InvalidArgsError(f"the arguments of {name} cannot be taken: {exc}") from None
    return recorded


def _check_text(content: str) -> None:
    """`InvalidRequestError` unless a user's message is text a journal can hold."""
    try:
        json_copy(content)
    except NotJSONError as exc:
        raise InvalidRequestError(f"the user's message cannot be taken: {exc}") from None
