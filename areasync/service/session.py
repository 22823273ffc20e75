"""Sessions: one `Simulation` each, with its stream hub, tokens, epoch and clients; the registry.

A session is a thin shell around a `Simulation`: everything that changes the ARE environment
goes through the simulation's own methods, on the event loop, between engine steps. The
session's one ordered lane is the simulation's `lane` (a FIFO lock, see `areasync.simulation`): each
request takes it the moment its frame is decoded and runs to completion holding it, so tool
calls and controls apply in the order they arrive, never inside a tick and never inside one
another. Most requests never yield; a long `jump`/`next_event`/`tick` does, every
`step_budget` (`ServiceConfig.step_budget`), so that other sessions, sockets and the stream's
subscribers keep going meanwhile - and a request of this session that arrives then waits in
the lane and runs after it, at the time the jump left.

Creating a session off the event loop. Building a scenario from uploaded JSON is CPU work that
grows with its size (~60-130 us per event, a few seconds at 16,000 events, after the linear
import of `bridge/event_import.py`); on the loop it would stop every session, socket and
`/health` meanwhile. `create_async` builds the scenario (`bridge.scenarios.load`: vetting,
ARE's import, initialisation, confinement) in a worker thread (`anyio.to_thread.run_sync`,
which carries the context along), then starts the session on the loop in one synchronous step.
Why a thread rather than the alternatives: chunking the import cooperatively would mean
rewriting ARE's importer around yields; a subprocess cannot hand back an ARE scenario (its
events hold closures and bound methods, nothing pickles). In a thread, the interpreter lock
passes back to the loop every 5 ms switch interval while the import runs Python code, and the
import's C calls are kept short (pydantic validates events in pieces, `bridge/json_import.py`):
the loop stays responsive (bench/imports.py: /health at most ~40 ms during a 6,000-event import,
against ~0.5 s with the same import on the loop). Only the scenario object is built there: no
Simulation, no event-loop object, nothing any session shares but ARE's own class-level state,
which imports do not change in a way a running session sees (ARE's `EventRegisterer` keeps
its switches per thread, and the worker thread's are ARE's defaults). One import at a time
(a capacity limiter of 1), and imports under way count against `max_sessions`. A cancelled
create (the server shutting down) waits for its thread's import to finish, then starts
nothing; a failed import is an `invalid_field` error that changes nothing.

Judged sessions. With a judge (`ServiceConfig.judge`, `areasync serve --judge_*`), a JSON
scenario imported the benchmark way is prepared in that same worker thread by ARE's own
preprocessing with Gaia2's judge (`areasync.bridge.judge`), and its session is a
`JudgedSimulation`, whose judge calls go to worker threads (`service/judged.py`, under
`judge_calls` at once, server-wide) while the event loop serves on; `Session.run` runs the
session's whole task through its bridge. `describe()` and the `create_session` result name the
judge (model, provider; None when the session is not judged).

Fast-mode turn-taking (leases: README, "Modes"). The server holds an agent's busy lease while it
is the agent's turn: from its attach, from each notification put on the stream and from each
tool result, until the agent sends `idle`, calls `SystemApp__wait_for_notification`, or
disconnects. A fast session must not race to its end before its agent arrives, so it starts
with a *waiting-for-agent* hold:

- it is taken when a fast-mode session is created, unless it runs in oracle mode (the oracle is
  its own agent, there is nobody to wait for);
- it is released when the first agent attaches (the agent's own lease is taken first, so time
  does not move in between), or when a controller (or admin) sends `resume`: that is how a
  dashboard runs a fast session without an agent. `jump`, `next_event` and `tick` move time but
  keep the hold, so a controller can step through a session before its agent arrives without
  it then racing to the end;
- it never expires: the session refreshes it before the lease deadline, however long it waits;
- it is not taken again when agents leave (a session that has started keeps going).
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

import anyio
import anyio.abc
import anyio.lowlevel
import anyio.to_thread
from are.simulation.scenarios.scenario import Scenario

from areasync.bridge.judge import judge_link
from areasync.bridge.sandbox import Sandbox
from areasync.bridge.scenarios import ScenarioError, detach_apps, import_mode_of
from areasync.loop.clock import ClockMode
from areasync.protocol.errors import CloseCode, ErrorCode, ProtocolError
from areasync.protocol.frames import ImportMode, Mode, Role
from areasync.service.auth import Tokens
from areasync.service.config import ServiceConfig
from areasync.service.hub import StreamHub
from areasync.service.judged import JudgedSimulation
from areasync.service.metrics import Metrics
from areasync.service.names import safe_id
from areasync.service.recipes import Recipe, source_text
from areasync.service.traces import write_trace
from areasync.simulation import Simulation, SimulationError, build_scenario

if TYPE_CHECKING:
    from areasync.service.connection import Connection

logger = logging.getLogger("areasync.service")

WAITING_HOLDER = "areasync:waiting-for-agent"
"""Lease holder of the waiting-for-agent hold (agents hold leases under their connection id)."""

ScenarioSource: TypeAlias = str | Path | Scenario
# What a restart needs of a source (`recipes.source_text`): (registered id, JSON text, why neither).
KeptSource: TypeAlias = tuple[str | None, str | None, str]
# A built scenario, its sandbox, and what a restart needs of its source.
Built: TypeAlias = tuple[Scenario, Sandbox, KeptSource]
"""A registered scenario id, a path to an ARE JSON scenario, JSON text, or a Scenario."""


def session_id_for(source: ScenarioSource, scenario: Scenario) -> str:
    """The natural id of a session: a JSON file's stem, else the scenario's id."""
    if isinstance(source, Path) or (
        isinstance(source, str) and source.endswith(".json") and not source.lstrip().startswith("{")
    ):
        base = Path(source).stem
    else:
        base = str(getattr(scenario, "scenario_id", None) or "session")
    # Ids travel in URL paths and become trace file names: characters that need no escaping,
    # bounded in length (`names`).
    return safe_id(base)


class Session:
    """One running scenario and everything the service keeps about it."""

    def __init__(
        self,
        session_id: str,
        sim: Simulation,
        *,
        tokens: dict[Role, str],
        oracle: bool,
        config: ServiceConfig,
        metrics: Metrics,
    ) -> None:
        self.id = session_id
        self.sim = sim
        self.tokens = tokens
        self.oracle = oracle
        self.config = config
        self.metrics = metrics
        # A new epoch per session instance: a client's `since` is only meaningful against the
        # very stream it came from (a restarted server, or a recreated session, starts anew).
        self.epoch = secrets.token_hex(8)
        self.hub = StreamHub(sim.log, max_lag=config.max_lag, metrics=metrics)
        self.connections: dict[Connection, None] = {}
        self.created_at = time.time()
        self.ended_at: float | None = None
        self.trace_path: Path | None = None
        self.trace_error: str | None = None
        self.agents_seen = 0
        self.done = anyio.Event()
        # How to create this session again (a restart), or why that cannot be done.
        self.recipe: Recipe | None = None
        self.no_recipe = "it was created without one"
        self._agent_arrived = anyio.Event()
        self.waiting_for_agent = self.fast and not oracle
        if self.waiting_for_agent:
            sim.begin_lease(WAITING_HOLDER)

    # -- reading -----------------------------------------------------------------------------

    @property
    def scenario_id(self) -> str:
        return str(getattr(self.sim.scenario, "scenario_id", "") or "")

    @property
    def import_mode(self) -> str | None:
        """How the scenario was imported from JSON (benchmark or plain); None if it was not."""
        mode = import_mode_of(self.sim.scenario)
        return None if mode is None else mode.value

    @property
    def judge(self) -> dict[str, str] | None:
        """The judge that scores this session (model, provider), None if none does."""
        if isinstance(self.sim, JudgedSimulation):
            return self.sim.judge.options.public()
        return None

    @property
    def fast(self) -> bool:
        return self.sim.clock.mode is ClockMode.FAST

    @property
    def ended(self) -> bool:
        return self.sim.ended

    def connection_counts(self) -> dict[str, int]:
        counts = {role.value: 0 for role in Role}
        for connection in self.connections:
            if connection.role is not None:
                counts[connection.role.value] += 1
        return counts

    def describe(self, ws_url: str) -> dict[str, Any]:
        """The session as `/api/sessions` lists it (no tokens: they are handed out once)."""
        return {
            "id": self.id,
            "scenario_id": self.scenario_id,
            "url": ws_url,
            "epoch": self.epoch,
            "state": self.sim.state,
            "ended": self.ended,
            "oracle": self.oracle,
            "import_mode": self.import_mode,
            "judge": self.judge,
            "waiting_for_agent": self.waiting_for_agent,
            "restartable": self.recipe is not None,
            "clock": self.sim.clock_state(peek=True),
            "seq": self.hub.seq,
            "events": self.hub.events,
            "connections": self.connection_counts(),
            "validation": self.sim.validation,
            "trace": None if self.trace_path is None else str(self.trace_path),
            "trace_error": self.trace_error,
            "created_at": self.created_at,
            "ended_at": self.ended_at,
        }

    # -- clients -----------------------------------------------------------------------------

    def attach(self, connection: Connection) -> None:
        """A client said a valid hello: it follows the stream from now on."""
        self.connections[connection] = None
        self.hub.subscribe(connection)
        if connection.role is Role.AGENT:
            self.agents_seen += 1
            connection.take_turn()  # before the hold goes: time must not move in between
            self.start_without_hold()

    def detach(self, connection: Connection) -> None:
        self.connections.pop(connection, None)
        self.hub.unsubscribe(connection)

    def start_without_hold(self) -> None:
        """Release the waiting-for-agent hold (an agent arrived, or a controller resumed)."""
        if self.waiting_for_agent:
            self.waiting_for_agent = False
            self._agent_arrived.set()
            self.sim.end_lease(WAITING_HOLDER)

    # -- running -----------------------------------------------------------------------------

    async def run(self, on_end: Callable[[Session], None]) -> None:
        """Drive the simulation to its end, then write the trace. Never raises."""
        if isinstance(self.sim, JudgedSimulation):
            # Its judge may be called anywhere below, the failure path's validation included.
            await self.sim.bridge(self._run(on_end))
        else:
            await self._run(on_end)

    async def _run(self, on_end: Callable[[Session], None]) -> None:
        try:
            async with anyio.create_task_group() as tg:
                if self.waiting_for_agent:
                    tg.start_soon(self._hold_for_agent)
                await self.sim.run()
                tg.cancel_scope.cancel()
        except Exception as exc:
            # A scenario whose events raise must not take the server down: end this session,
            # failed, saying why (the traceback goes to the server log).
            logger.exception("session %s failed; ending it", self.id)
            if not self.sim.ended:
                try:
                    cause = _first_leaf(exc)
                    self.sim.fail(
                        f"the scenario raised {type(cause).__name__}: {cause}; the traceback is "
                        "in the server log"
                    )
                except Exception:
                    logger.exception("session %s could not be stopped cleanly", self.id)
        finally:
            if self.sim.ended:
                self.ended_at = time.time()
                self._write_trace()
            self.done.set()
            on_end(self)

    async def _hold_for_agent(self) -> None:
        # Re-take the hold well before its wall-clock deadline: waiting for an agent is not an
        # agent overstaying its turn, and the lease policy must never end or release it.
        interval = max(self.sim.lease_timeout / 3, 0.001)
        while self.waiting_for_agent and not self.sim.ended:
            self.sim.begin_lease(WAITING_HOLDER)
            with anyio.move_on_after(interval):
                await self._agent_arrived.wait()

    def end_now(self, reason: str) -> None:
        """End the session here and now, outside its lane, and write its trace: the last resort
        of a shutdown whose `stop` did not get through in time (a command of the session that
        never gave way). Its driver, when it next runs, finds the session ended."""
        if not self.sim.ended:
            try:
                self.sim.fail(reason)
            except Exception:
                logger.exception("session %s could not be ended cleanly", self.id)
        if self.sim.ended and self.trace_path is None and self.trace_error is None:
            self.ended_at = time.time()
            self._write_trace()

    def _write_trace(self) -> None:
        directory = self.config.trace_dir
        if directory is None or self.trace_path is not None:
            return  # none wanted, or already written (by `end_now`)
        agent_id = "oracle" if self.oracle else ("websocket" if self.agents_seen else None)
        try:
            self.trace_path = write_trace(
                directory,
                f"{self.id}_{self.epoch}",
                self.sim.env,
                self.sim.scenario,
                self.sim.validation,
                agent_id=agent_id,
            ).resolve()
        except Exception as exc:
            self.trace_error = f"{type(exc).__name__}: {exc}"
            logger.exception("could not write the trace of session %s", self.id)
        else:
            logger.info("session %s ended (%s); trace %s", self.id, self.sim.state, self.trace_path)


class SessionRegistry:
    """Every session of the server, by id; creates, stops and forgets them."""

    def __init__(self, config: ServiceConfig, tokens: Tokens, metrics: Metrics) -> None:
        self.config = config
        self.tokens = tokens
        self.metrics = metrics
        self.sessions: dict[str, Session] = {}
        self.ws_base = f"ws://{config.host}:{config.port}"  # set to the bound address at start
        self.traces_written = 0
        self._ended_order: list[str] = []
        self._task_group: anyio.abc.TaskGroup | None = None
        # Scenario imports under way in worker threads (create_async), and their one lane.
        self._importing = 0
        self._import_limiter = anyio.CapacityLimiter(1)
        # Judge LLM calls in flight, server-wide (`JudgedSimulation`).
        self._judge_limiter = anyio.CapacityLimiter(config.judge_calls)

    def bind(self, task_group: anyio.abc.TaskGroup) -> None:
        """Sessions created from now on run in `task_group`."""
        self._task_group = task_group

    def ws_url(self, session_id: str) -> str:
        return f"{self.ws_base}/sessions/{session_id}"

    def get(self, session_id: str) -> Session | None:
        return self.sessions.get(session_id)

    def live(self) -> list[Session]:
        return [s for s in self.sessions.values() if not s.ended]

    # -- creating ----------------------------------------------------------------------------

    def create(
        self,
        source: ScenarioSource,
        *,
        mode: Mode | str | None = None,
        speed: float | None = None,
        oracle: bool | None = None,
        session_id: str | None = None,
        import_mode: ImportMode | str | None = None,
    ) -> Session:
        """Load a scenario and start its session, all on the calling thread (a test harness's,
        say; the server uses `create_async`). Raises ProtocolError (capacity, bad scenario).

        Left out, `mode`, `speed`, `oracle` and `import_mode` are the configuration's."""
        self._admit(source)
        oracle = self.config.oracle if oracle is None else oracle
        with _refused_as_data():
            built = self._builder(source, oracle, import_mode)()
        return self._start(source, built, mode, speed, oracle, session_id, import_mode)

    async def create_async(
        self,
        source: ScenarioSource,
        *,
        mode: Mode | str | None = None,
        speed: float | None = None,
        oracle: bool | None = None,
        session_id: str | None = None,
        import_mode: ImportMode | str | None = None,
    ) -> Session:
        """`create`, building the scenario in a worker thread while the event loop serves on.

        Imports run one at a time (a second waits for the first) and count against
        `max_sessions` while they run. Cancelled (the client left, the server shuts down), it
        waits for the thread's import to finish and starts nothing."""
        self._admit(source)
        oracle = self.config.oracle if oracle is None else oracle
        self._importing += 1
        try:
            with _refused_as_data():
                built = await anyio.to_thread.run_sync(
                    self._builder(source, oracle, import_mode), limiter=self._import_limiter
                )
            # The thread is never abandoned (it would run on, unaccounted for); a cancel that
            # came meanwhile is delivered here, before anything starts.
            try:
                await anyio.lowlevel.checkpoint_if_cancelled()
            except BaseException:
                built[1].remove_directories()  # the directories ARE made for the scenario
                raise
        finally:
            self._importing -= 1
        return self._start(source, built, mode, speed, oracle, session_id, import_mode)

    def _builder(
        self, source: ScenarioSource, oracle: bool, import_mode: ImportMode | str | None
    ) -> Callable[[], Built]:
        """Builds `source`'s scenario in a new sandbox, and reads what a restart needs of its
        source, when called (on any thread: the server calls it off the loop)."""

        def build() -> Built:
            scenario, sandbox = build_scenario(
                source,
                import_mode=str(import_mode or self.config.import_mode),
                oracle=oracle,
                max_file_bytes=self.config.max_file_bytes,
                judge=self.config.judge,
            )
            return scenario, sandbox, source_text(source, self.config.max_scenario_bytes)

        return build

    def _admit(self, source: ScenarioSource) -> None:
        """Refuse a scenario the server has no room for, or too large to parse."""
        if self._task_group is None:
            raise RuntimeError("the registry is not bound to a task group: start the service")
        live = len(self.live())
        if live + self._importing >= self.config.max_sessions:
            being = f" and imports {self._importing} more" if self._importing else ""
            raise ProtocolError(
                ErrorCode.CAPACITY,
                f"the server already runs {live} live sessions{being}, its limit "
                "(max_sessions); stop one with stop_session, or retry after one ends",
            )
        if isinstance(source, str) and source.lstrip().startswith("{"):
            size = len(source.encode(errors="surrogatepass"))
            if size > self.config.max_scenario_bytes:
                raise ProtocolError(
                    ErrorCode.TOO_LARGE,
                    f"the scenario is {size} bytes of JSON, above the server's "
                    f"{self.config.max_scenario_bytes}-byte limit (max_scenario_bytes); nothing "
                    "was loaded",
                )

    def _start(
        self,
        source: ScenarioSource,
        built: Built,
        mode: Mode | str | None,
        speed: float | None,
        oracle: bool,
        session_id: str | None,
        import_mode: ImportMode | str | None = None,
    ) -> Session:
        """The session of a built scenario: its simulation, id, tokens and task (on the loop,
        with nothing awaited: it exists entirely or not at all)."""
        assert self._task_group is not None
        scenario, sandbox, kept = built
        judged = judge_link(scenario) is not None
        extra: dict[str, Any] = {"judge_limiter": self._judge_limiter} if judged else {}
        with _refused_as_data():
            sim = (JudgedSimulation if judged else Simulation).load(
                scenario,
                sandbox=sandbox,
                mode=str(Mode(mode or self.config.mode).value),
                speed=self.config.speed if speed is None else speed,
                oracle=oracle,
                lease_timeout=self.config.lease_timeout,
                lease_policy=self.config.lease_policy,
                step_budget=self.config.step_budget,
                control_budget=self.config.control_budget,
                max_ticks=self.config.max_ticks,
                max_jump=self.config.max_jump,
                max_file_bytes=self.config.max_file_bytes,
                **extra,
            )
        wanted = session_id or session_id_for(source, sim.scenario)
        sid = self._unique(wanted)
        session = Session(
            sid,
            sim,
            tokens=self.tokens.mint(sid),
            oracle=oracle,
            config=self.config,
            metrics=self.metrics,
        )
        self._remember(session, kept, import_mode)
        self.sessions[sid] = session
        self.metrics.sessions_created += 1
        self._task_group.start_soon(session.run, self._on_end, name=f"areasync session {sid}")
        return session

    def _remember(
        self, session: Session, kept: KeptSource, import_mode: ImportMode | str | None
    ) -> None:
        """Keep what a restart needs: the source (bounded by max_scenario_bytes), the options."""
        scenario, text, why = kept
        if scenario is None and text is None:
            session.no_recipe = why
            return
        clock = session.sim.clock_state(peek=True)
        session.recipe = Recipe(
            scenario=scenario,
            scenario_json=text,
            mode=str(clock.mode),
            speed=float(clock.speed),
            oracle=session.oracle,
            import_mode=None if import_mode is None else str(ImportMode(import_mode).value),
        )

    def _unique(self, wanted: str) -> str:
        if wanted not in self.sessions:
            return wanted
        n = 2
        while f"{wanted}-{n}" in self.sessions:
            n += 1
        return f"{wanted}-{n}"

    # -- ending ------------------------------------------------------------------------------

    async def stop(self, session_id: str) -> Session:
        """End a session now (its clients get `ended`); returns it once its trace is written."""
        session = self.sessions.get(session_id)
        if session is None:
            raise ProtocolError(
                ErrorCode.SESSION_NOT_FOUND,
                f"no session {session_id!r}: GET /api/sessions lists the sessions",
            )
        if session.ended:
            raise ProtocolError(
                ErrorCode.SESSION_ENDED,
                f"session {session_id!r} has already ended ({session.sim.state})",
            )
        await session.sim.stop("stopped by an admin (stop_session)")
        await session.done.wait()
        return session

    def _on_end(self, session: Session) -> None:
        if session.trace_path is not None:
            self.traces_written += 1
        if session.id in self.sessions and session.sim.ended:
            self._ended_order.append(session.id)
            self._prune()

    def _prune(self) -> None:
        # Ended sessions stay for replay and inspection, up to keep_ended; the oldest go first.
        while len(self._ended_order) > self.config.keep_ended:
            self.discard(self._ended_order.pop(0))

    def discard(self, session_id: str) -> None:
        """Forget a session: its tokens stop working and its clients are closed (1000)."""
        session = self.sessions.pop(session_id, None)
        if session is None:
            return
        self.tokens.forget(session_id)
        if session.ended:
            # Whatever ARE left pointing at its apps must not keep its environment alive.
            detach_apps(session.sim.scenario)
            session.sim.sandbox.remove_directories()  # its file systems' directories
        for connection in list(session.connections):
            connection.request_close(
                CloseCode.NORMAL,
                "the session ended and was discarded by the server; its trace is on disk",
                flush=True,
            )

    async def shutdown(self) -> None:
        """Stop every live session and wait until their traces are written.

        The stops run side by side (each interrupts a long control of its session at its next
        yield). Whatever has not ended `shutdown_timeout` seconds later is ended outside its
        lane (`Session.end_now`), its trace written: shutting down never waits for a session.
        """

        async def stop(session: Session) -> None:
            with contextlib.suppress(SimulationError):  # it may have ended on its own meanwhile
                await session.sim.stop("the server shut down")
            await session.done.wait()

        with anyio.move_on_after(self.config.shutdown_timeout):
            async with anyio.create_task_group() as tg:
                for session in list(self.sessions.values()):
                    tg.start_soon(stop, session)
        for session in list(self.sessions.values()):
            if not session.done.is_set():
                logger.warning(
                    "session %s did not stop within %g s of the shutdown; ending it now",
                    session.id,
                    self.config.shutdown_timeout,
                )
                session.end_now("the server shut down (the session did not stop in time)")


@contextlib.contextmanager
def _refused_as_data() -> Iterator[None]:
    """A scenario that fails to load is an `invalid_field` error saying why."""
    try:
        yield
    except (ScenarioError, SimulationError, ValueError) as exc:
        raise ProtocolError(ErrorCode.INVALID_FIELD, f"cannot create a session: {exc}") from exc
    except Exception as exc:
        # Whatever else ARE raises while building an untrusted scenario (an assertion on
        # its time increment, an overflow on its start time...) is the scenario's fault,
        # not a server bug: refuse it as data, with the cause.
        logger.info("create_session refused a scenario", exc_info=True)
        raise ProtocolError(
            ErrorCode.INVALID_FIELD,
            f"cannot create a session: the scenario failed to load ({type(exc).__name__}: {exc})",
        ) from exc


def _first_leaf(exc: BaseException) -> BaseException:
    """The first exception inside (possibly nested) exception groups: what actually raised."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc
