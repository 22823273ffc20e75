"""A live session, seen by ARE's default agent as the in-process environment it was built for.

ARE's ``ScenarioRunner`` hands its agent four things from its ``Environment``: the tools
(``scenario.get_tools()``, wrapped in ``AppToolAdapter``), the notification system (whose
queue the agent polls with ``get_by_timestamp(now)``), the time manager (``time()``), and
``pause`` / ``resume_with_offset`` around every model generation (ARE's
``simulated_generation_time_mode``). Here each one is backed by the session:

* :class:`SessionAppTool` is ARE's ``AppTool`` of the scenario's own app method, so
  ``AppToolAdapter`` gives the model exactly the name, description and inputs it gives
  in-process; calling it binds the arguments against the app method's signature (the same
  ``TypeError`` as in-process, nothing sent), sends the call over the socket, and turns the
  result or failure back into what the app would have returned or raised (``results.py``);
* :class:`SessionMessageQueue` is ARE's ``MessageQueue``, filled from the session's stream
  (its ``notification`` items, in order) each time the agent reads it, and given ARE's
  ``ENVIRONMENT_STOP`` once the session has ended or the connection is lost for good;
* :class:`SessionTimeManager` reads the session's simulated time as the stream last told it
  (exact in fast mode whenever the agent has its turn);
* :class:`SessionEnvironment` carries them, plus ``pause`` / ``resume_with_offset``: while the
  model generates, simulated time must not run on. In a fast session the agent's busy lease
  already freezes it: the server takes the lease whenever it hands the agent a notification or
  a tool result, and the agent gives it back only by going idle. A realtime session's clock
  flows with the wall, so there a controller pauses it around each generation. ARE then moves
  time on by the generation's simulated duration (``fixed``: a set number of seconds;
  ``measured``: what the engine reports, which ARE 1.2.0's engines never do, so 0): with a
  controller, a ``jump{by}`` does that, the tick it ends on run as ARE's ``tick()`` does.

Threads. ARE's agent is synchronous: it runs in a worker thread (``anyio.to_thread``) and every
call into the session is handed to the event loop that owns the client
(``anyio.from_thread``), so the socket's reader keeps receiving while the model thinks.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import anyio
import anyio.from_thread
from are.simulation.agents.agent_log import BaseAgentLog
from are.simulation.notification_system import (
    Message,
    MessageQueue,
    MessageType,
    VerboseNotificationSystem,
)
from are.simulation.time_manager import TimeManager
from are.simulation.tool_utils import AppTool

from areasync.agents.are.results import app_error_text, rebuild, return_type
from areasync.client import (
    AreasyncError,
    BadStateError,
    Client,
    SessionEndedError,
    ToolError,
)
from areasync.protocol import EndedItem, NotificationItem, StreamItem

logger = logging.getLogger("areasync.agents.are")


class SessionToolError(Exception):
    """A tool call that failed in the session; its text is the app's own exception text."""


@dataclass
class ToolCall:
    """One tool call the agent made: sent to the session, or refused before (``error``)."""

    time: float  # simulated seconds after the scenario's start, when it was sent
    tool: str
    args: dict[str, Any]
    error: str | None = None


@dataclass
class SessionLink:
    """The agent's side of the session: the clients, and what the agent did through them.

    Methods without ``async`` are called from the agent's worker thread and block it (never
    the event loop); the coroutines they hand to the loop are the private ones.
    """

    client: Client
    controller: Client | None = None
    calls: list[ToolCall] = field(default_factory=list)
    jumps: float = 0.0  # simulated seconds of generation time added by jumps
    unapplied: float = 0.0  # generation time that could not be added (no controller)
    lost: str | None = None  # why the session can no longer be reached, if it cannot
    _seq: int = 0  # stream items already read into the agent's queue
    _generating: bool = False
    _paused_here: bool = False
    on_warning: Callable[[str], None] | None = None
    _warned: set[str] = field(default_factory=set)

    @property
    def start(self) -> float:
        return self.client.clock.start_time

    def now(self) -> float:
        return self.client.now

    # -- the stream ---------------------------------------------------------------------

    def pull(self) -> list[StreamItem]:
        """The stream items received since the last pull, in order."""
        return list(anyio.from_thread.run_sync(self._pull))

    def _pull(self) -> list[StreamItem]:
        items = self.client.items_since(self._seq)
        self._seq = self.client.seq
        return items

    def wait_for_news(self) -> None:
        """Go idle (in a fast session time runs on to whatever is due next) until a
        notification or the session's end arrives after what the agent has read."""
        anyio.from_thread.run(self._wait_for_news)

    async def _wait_for_news(self) -> None:
        seq = self._seq
        client = self.client
        if client.ended is None:
            try:
                await client.idle(seen=seq)  # news not yet in the agent's queue keeps its turn
            except SessionEndedError:
                pass
            except AreasyncError as exc:
                self.lost = str(exc)
                return
        try:
            try:
                stream = client.stream(since=seq)
            except ValueError:  # the client holds the stream from a later seq (no since=0)
                stream = client.stream()
            async for item in stream:
                if item.seq > seq and isinstance(item, NotificationItem | EndedItem):
                    return
        except AreasyncError as exc:
            self.lost = str(exc)
        if client.closed and client.ended is None and self.lost is None:
            self.lost = "the connection to the session closed"

    # -- tools --------------------------------------------------------------------------

    def call_tool(self, name: str, args: dict[str, Any]) -> Any:
        call = ToolCall(time=self.now() - self.start, tool=name, args=args)
        self.calls.append(call)
        try:
            return anyio.from_thread.run(self.client.call_tool, name, args)
        except ToolError as exc:
            call.error = app_error_text(name, exc.message)
            raise SessionToolError(call.error) from None
        except SessionEndedError as exc:
            call.error = str(exc)
            raise SessionToolError(f"the session has ended: {exc}") from None
        except AreasyncError as exc:
            call.error = str(exc)
            if self.client.closed:
                self.lost = str(exc)
            raise SessionToolError(str(exc)) from None

    def refused(self, name: str, args: dict[str, Any], error: str) -> None:
        """A call whose arguments did not bind to the app method (nothing was sent)."""
        self.calls.append(ToolCall(time=self.now() - self.start, tool=name, args=args, error=error))

    # -- generation time ----------------------------------------------------------------

    def pause(self) -> None:
        """ARE's ``env.pause()`` before a generation: hold simulated time still."""
        if self._generating:
            return
        self._generating = True
        if self.controller is not None and self.client.clock.mode == "realtime":
            self._paused_here = anyio.from_thread.run(self._pause)

    async def _pause(self) -> bool:
        assert self.controller is not None
        try:
            await self.controller.pause()
        except (BadStateError, SessionEndedError):
            return False  # paused by someone else (it stays so), or over
        return True

    def resume_with_offset(self, offset: float) -> None:
        """ARE's ``env.resume_with_offset(offset)`` after a generation: move simulated time on
        by ``offset`` and let it run again; nothing unless :meth:`pause` came first (as ARE)."""
        if not self._generating:
            return
        self._generating = False
        if offset > 0:
            if self.controller is None:
                self.unapplied += offset
                self.warn(
                    "generation time",
                    f"the model's generation time ({offset:g} simulated s) is not added to the "
                    "session's clock: only a controller may move it (pass a controller or "
                    "admin token)",
                )
            else:
                anyio.from_thread.run(self._jump, offset)
        if self._paused_here:
            self._paused_here = False
            anyio.from_thread.run(self._resume)

    async def _jump(self, offset: float) -> None:
        assert self.controller is not None
        try:
            await self.controller.jump(by=offset)
            # Replies and stream items share one ordered connection: once the agent's own ping
            # is back, its stream holds what the jump did.
            await self.client.ping()
            self.jumps += offset
        except (BadStateError, SessionEndedError):
            pass

    async def _resume(self) -> None:
        assert self.controller is not None
        with contextlib.suppress(BadStateError, SessionEndedError):
            await self.controller.resume()

    def warn(self, key: str, message: str) -> None:
        """Say ``message`` once per ``key``."""
        if key in self._warned:
            return
        self._warned.add(key)
        if self.on_warning is not None:
            self.on_warning(message)
        else:
            logger.warning(message)


class SessionMessageQueue(MessageQueue):
    """ARE's message queue, filled from the session's stream whenever the agent reads it."""

    def __init__(self, link: SessionLink) -> None:
        super().__init__()
        self._link = link
        self._stopped = False

    def sync(self) -> None:
        for item in self._link.pull():
            if isinstance(item, NotificationItem):
                record = item.notification
                kind = MessageType[record.message_type]
                self._stopped |= kind is MessageType.ENVIRONMENT_STOP
                self.put(
                    Message(
                        message_type=kind,
                        message=record.message,
                        timestamp=datetime.fromtimestamp(record.timestamp, tz=UTC),
                    )
                )
            elif isinstance(item, EndedItem):
                self._stop(f"Environment stopped with state {item.state}")
        if self._link.lost is not None:
            self._stop(f"Environment unreachable: {self._link.lost}")

    def _stop(self, message: str) -> None:
        # ARE's Environment puts this when it stops; the agent ends its turn and its loop on it.
        if self._stopped:
            return
        self._stopped = True
        self.put(
            Message(
                message_type=MessageType.ENVIRONMENT_STOP,
                message=message,
                timestamp=datetime.fromtimestamp(self._link.now(), tz=UTC),
            )
        )

    def get_by_timestamp(self, timestamp: datetime) -> list[Message]:
        self.sync()
        return super().get_by_timestamp(timestamp)

    def list_view(self) -> list[Message]:
        self.sync()
        return super().list_view()


class SessionTimeManager(TimeManager):
    """ARE's time manager, reading the session's simulated time."""

    def __init__(self, link: SessionLink) -> None:
        super().__init__()
        self._link = link

    def time(self) -> float:
        return self._link.now()

    def time_passed(self) -> float:
        return self._link.now() - self._link.start


class SessionEnvironment:
    """What ARE's agent builder and agent take from an ``Environment``, backed by a session."""

    def __init__(self, link: SessionLink) -> None:
        self.link = link
        self.time_manager = SessionTimeManager(link)
        # The session's own class: its `notified_tools` make the agent's notification policy
        # prompt (areasync.simulation builds every session with VerboseNotificationSystem()).
        self.notification_system = VerboseNotificationSystem()
        self.notification_system.message_queue = SessionMessageQueue(link)
        self.world_logs: list[BaseAgentLog] = []

    def append_to_world_logs(self, world_log: BaseAgentLog) -> None:
        self.world_logs.append(world_log)

    def pause(self) -> None:
        self.link.pause()

    def resume_with_offset(self, offset: float) -> None:
        self.link.resume_with_offset(offset)


class SessionAppTool(AppTool):
    """ARE's ``AppTool`` of a scenario's app method, called in the session instead.

    Built from the scenario's own tool (:meth:`of`): everything ``AppToolAdapter`` reads is
    ARE's, the app instance stays attached (the agent turns off the AgentUserInterface's
    waiting on it, as in-process), and ``function`` is left empty so that ARE does not
    annotate the app's method with this tool.
    """

    _link: SessionLink
    _local: AppTool
    _declared: Any

    @classmethod
    def of(cls, local: AppTool, link: SessionLink) -> SessionAppTool:
        fields = {f.name: getattr(local, f.name) for f in dataclasses.fields(local) if f.init}
        # Random failures are the session's to draw (its tools have them, if any).
        fields.update(function=None, failure_probability=None, rng=None)
        tool = cls(**fields)
        tool._link = link
        tool._local = local
        tool._declared = return_type(local.function)
        return tool

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            arguments = self._bind(args, kwargs)
        except TypeError as exc:
            # Refused before anything ran, as in-process: recorded, never sent.
            self._link.refused(str(self._public_name), {**kwargs}, str(exc))
            raise
        value = self._link.call_tool(str(self._public_name), arguments)
        return rebuild(value, self._declared)

    def _bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        """Keyword arguments for the call, bound as ARE binds them to the app method (its
        ``TypeError`` if they do not bind: in-process nothing runs then either)."""
        function = self._local.function
        if function is None:
            names = [arg.name for arg in self.args]
            if len(args) > len(names):
                raise TypeError("too many positional arguments")
            return {**dict(zip(names, args, strict=False)), **kwargs}
        signature = inspect.signature(function)
        instance = self._local.class_instance
        leading = () if instance is None else (instance,)
        bound = signature.bind(*leading, *args, **kwargs)
        arguments = dict(bound.arguments)
        if instance is not None:
            arguments.pop(next(iter(signature.parameters)), None)
        # `**kwargs` parameters arrive as one mapping; send them as the keywords they were.
        for name, parameter in signature.parameters.items():
            if parameter.kind is inspect.Parameter.VAR_KEYWORD and name in arguments:
                arguments.update(arguments.pop(name))
        return arguments


def session_tools(local_tools: list[AppTool], link: SessionLink) -> list[AppTool]:
    """The scenario's tools, in ARE's order, each calling the session."""
    return [SessionAppTool.of(tool, link) for tool in local_tools]
