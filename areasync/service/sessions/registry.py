"""The registry of a server's sessions: creates, stops, ends and forgets them.

Creating a session off the event loop. Building a scenario from uploaded JSON is CPU work that
grows with its size, linearly after `bridge/scenarios/event_import.py` (docs/topics/performance.md,
"Imports"); on the loop it would stop every session, socket and
`/health` meanwhile. `create_async` builds the scenario (`bridge.scenarios.loading.load`: vetting,
ARE's import, initialisation, confinement) in a worker thread (`anyio.to_thread.run_sync`,
which carries the context along), then starts the session on the loop in one synchronous step.
Why a thread rather than the alternatives: chunking the import cooperatively would mean
rewriting ARE's importer around yields; a subprocess cannot hand back an ARE scenario (its
events hold closures and bound methods, nothing pickles). In a thread, the interpreter lock
passes back to the loop every 5 ms switch interval while the import runs Python code, and the
import's C calls are kept short (pydantic validates events in pieces,
`bridge/scenarios/json_import.py`): the loop stays responsive (bench/imports.py times `/health`
during an import, in a thread and on the loop: docs/topics/performance.md, "Imports"). Only the
scenario object is built there: no Simulation, no event-loop object, nothing any session shares but
ARE's own class-level state, which imports do not change in a way a running session sees (ARE's
`EventRegisterer` keeps its switches per thread, and the worker thread's are ARE's defaults). One
import at a time (a capacity limiter of 1), and imports under way count against `max_sessions`. A
cancelled create (the server shutting down) waits for its thread's import to finish, then starts
nothing; a failed import is an `invalid_field` error that changes nothing.

Judged sessions. With a judge (`ServiceConfig.judge`, `areasync serve --judge_*`), a JSON
scenario imported the benchmark way is prepared in that same worker thread by ARE's own
preprocessing with Gaia2's judge (`areasync.bridge.judge.llm`), and its simulation is given that
judge as a part (`areasync.simulation.judging.Judge`), whose calls go to worker threads (under
`judge_calls` at once, server-wide) while the event loop serves on; `Session.run` runs the
session's whole task through its bridge. `describe()` and the `create_session` result name the
judge (model, provider; None when the session is not judged).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import secrets
import time
from collections.abc import Callable
from typing import Any, Protocol, TypeAlias

import anyio
import anyio.abc
import anyio.lowlevel
import anyio.to_thread

from areasync.bridge.judge.llm import judge_link
from areasync.bridge.sandbox.audit import Sandbox
from areasync.bridge.scenarios.loading import Scenario, detach_apps
from areasync.engine.clock import REAL_WALL, Wall
from areasync.journal import SESSION_ID_RULE, Created, InlineScenario, is_session_id
from areasync.protocol.errors import CloseCode, ErrorCode, ProtocolError
from areasync.protocol.frames import ForkedFrom, ImportMode, Mode
from areasync.service import background
from areasync.service.config import ServiceConfig
from areasync.service.durability.recipes import Recipe, source_text
from areasync.service.durability.restore import fork_inputs, fork_snapshot, forked, made_in, timed
from areasync.service.durability.state_dir import Journals, scenario_source
from areasync.service.gate.auth import Tokens
from areasync.service.gate.memory import ceiling_refusal
from areasync.service.metrics import Metrics
from areasync.service.sessions.creation import journal_created, refused_as_data
from areasync.service.sessions.names import fork_id
from areasync.service.sessions.session import Session, session_id_for
from areasync.simulation import Judge, Simulation, SimulationError, build_scenario
from areasync.simulation.loading import Loadable, plain_source
from areasync.simulation.snapshots import SnapshotPolicy, Snapshots

logger = logging.getLogger("areasync.service")

# What a restart needs of a source (`recipes.source_text`): (registered id, JSON text, why neither).
KeptSource: TypeAlias = tuple[str | None, str | None, str]
# A built scenario, its sandbox, and what a restart needs of its source.
Built: TypeAlias = tuple[Scenario, Sandbox, KeptSource]


class CallsUnderWay(Protocol):
    """Told when a session's tool call starts (`records`: how many records its simulation
    had logged before it) and when it is answered."""

    def enter(self, session_id: str, records: int) -> None: ...

    def leave(self, session_id: str) -> None: ...


class SessionWatcher(Protocol):
    """What follows every session from outside it (an adapter's per-session state): told when
    one is registered (created, forked or restored), has ended (its trace written) and is
    discarded. A watcher's failure is logged and changes nothing for the session."""

    def created(self, session: Session) -> None: ...

    def ended(self, session: Session) -> None: ...

    def discarded(self, session: Session) -> None: ...


class SessionRegistry:
    """Every session of the server, by id; creates, stops and forgets them."""

    def __init__(
        self, config: ServiceConfig, tokens: Tokens, metrics: Metrics, wall: Wall = REAL_WALL
    ) -> None:
        self.config = config
        self.tokens = tokens
        self.metrics = metrics
        self.wall = wall  # what the sessions it starts read and wait on
        self.sessions: dict[str, Session] = {}
        self.ws_base = f"ws://{config.host}:{config.port}"  # set to the bound address at start
        self.traces_written = 0
        self._ended_order: list[str] = []
        self._task_group: anyio.abc.TaskGroup | None = None
        # Scenario imports under way in worker threads (create_async), and their one lane.
        self._importing = 0
        self._import_limiter = anyio.CapacityLimiter(1)
        # Judge LLM calls in flight, server-wide (`areasync.simulation.judging`).
        self._judge_limiter = anyio.CapacityLimiter(config.judge_calls)
        # The state directory's journals (`--state-dir`), once the service has opened it.
        self.journals: Journals | None = None
        # Told of every tool call under way, by session (a session worker's record of what
        # held its loop should it be killed for that: `sessionworker/busy.py`).
        self.calls: CallsUnderWay | None = None
        self.watchers: list[SessionWatcher] = []

    def _tell(
        self, what: Callable[[SessionWatcher], Callable[[Session], None]], session: Session
    ) -> None:
        for watcher in self.watchers:
            try:
                what(watcher)(session)
            except Exception:
                logger.exception("a session watcher failed on session %s", session.id)

    def bind(self, task_group: anyio.abc.TaskGroup) -> None:
        """Sessions created from now on run in `task_group`."""
        self._task_group = task_group

    @property
    def import_limiter(self) -> anyio.CapacityLimiter:
        """The one lane of scenario builds in worker threads (imports, restores)."""
        return self._import_limiter

    @property
    def judge_limiter(self) -> anyio.CapacityLimiter:
        """Judge LLM calls in flight, server-wide (restored and forked sessions too)."""
        return self._judge_limiter

    def ws_url(self, session_id: str) -> str:
        return f"{self.ws_base}/sessions/{session_id}"

    def get(self, session_id: str) -> Session | None:
        return self.sessions.get(session_id)

    def live(self) -> list[Session]:
        return [s for s in self.sessions.values() if not s.ended]

    # -- creating ----------------------------------------------------------------------------

    def create(
        self,
        source: Loadable,
        *,
        mode: Mode | str | None = None,
        speed: float | None = None,
        oracle: bool | None = None,
        session_id: str | None = None,
        import_mode: ImportMode | str | None = None,
        ceiling: bool = True,
    ) -> Session:
        """Load a scenario and start its session, all on the calling thread (a test harness's,
        say; the server uses `create_async`). Raises ProtocolError (capacity, bad scenario).

        Left out, `mode`, `speed`, `oracle` and `import_mode` are the configuration's.
        `ceiling=False`: whatever the server's memory (`memory.py`; the sessions the operator
        named at start-up)."""
        source = plain_source(source)
        self._admit(source, ceiling=ceiling)
        oracle = self.config.oracle if oracle is None else oracle
        started = time.perf_counter()
        with refused_as_data():
            built = self._builder(source, oracle, import_mode)()
        session = self._start(source, built, mode, speed, oracle, session_id, import_mode)
        made_in(session, time.perf_counter() - started)
        return session

    async def create_async(
        self,
        source: Loadable,
        *,
        mode: Mode | str | None = None,
        speed: float | None = None,
        oracle: bool | None = None,
        session_id: str | None = None,
        import_mode: ImportMode | str | None = None,
        ceiling: bool = True,
    ) -> Session:
        """`create`, building the scenario in a worker thread while the event loop serves on.

        Imports run one at a time (a second waits for the first) and count against
        `max_sessions` while they run. Cancelled (the client left, the server shuts down), it
        waits for the thread's import to finish and starts nothing."""
        source = plain_source(source)
        self._admit(source, ceiling=ceiling)
        oracle = self.config.oracle if oracle is None else oracle
        self._importing += 1
        try:
            with refused_as_data():
                built, build_s = await anyio.to_thread.run_sync(
                    timed(self._builder(source, oracle, import_mode)),
                    limiter=self._import_limiter,
                )
            # The thread is never abandoned (it would run on, unaccounted for); a cancel that
            # came meanwhile is delivered here, before anything starts.
            try:
                await self._refresh_taken()  # the ids other servers gave meanwhile
                await anyio.lowlevel.checkpoint_if_cancelled()
            except BaseException:
                built[1].remove_directories()  # the directories ARE made for the scenario
                raise
        finally:
            self._importing -= 1
        started = time.perf_counter()
        session = self._start(source, built, mode, speed, oracle, session_id, import_mode)
        made_in(session, build_s + time.perf_counter() - started)
        await journal_created(session)
        return session

    async def fork(
        self, session_id: str, *, at_seq: int | None = None, at_time: float | None = None
    ) -> Session:
        """A new session of `session_id` at the cut (`restore.forked`, in a worker thread as
        imports are: from a snapshot, or replayed from its load), with its own id, tokens and
        epoch. Raises ProtocolError (no such session, a cut past its end, no room)."""
        source = self.sessions.get(session_id)
        if source is None:
            raise ProtocolError(
                ErrorCode.SESSION_NOT_FOUND,
                f"no session {session_id!r} to fork: GET /api/sessions lists the sessions",
            )
        inputs = fork_inputs(source, at_seq, at_time)
        assert source.recipe is not None  # `fork_inputs` refuses a session without one
        self._admit(inputs[0], "fork")
        self._importing += 1
        try:
            snapshot = await fork_snapshot(source, at_seq, at_time)
            with refused_as_data():
                sim, fork_s = await anyio.to_thread.run_sync(
                    timed(
                        functools.partial(
                            forked,
                            inputs,
                            snapshot,
                            at_seq,
                            at_time,
                            judge=self.config.judge if source.judge is not None else None,
                            judge_limiter=self._judge_limiter,
                        )
                    ),
                    limiter=self._import_limiter,
                )
            await self._refresh_taken()
        finally:
            self._importing -= 1
        kept: KeptSource = (source.recipe.scenario, source.recipe.scenario_json, "")
        session = self._open(fork_id(session_id, self._taken), sim, source.oracle, kept, inputs[1])
        session.forked_from = ForkedFrom(session_id=session_id, seq=sim.log.seq)
        if snapshot is not None and session.snapshots is not None:
            session.snapshots.inherit(snapshot, fork_s)
        else:
            made_in(session, fork_s)  # replayed from the load: what a fork of it would redo
        await journal_created(session)
        return session

    async def state_at(
        self, session: Session, at_seq: int, apps: list[str] | None = None
    ) -> dict[str, Any]:
        """The apps' state (`get_state(apps)`) where `session`'s stream had reached `at_seq`:
        the fork of it there (`restore.forked`, from a snapshot or replayed from its load),
        made in a worker thread as a fork is, read, and thrown away. It costs what a fork
        costs, so it is admitted as one: it counts against `max_sessions` and the memory
        ceiling while it runs, one at a time with imports and forks. Raises ProtocolError
        (an unknown app, a seq past the end, no room, a rebuild that failed)."""
        names = session.sim.app_names(apps)  # an unknown app costs no rebuild
        inputs = fork_inputs(session, at_seq, None, done="read at a seq")
        self._admit(inputs[0], "state at a seq")
        judge = self.config.judge if session.judge is not None else None
        limiter = self._judge_limiter

        def read() -> dict[str, Any]:
            sim = forked(inputs, snapshot, at_seq, None, judge=judge, judge_limiter=limiter)
            try:
                return sim.get_state(names)
            finally:
                sim.sandbox.remove_directories()  # made for this read alone

        self._importing += 1
        try:
            snapshot = await fork_snapshot(session, at_seq, None)
            return await anyio.to_thread.run_sync(read, limiter=self._import_limiter)
        except ProtocolError:
            raise
        except Exception as exc:
            logger.warning("session %s: no state at seq %d", session.id, at_seq, exc_info=True)
            raise ProtocolError(
                ErrorCode.INTERNAL,
                f"cannot rebuild session {session.id!r} at seq {at_seq} "
                f"({type(exc).__name__}: {exc}); read its state now (no at_seq) instead",
            ) from exc
        finally:
            self._importing -= 1

    async def _refresh_taken(self) -> None:
        """With a state dir other servers write to (`Journals.shared`), read the ids on disk
        again before a new session takes one (two servers creating the same id at the same
        moment can still collide: the second's journal is refused, and it ends saying so)."""
        if self.journals is not None and self.journals.shared:
            await self.journals.refresh_taken()

    def _builder(
        self, source: Loadable, oracle: bool, import_mode: ImportMode | str | None
    ) -> Callable[[], Built]:
        """Builds `source`'s scenario in a new sandbox, and reads what a restart needs of its
        source, when called (on any thread: the server calls it off the loop)."""

        seed = self.config.seed if self.config.seed is not None else secrets.randbits(63)

        def build() -> Built:
            scenario, sandbox = build_scenario(
                source,
                import_mode=str(import_mode or self.config.import_mode),
                oracle=oracle,
                max_file_bytes=self.config.max_file_bytes,
                judge=self.config.judge,
                seed=seed,
                max_scenario_bytes=self.config.max_scenario_bytes,
            )
            return scenario, sandbox, source_text(source, self.config.max_scenario_bytes)

        return build

    def _admit(self, source: Loadable, what: str = "new session", *, ceiling: bool = True) -> None:
        """Refuse a scenario the server has no room for (sessions; memory, `memory.py`, unless
        not `ceiling`), or too large to parse."""
        if self._task_group is None:
            raise RuntimeError("the registry is not bound to a task group: start the service")
        full = ceiling_refusal(self.config.memory_limit, what) if ceiling else None
        if full is not None:
            raise full
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
        source: Loadable,
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
        with refused_as_data():
            sim = Simulation.load(
                scenario,
                judge=Judge.of(scenario, self._judge_limiter) if judged else None,
                sandbox=sandbox,
                wall=self.wall.now,
                sleep=self.wall.sleep,
                mode=str(Mode(mode or self.config.mode).value),
                speed=self.config.speed if speed is None else speed,
                oracle=oracle,
                lease_timeout=self.config.lease_timeout,
                lease_policy=self.config.lease_policy,
                step_budget=self.config.step_budget,
                control_budget=self.config.control_budget,
                max_ticks=self.config.max_ticks,
                max_jump=self.config.max_jump,
                tool_budget=self.config.tool_budget,
                max_listing=self.config.max_listing,
                max_files_created=self.config.max_files_created,
                max_file_bytes=self.config.max_file_bytes,
            )
        wanted = session_id or session_id_for(source, sim.scenario)
        return self._open(wanted, sim, oracle, kept, import_mode)

    def _open(
        self,
        wanted: str,
        sim: Simulation,
        oracle: bool,
        kept: KeptSource,
        import_mode: ImportMode | str | None,
    ) -> Session:
        """A new session of `sim` (new id, tokens and epoch), journaled, running; or, for an id
        that could not name its journal and URL, an `invalid_field` before anything is
        registered (and `sim`'s directories removed)."""
        assert self._task_group is not None
        sid = self._unique(wanted)
        if not is_session_id(sid):
            sim.sandbox.remove_directories()
            raise ProtocolError(
                ErrorCode.INVALID_FIELD,
                f"the session id {sid[:140]!r} is not valid (session ids are {SESSION_ID_RULE}); "
                "nothing was created: choose another id",
            )
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
        self._tell(lambda w: w.created, session)
        if self.journals is not None:
            self.journals.attach(
                session,
                scenario_source(kept[0], kept[1]),
                str(ImportMode(import_mode or self.config.import_mode).value),
                self._task_group,
            )
        self._run(session)
        return session

    def adopt(
        self, sim: Simulation, created: Created, journaled: int, ended_at: float | None = None
    ) -> Session:
        """The session of `sim`, restored from its journal (`service/durability/restore.py`): its
        id, epoch and tokens are the journal's; its journal goes on (on the loop, nothing
        awaited). With `ended_at`, it had ended then: kept for replay only."""
        assert self._task_group is not None and self.journals is not None
        sid = created.session_id
        session = Session(
            sid,
            sim,
            tokens={},  # the journal keeps hashes only: `Tokens.restore` checks against them
            oracle=created.oracle,
            config=self.config,
            metrics=self.metrics,
            epoch=created.epoch,
        )
        session.created_at = created.created
        self.tokens.restore(sid, created)
        source = created.scenario
        kept: KeptSource = (
            (None, source.json, "") if isinstance(source, InlineScenario) else (source.id, None, "")
        )
        self._remember(session, kept, created.import_mode)
        self.sessions[sid] = session
        self._tell(lambda w: w.created, session)
        if ended_at is None:
            self.journals.reattach(session, created, journaled, self._task_group)
            self._run(session)
        else:  # no journal to go on, no task, no second trace: kept as ended sessions are
            session.ended_at = ended_at
            session.done.set()
            self._on_end(session)
        return session

    def _run(self, session: Session) -> None:
        """Start `session`'s task: should it fail (a bug), the session ends, not the server."""
        assert self._task_group is not None

        def crashed(exc: Exception) -> None:
            session.crashed(exc)
            self._end_journal(session)

        background.start(
            self._task_group,
            session.run,
            self._on_end,
            what=f"session {session.id}",
            on_failure=crashed,
        )

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
        if session.judge is None and session.sim.creation is not None:
            session.snapshots = Snapshots(  # what it can be forked from
                SnapshotPolicy(
                    fork_within_s=self.config.fork_within, overhead=self.config.snapshot_overhead
                )
            )

    def _unique(self, wanted: str) -> str:
        if not self._taken(wanted):
            return wanted
        n = 2
        while self._taken(f"{wanted}-{n}"):
            n += 1
        return f"{wanted}-{n}"

    def _taken(self, session_id: str) -> bool:
        # An id with a journal on disk is taken too (an earlier run's session, ended or not).
        return session_id in self.sessions or (
            self.journals is not None and session_id in self.journals.taken
        )

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
        self._end_journal(session)
        if session.trace_path is not None:
            self.traces_written += 1
        if session.sim.ended:
            self._tell(lambda w: w.ended, session)
        if session.id in self.sessions and session.sim.ended:
            self._ended_order.append(session.id)
            self._prune()

    @staticmethod
    def _end_journal(session: Session) -> None:
        if session.journal is not None and session.sim.ended:
            session.journal.end(
                reason=session.sim.end_reason or "it ran to its end",
                state=session.sim.state,
                seq=session.sim.log.seq,
            )

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
        self._tell(lambda w: w.discarded, session)
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

    async def shutdown(self, *, suspend: bool = True) -> int:
        """Suspend every journaled live session (`Session.suspend`: no `Ended`, no trace; the
        next start resumes it), stop every other one; return how many were suspended.
        `suspend=False`: stop them all (journals in a directory no next start will read).

        The stops run side by side (each interrupts a long control of its session at its next
        yield). Whatever has not ended `shutdown_timeout` seconds later is ended outside its
        lane (`Session.end_now`), its trace written: shutting down never waits for a session.
        """
        suspended = 0
        if self.journals is not None and suspend:
            suspended = await self._suspend_all()

        async def stop(session: Session) -> None:
            with contextlib.suppress(SimulationError):  # it may have ended on its own meanwhile
                await session.sim.stop("the server shut down")
            await session.done.wait()

        with anyio.move_on_after(self.config.shutdown_timeout):
            async with anyio.create_task_group() as tg:
                for session in list(self.sessions.values()):
                    if not session.suspended:  # one that fails is ended below, as a late one
                        background.start(tg, stop, session, what=f"stopping session {session.id}")
        for session in list(self.sessions.values()):
            if not session.done.is_set() and not session.suspended:
                logger.warning(
                    "session %s did not stop within %g s of the shutdown; ending it now",
                    session.id,
                    self.config.shutdown_timeout,
                )
                session.end_now("the server shut down (the session did not stop in time)")
                self._end_journal(session)
        # Their journals' last records (`Ended`) are made durable before the server goes.
        with anyio.move_on_after(self.config.shutdown_timeout):
            for session in list(self.sessions.values()):
                if session.journal is not None:
                    await session.journal.finished.wait()
        return suspended

    async def _suspend_all(self) -> int:
        """Suspend, side by side, every live session that has a working journal."""
        suspended: list[Session] = []

        async def suspend(session: Session) -> None:
            if await session.suspend():
                suspended.append(session)

        async with anyio.create_task_group() as tg:
            for session in self.live():
                if session.journal is not None and session.journal_error is None:
                    # One that fails is not suspended: it is stopped with the others.
                    what = f"suspending session {session.id}"
                    background.start(tg, suspend, session, what=what)
        if suspended:
            ids = ", ".join(sorted(s.id for s in suspended))
            logger.info("suspended %d session(s) in their journals: %s", len(suspended), ids)
        return len(suspended)
