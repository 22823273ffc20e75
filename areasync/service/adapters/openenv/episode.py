"""One OpenEnv client's episodes: its actions carried out on a session, its observations made.

An `Episode` is the session's client for an OpenEnv connection (or for a session's HTTP
routes): it reaches the session through an `InProcessClient` (`service/connection/inprocess.py`),
the path a WebSocket connection's frames take (its hello, its gate: role, rate, the session's state;
`requests.perform`; the error each failure becomes), so an OpenEnv action reaches ARE by the
one path every request takes.

- A session's token (agent, or any role) binds the episode to that session, with that role's
  rights: `reset` starts observing it afresh, `initialize` is refused.
- The admin token gives a fresh session per episode (OpenEnv's model): `initialize`, or `reset`
  naming a scenario, creates it (`create_session`'s checks and limits); the next `reset` or the
  connection's end stops it (its trace is written).

The OpenEnv client is the session's agent: in fast mode it holds its turn (a lease: time stands
still) from each observation until it lets time advance (`call_tool{advance_time}`); a
notification gives the turn back, as for a native agent. Letting time advance says what it has
read (`idle{seen}`): a notification it has not been shown yet keeps its turn (the observation
it is about to get carries it). It reads the session's stream from its own cursor: each
observation carries exactly the notifications since the previous one.

An observation is made when its action is done (the clock, the stream and the outcome then),
and with a journal (`--state-dir`) sent only once every record logged until then is durable
(`StreamHub.durable`, the gate of `durability/journal.py`), as a WebSocket reply is made and then
held by its outbox: it never tells of an input a restarted server would not know, and what it says
does not depend on how long the disk takes (a fast clock the agent let run goes on meanwhile:
where it got is the next observation's news).
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import msgspec

from areasync.journal.sources import (
    DatasetTask,
    InlineScenario,
    RegisteredScenario,
    ScenarioFile,
    ScenarioSource,
)
from areasync.protocol.errors import ErrorCode as AreaErrorCode
from areasync.protocol.frames import (
    ClientFrame,
    CreateSession,
    Idle,
    Mode,
    NotificationItem,
    Role,
    StreamItem,
    Tick,
)
from areasync.service.adapters.openenv.catalog import Catalog, CatalogError
from areasync.service.adapters.openenv.credential import Credential
from areasync.service.adapters.openenv.messages import (
    AreAction,
    CallToolAction,
    ErrorCode,
    GetStateAction,
    InitializeAction,
    ListAppsAction,
    OpenEnvError,
    action_frames,
    scenario_source,
)
from areasync.service.connection import requests
from areasync.service.connection.inprocess import (
    InProcessClient,
    NotDurableError,
    RequestError,
    error_of,
    until_durable,
)

if TYPE_CHECKING:
    from areasync.service.sessions.registry import SessionRegistry
    from areasync.service.sessions.session import Session

logger = logging.getLogger("areasync.service")

_numbers = itertools.count(1)

_Answer = TypeVar("_Answer")


# areasync's error codes as OpenEnv's: capacity has a code of its own there.
def _openenv_code(code: str) -> ErrorCode:
    return (
        ErrorCode.CAPACITY_REACHED if code == AreaErrorCode.CAPACITY else ErrorCode.EXECUTION_ERROR
    )


class Episode:
    """An OpenEnv client of the service: see the module docstring."""

    def __init__(self, registry: SessionRegistry, credential: Credential) -> None:
        self.registry = registry
        self.credential = credential
        self.id = f"openenv-{next(_numbers)}"
        self.holder = f"agent:{self.id}"  # its fast-mode lease
        self.session: Session | None = None
        self.client: InProcessClient | None = None  # its path into `session`
        self.cursor = 0  # the stream seq the last observation reported up to
        self.read_to = 0  # ... and the last one sent (`_held`)
        self.steps = 0
        self.episode_id: str | None = None
        self.last_active = time.monotonic()
        self.closed = False
        self._arrived = anyio.Event()  # set by a notification (or the end) since `wait` began
        self.waiting = False  # a `wait` is under way
        # Called on each notification, at the session's end and at the episode's close.
        self.watchers: set[Callable[[], None]] = set()

    # -- the session's client (hub.Subscriber, session.Follower) --------------------------------

    wants_items = True  # a notification gives the agent its turn (on_item)

    @property
    def role(self) -> Role | None:
        return None if self.client is None else self.client.role

    @property
    def position(self) -> int:
        # Never behind: it reads the stream itself when it answers (its cursor is its own).
        return 0 if self.session is None else self.session.hub.seq

    @property
    def drained_at(self) -> int:
        return self.position

    def flush(self) -> None:
        return None

    def overflow(self, lag: int) -> None:  # pragma: no cover - position is never behind
        return None

    def on_item(self, seq: int, item: StreamItem) -> None:
        session = self.session
        if isinstance(item, NotificationItem):
            self.take_turn()
            self._wake()
        elif session is not None and session.sim.ended:
            self._wake()

    def _wake(self) -> None:
        self._arrived.set()
        for watcher in tuple(self.watchers):
            watcher()

    def take_turn(self) -> None:
        session = self.session
        if (
            session is not None
            and self._acts
            and session.sim.clock.mode is Mode.FAST
            and not session.sim.ended
            and not self.closed
        ):
            session.sim.begin_lease(self.holder)

    def request_close(self, code: int, reason: str, *, flush: bool) -> None:
        # The session is going (discarded, shutdown, journal failure): the next request says so.
        self._leave()

    @property
    def _acts(self) -> bool:
        """Acts in the world (its role may call tools): it is the session's agent."""
        return self.role in (Role.AGENT, Role.ADMIN)

    # -- episodes -----------------------------------------------------------------------------

    async def reset(self, initialize: InitializeAction | None, episode_id: str | None) -> Any:
        """End the episode; start the next (on `initialize`'s scenario, if named)."""
        self.touch()
        if self.credential.fresh:
            await self._end_owned()
            if initialize is not None:
                await self._create(initialize)
        else:
            if initialize is not None:
                raise self._no_initialize()
            await self._join(self._bound_session())
        self.steps = 0
        self.episode_id = episode_id or self.id
        return await self._held(self.observe(action_result=None))

    async def initialize(self, action: InitializeAction) -> dict[str, Any]:
        if not self.credential.fresh:
            raise self._no_initialize()
        await self._end_owned()
        session = await self._create(action)
        return {
            "session_id": session.id,
            "scenario_id": session.scenario_id,
            "mode": session.sim.clock.mode.value,
        }

    def _no_initialize(self) -> OpenEnvError:
        return OpenEnvError(
            ErrorCode.EXECUTION_ERROR,
            f"this OpenEnv URL opens session {self.credential.session_id!r}; a new scenario "
            "needs an OpenEnv URL made with the admin token (http://HOST:PORT/openenv/ADMIN_TOKEN)",
        )

    def _bound_session(self) -> Session:
        session_id = self.credential.session_id
        session = None if session_id is None else self.registry.get(session_id)
        if session is None:
            raise OpenEnvError(
                ErrorCode.SESSION_ERROR,
                f"session {session_id!r} is gone (ended sessions are forgotten after a while); "
                "ask for a new one",
            )
        return session

    async def _create(self, action: InitializeAction) -> Session:
        scenario, text = await self._scenario(scenario_source(action))
        frame = CreateSession(
            id=0,
            scenario=scenario,
            scenario_json=text,
            mode=action.mode,
            speed=action.speed,
            oracle=action.oracle,
            import_mode=action.import_mode,
        )
        try:
            created = await requests.create_session(frame, self.registry)
        except Exception as exc:
            failure = error_of(self.registry, exc, frame)
            raise OpenEnvError(_openenv_code(failure.code), failure.message) from None
        session = self.registry.get(created.session_id)
        assert session is not None
        await self._join(session)
        return session

    async def _scenario(self, source: ScenarioSource) -> tuple[str | None, str | None]:
        """(registered id, JSON text) of what an initialize names; files are read off the loop."""
        config = self.registry.config
        catalog = Catalog(config.scenario_dir, config.max_scenario_bytes)
        try:
            match source:
                case RegisteredScenario(id=scenario_id):
                    return scenario_id, None
                case InlineScenario(json=text):
                    return None, text
                case ScenarioFile(path=path):
                    return await anyio.to_thread.run_sync(catalog.resolve, path)
                case DatasetTask(split=split, index=index):
                    task = await anyio.to_thread.run_sync(catalog.task, split, index)
                    return await anyio.to_thread.run_sync(catalog.resolve, task.scenario_path)
        except CatalogError as refused:
            raise OpenEnvError(ErrorCode.VALIDATION_ERROR, refused.message) from None

    async def _join(self, session: Session) -> None:
        """Say hello to `session` through its gate and follow its stream from now on."""
        client = self.client
        if self.session is session and client is not None and not client.closed:
            self.cursor = session.sim.log.seq
            self.take_turn()
            return
        # A new session, or a client the gate closed (it kept sending while rate limited): it
        # says hello again, as a WebSocket client reconnects.
        self._leave()
        credential = self.credential
        acts = credential.role in (Role.AGENT, Role.ADMIN)  # the wait tool hands back the turn
        client = InProcessClient(self.registry, name=self.id, holder=self.holder, as_agent=acts)
        try:
            client.hello(session, credential.role, credential.token)
        except RequestError as refused:
            raise OpenEnvError(_openenv_code(refused.code), refused.message) from None
        self.client = client
        self.session = session
        self.cursor = session.sim.log.seq
        session.attach(self)
        if self._acts and self.credential.role is not Role.AGENT:
            # attach() does this for an agent's hello; the admin's OpenEnv client is the agent.
            self.take_turn()
            session.start_without_hold()

    def _leave(self) -> None:
        session = self.session
        if session is None:
            return
        session.detach(self)
        session.sim.end_lease(self.holder)
        self.session = None
        self.client = None

    async def _end_owned(self) -> None:
        """Stop the fresh session of the previous episode (its trace is written)."""
        session = self.session
        if session is None or not self.credential.fresh:
            return
        self._leave()
        if not session.ended:
            await self.registry.stop(session.id)

    async def close(self) -> None:
        """The client left: its fresh session ends, a bound one runs on without it."""
        if self.closed:
            return
        await self._end_owned()
        self._leave()
        self.closed = True
        self._wake()  # a wait under way returns now, a listener's stream ends

    def touch(self) -> None:
        self.last_active = time.monotonic()

    # -- steps --------------------------------------------------------------------------------

    async def step(self, action: AreAction) -> Any:
        """Carry out one action: its observation (an OpenEnvError if nothing was done)."""
        self.touch()
        if isinstance(action, InitializeAction):
            result = await self.initialize(action)
            self.steps += 1
            return await self._held(self.observe(action_result=result))
        if self.session is None:
            raise OpenEnvError(
                ErrorCode.EXECUTION_ERROR,
                "no episode: send reset first"
                + (" (with a scenario), or step initialize" if self.credential.fresh else ""),
            )
        frame = action_frames(action)
        error: str | None = None
        then = self._turn_after(action) if isinstance(action, CallToolAction) else None
        try:
            value = await self.request(frame, then=then)
        except _ToolFailed as failed:  # ARE ran the tool and it raised: the step happened
            value, error = None, failed.message
        extra: dict[str, Any] = {}
        if isinstance(action, CallToolAction):
            extra["time_advanced"] = await self._after_tool(action)
        self.steps += 1
        observation = self.observe(
            action_result=self._result(action, value) if error is None else None,
            action_error=error,
            metadata={**action.metadata, **extra} if action.metadata or extra else {},
        )
        return await self._held(observation)

    def _turn_after(self, action: CallToolAction) -> Callable[[bool], None]:
        """A tool call's outcome is the agent's next turn, unless it lets time advance: taken
        as soon as the call is done (time cannot move first)."""

        def then(failed: bool) -> None:
            if failed or not action.advance_time:
                self.take_turn()

        return then

    async def _after_tool(self, action: CallToolAction) -> bool:
        """Let time advance after a tool call, if asked: whether it may (in fast mode, not
        if a notification the agent has not seen keeps its turn)."""
        session = self.session
        if session is None or session.sim.ended or not action.advance_time:
            return False
        mode = session.sim.clock.mode
        if mode is Mode.FAST:
            # Not held: the observation is made now, before the clock can run (`_held`).
            await self._idle(hold=False)
            return self.holder not in session.sim.leases
        if mode is Mode.MANUAL and self.client is not None and Tick in self.client.allowed:
            await self.request(Tick(id=0, n=1))
            return True
        return mode is Mode.REALTIME

    async def wait(self, bound: float) -> list[dict[str, Any]]:
        """The bounded wait: the notifications since the previous observation, once one
        arrives, the session ends, or `bound` wall seconds pass. In fast mode the agent
        lets time run meanwhile (its turn comes back with the notification, or at the end of
        the wait); in manual mode a controller moves time, in realtime the wall does."""
        self.touch()
        session = self.session
        if session is None:
            raise OpenEnvError(ErrorCode.EXECUTION_ERROR, "no episode: send reset first")
        if not self.pending() and not session.sim.ended and not self.closed:
            self._arrived = anyio.Event()
            if session.sim.clock.mode is Mode.FAST and self._acts:
                await self._idle()
            self.waiting = True
            try:
                with anyio.move_on_after(bound):
                    await self._arrived.wait()
            finally:
                self.waiting = False
            self.take_turn()
        return await self._held(self.notifications())

    async def _idle(self, *, hold: bool = True) -> None:
        """The agent's turn ends, unless a notification came after what it was shown."""
        await self.request(Idle(id=0, seen=self.cursor), hold=hold)

    def pending(self) -> bool:
        """A notification arrived since the previous observation."""
        session = self.session
        return session is not None and any(
            isinstance(item, NotificationItem) for item in self._unread(session)
        )

    def _unread(self, session: Session) -> list[StreamItem]:
        # Every item made so far: an answer telling of them is held until the records before
        # them are durable (`_held`), as an outbox holds a WebSocket reply.
        return session.sim.log.after(self.cursor)

    def notifications(self) -> list[dict[str, Any]]:
        """The notifications since the previous observation; the cursor moves past them
        (back, if the answer carrying them cannot be sent: `_held`)."""
        session = self.session
        if session is None:
            return []
        found = [
            msgspec.to_builtins(item.notification)
            for item in self._unread(session)
            if isinstance(item, NotificationItem)
        ]
        self.read_to = self.cursor
        self.cursor = session.sim.log.seq
        return found

    async def _held(self, answer: _Answer) -> _Answer:
        """`answer`, made now, once every record logged so far is durable (module docstring).
        If they cannot be made durable, the answer is not sent and what it would have told
        is told by the next one."""
        try:
            await until_durable(self.session)
        except NotDurableError as failure:
            self.cursor = self.read_to
            raise OpenEnvError(ErrorCode.SESSION_ERROR, failure.message) from None
        self.read_to = self.cursor
        return answer

    def _result(self, action: AreAction, value: Any) -> dict[str, Any]:
        if isinstance(action, ListAppsAction):
            apps: dict[str, list[Any]] = {}
            for info in value:
                app, _, _ = info.name.partition("__")
                apps.setdefault(app, []).append(msgspec.to_builtins(info))
            return {"apps": apps}
        if isinstance(action, GetStateAction):
            return self._state_result(action, value)
        if isinstance(action, CallToolAction):
            return {
                "tool": action.app_name + "__" + action.tool_name
                if action.app_name
                else action.tool_name,
                "value": msgspec.to_builtins(value),
            }
        return {"clock": msgspec.to_builtins(value)}

    def _state_result(self, action: GetStateAction, apps: Any) -> dict[str, Any]:
        session = self.session
        assert session is not None
        out: dict[str, Any] = {}
        if action.include_apps_state:
            out["apps"] = apps
        if action.include_event_log:
            out["event_log"] = msgspec.to_builtins(session.sim.events())
        if action.include_event_queue:
            out["event_queue"] = [
                {
                    "event_id": getattr(event, "event_id", None),
                    "event_time": getattr(event, "event_time", None),
                    "event_type": str(getattr(event, "event_type", "")),
                }
                for event in session.sim.env.event_queue.list_view()
            ]
        return out

    async def request(
        self,
        frame: ClientFrame,
        *,
        then: Callable[[bool], None] | None = None,
        hold: bool = True,
    ) -> Any:
        """`frame` by a WebSocket frame's path (`InProcessClient.request`, `then` and `hold`
        as there): its value, or raises (OpenEnvError, or _ToolFailed if ARE ran the tool and
        it raised)."""
        client = self.client
        assert client is not None
        try:
            return await client.request(frame, then=then, hold=hold)
        except RequestError as failure:
            if failure.code == AreaErrorCode.TOOL_FAILED:
                raise _ToolFailed(failure.message) from None
            # A closed client (it kept sending while rate limited) answers nothing more.
            code = ErrorCode.SESSION_ERROR if failure.closed else _openenv_code(failure.code)
            raise OpenEnvError(code, failure.message) from None
        except NotDurableError as failure:
            raise OpenEnvError(ErrorCode.SESSION_ERROR, failure.message) from None

    # -- observations -------------------------------------------------------------------------

    def observe(
        self,
        *,
        action_result: dict[str, Any] | None,
        action_error: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> tuple[dict[str, Any], float | None, bool]:
        """(observation, reward, done): the clock, the outcome, the notifications since the
        previous observation."""
        session = self.session
        meta = {"episode_id": self.episode_id, "step_count": self.steps, **(metadata or {})}
        if session is None:
            observation: dict[str, Any] = {
                "current_time": 0.0,
                "tick_count": 0,
                "action_success": action_error is None,
                "action_result": action_result,
                "action_error": action_error,
                "notifications": [],
                "environment_state": "SETUP",
                "event_queue_length": 0,
                "event_log_length": 0,
                "available_apps": None,
                "metadata": meta,
            }
            return observation, None, False
        sim = session.sim
        notifications = self.notifications()
        clock = sim.clock_state()
        meta["session_id"] = session.id
        observation = {
            "current_time": clock.time,
            "tick_count": clock.tick,
            "action_success": action_error is None,
            "action_result": action_result,
            "action_error": action_error,
            "notifications": notifications,
            "environment_state": clock.state.upper(),
            "event_queue_length": len(sim.env.event_queue),
            "event_log_length": len(sim.env.event_log),
            "available_apps": list(sim.env.apps),
            "metadata": meta,
        }
        return observation, self._reward(), sim.ended

    def _reward(self) -> float | None:
        session = self.session
        if session is None or not session.sim.ended or session.sim.validation is None:
            return None
        success = session.sim.validation.success
        return None if success is None else float(success)

    def state(self) -> dict[str, Any]:
        """OpenEnv's `state`."""
        return session_state(self.session, self.episode_id, self.steps)


def session_state(session: Session | None, episode_id: str | None, steps: int) -> dict[str, Any]:
    """OpenEnv's `state` of an episode on `session` (None: no scenario loaded yet)."""
    clock = None if session is None else session.sim.clock_state()
    return {
        "episode_id": episode_id,
        "step_count": steps,
        "session_id": None if session is None else session.id,
        "scenario_loaded": session is not None,
        "scenario_id": None if session is None else session.scenario_id,
        "current_time": 0.0 if clock is None else clock.time,
        "tick_count": 0 if clock is None else clock.tick,
        "environment_state": "SETUP" if clock is None else clock.state.upper(),
    }


class _ToolFailed(Exception):
    """ARE's tool raised: the call happened (ARE logged it), so the step is an observation."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
