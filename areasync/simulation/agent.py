"""`AgentSide`: what an agent and its user do to a simulation (tool calls, the wait for a
notification, the user's messages), each an async command and its synchronous body (the body
is what a replay runs again, `areasync.simulation.replay`).

A notification ends the agent's wait for one: so the agent's side is what puts notifications
on the stream (ARE's notification listener) and what ARE asks to begin a wait (its wait
handler), the wait's timeout then a due item the driver fires.
"""

from __future__ import annotations

from typing import Any

from areasync.bridge.convert import to_plain
from areasync.bridge.environment import AsyncEnvironment
from areasync.bridge.offload import bridged
from areasync.bridge.tools import InvalidArgsError, ToolBox
from areasync.engine.stream import StreamLog
from areasync.protocol.frames import NotificationItem, StreamItem
from areasync.protocol.records import WAIT_TOOL, NotificationRecord
from areasync.protocol.values import NotJSONError, json_copy
from areasync.simulation.ending import Ending
from areasync.simulation.errors import BadStateError, InvalidRequestError
from areasync.simulation.input_records import CallTool, SendUserMessage
from areasync.simulation.lane import CommandLane
from areasync.simulation.lease_keeper import LeaseKeeper
from areasync.simulation.record_book import RecordBook
from areasync.simulation.wakeup import Wakeup


class AgentSide:
    """The agent's side of a simulation (module docstring)."""

    def __init__(
        self,
        env: AsyncEnvironment,
        tools: ToolBox,
        lane: CommandLane,
        log: StreamLog[StreamItem],
        *,
        book: RecordBook,
        keeper: LeaseKeeper,
        ending: Ending,
        wakeup: Wakeup,
    ) -> None:
        self._env = env
        self._tools = tools
        self._lane = lane
        self._log = log
        self._record = book.record
        self._keeper = keeper
        self._ending = ending
        self._require_live = ending.require_live
        self._wakeup = wakeup
        # Waits for a notification under way, and those of them made by a replayed tool call,
        # whose caller is not awaiting them (`apply_wait`).
        self._waiting_for_notification = 0
        self._unawaited_waits = 0
        env.notification_listeners.append(self.on_notification)
        env.wait_handler = self.begin_wait

    def _after_command(self) -> None:
        self._ending.after_step()
        self._wakeup.wake()

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
        if self._tools.offloads(name):
            # Its work may go to a worker thread (an agent's regular expression, matched with
            # a timeout) while the loop serves the other sessions: `areasync.bridge.patterns`.
            return await bridged(self._call_tool_in_lane(name, args))
        async with self._lane:  # as `_call_tool_in_lane`, without a coroutine of its own
            return self.call_now(name, args)

    async def _call_tool_in_lane(self, name: str, args: dict[str, Any] | None) -> Any:
        async with self._lane:
            return self.call_now(name, args)

    def call_now(self, name: str, args: dict[str, Any] | None) -> Any:
        self._require_live("call a tool")
        recorded = _recordable(name, args)
        arguments = dict(args or {})
        self._record(CallTool, tool=name, args=recorded)
        result = self._tools.call(name, arguments)
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
        seq = self._log.seq
        self._waiting_for_notification += 1
        try:
            result = self._tools.call(WAIT_TOOL, arguments)
            if holder is not None:
                self._keeper.end(holder)
            self._after_command()
        except BaseException:
            self._waiting_for_notification -= 1
            raise
        return seq, result

    async def _notification_after(self, seq: int) -> None:
        """Return once a notification is on the stream after `seq`, or the run has ended."""
        position = seq
        log = self._log
        while not self._ending.ended:
            if self._notified_since(position):
                return
            position = log.seq
            await log.wait_beyond(position)

    def _notified_since(self, seq: int) -> bool:
        """Whether a notification is on the stream after `seq`."""
        return any(isinstance(item, NotificationItem) for item in self._log.items[seq:])

    async def send_user_message(self, content: str) -> Any:
        """The user writes to the agent (ARE's `AgentUserInterface.send_message_to_agent`)."""
        async with self._lane:
            return self.send_now(content)

    def send_now(self, content: str) -> Any:
        self._require_live("send a user message")
        _check_text(content)
        aui = self._env.agent_user_interface
        if aui is None:
            raise BadStateError(
                "this scenario has no AgentUserInterface app, so there is no user to speak as"
            )
        self._record(SendUserMessage, content=content)
        result = aui.send_message_to_agent(content=content)
        self._after_command()
        return to_plain(result)

    # -- a replay's, and ARE's calls -------------------------------------------------------

    def apply_wait(self, args: dict[str, Any], holder: str | None) -> None:
        """A replayed wait for a notification: its caller is gone, so the wait ends with the
        next notification, or has already."""
        seq, _result = self._begin_waiting(args, holder)
        if self._notified_since(seq) or self._ending.ended:
            self._waiting_for_notification -= 1
        else:
            self._unawaited_waits += 1

    def begin_wait(self) -> None:
        """ARE's SystemApp set the wait's timeout (its wait handler): the driver treats it as a
        due item. Nothing blocks."""
        self._env.waiting_for_notification = True
        self._wakeup.wake()

    def on_notification(self, record: NotificationRecord) -> None:
        """ARE's notification listener: the notification goes on the stream, and ends a wait."""
        if self._waiting_for_notification:
            env = self._env
            # The wait is over: a stale timeout must not fire later (ARE resets it on return).
            env.reset_wait_timeout()
            env.waiting_for_notification = False
            if self._unawaited_waits:
                self._waiting_for_notification -= self._unawaited_waits
                self._unawaited_waits = 0
        self._log.append_with(notification_item, record)

    def revive(self) -> None:
        """A thawed copy's waits: their callers are gone, so all of them are unawaited (as a
        replay counts them)."""
        self._unawaited_waits = self._waiting_for_notification


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


def notification_item(seq: int, record: NotificationRecord) -> NotificationItem:
    return NotificationItem(seq=seq, notification=record)
