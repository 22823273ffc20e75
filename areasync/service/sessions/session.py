"""Sessions: one `Simulation` each, with its stream hub, tokens, epoch and clients; the registry.

A session is a thin shell around a `Simulation`: everything that changes the ARE environment
goes through the simulation's own methods, on the event loop, between engine steps. The
session's one ordered lane is the simulation's `lane` (a FIFO lock, see `simulation.py`): each
request takes it the moment its frame is decoded and runs to completion holding it, so tool
calls and controls apply in the order they arrive, never inside a tick and never inside one
another. Most requests never yield; a long `jump`/`next_event`/`tick` does, every
`step_budget` (`ServiceConfig.step_budget`), so that other sessions, sockets and the stream's
subscribers keep going meanwhile - and a request of this session that arrives then waits in
the lane and runs after it, at the time the jump left.

Fast-mode turn-taking (leases: docs/topics/time-and-modes.md). The server holds an agent's
busy lease while it is the agent's turn: from its attach, from each notification put on the
stream and from each tool result, until the agent sends `idle`, calls
`SystemApp__wait_for_notification`, or disconnects. A fast session must not race to its end
before its agent arrives, so it starts with a *waiting-for-agent* hold:

- it is taken when a fast-mode session is created, unless it runs in oracle mode (the oracle is
  its own agent, there is nobody to wait for);
- it is released when the first agent attaches (the agent's own lease is taken first, so time
  does not move in between), or when a controller (or admin) sends `resume`: that is how a
  dashboard runs a fast session without an agent. `jump`, `next_event` and `tick` move time but
  keep the hold, so a controller can step through a session before its agent arrives without
  it then racing to the end;
- it never expires: the session refreshes it before the lease deadline, however long it waits;
- it is not taken again when agents leave (a session that has started keeps going), with one
  exception: a fast session restored from its journal (a restart, a fork) with no lease held
  takes it again, because its agent's connection went with the server (its agent was idle:
  waiting for a notification, or for the judge) and time must not run on before it is back.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import anyio

from areasync.bridge.scenarios.loading import Scenario, import_mode_of
from areasync.bridge.traces import write_trace
from areasync.protocol.errors import CloseCode, ProtocolError
from areasync.protocol.frames import ClientFrame, ForkedFrom, Mode, Role
from areasync.protocol.records import ClockState
from areasync.protocol.sessions import ListedSession, SessionLinks
from areasync.service.config import ServiceConfig
from areasync.service.durability.journal import SessionJournal
from areasync.service.durability.recipes import Recipe
from areasync.service.fanout.hub import StreamHub, Subscriber
from areasync.service.metrics import Metrics
from areasync.service.sessions.budget import SessionBudget
from areasync.service.sessions.names import MAX_ID_CHARS, safe_id
from areasync.service.sessions.view import SessionView
from areasync.simulation import Simulation, SimulationError
from areasync.simulation.loading import Loadable
from areasync.simulation.snapshots import Snapshots, StateCopyError, keep_taking

logger = logging.getLogger("areasync.service")

WAITING_HOLDER = "areasync:waiting-for-agent"
"""Lease holder of the waiting-for-agent hold (agents hold leases under their connection id)."""

JOURNAL_FAILED = (
    "the session's journal failed (the disk refused a write): the session has ended; "
    "see /api/sessions"
)
"""The close reason (1011) of a session whose journal failed (at most 123 bytes)."""


class Follower(Subscriber, Protocol):
    """What a session needs of a client following it: a connection, or an adapter in-process."""

    @property
    def role(self) -> Role | None:
        """The role its hello was accepted for."""

    def take_turn(self) -> None:
        """In fast mode, hold time still until this agent is idle again."""

    def request_close(self, code: int, reason: str, *, flush: bool) -> None:
        """Close the client soon with `code`; `flush` first sends what is queued."""


def session_id_for(source: Loadable, scenario: Scenario) -> str:
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
        epoch: str | None = None,
    ) -> None:
        self.id = session_id
        self.sim = sim
        self.tokens = tokens
        self.oracle = oracle
        self.config = config
        self.metrics = metrics
        # A new epoch per session instance: a client's `since` is only meaningful against the
        # very stream it came from (a recreated session starts anew). A session restored from
        # its journal keeps its epoch: its stream is the same, item for item.
        self.epoch = epoch or secrets.token_hex(8)
        self.hub = StreamHub(sim.log, max_lag=config.max_lag, metrics=metrics)
        # What it has used of its bounds (`budget.py`): the gate refuses requests past one,
        # and `_keep_within_bounds` stops it if it gets past one on its own.
        self.budget = SessionBudget(session_id, sim, config)
        sim.record_listeners.append(self.budget.on_record)
        self.connections: dict[Follower, None] = {}
        self.created_at = time.time()
        self.ended_at: float | None = None
        self.trace_path: Path | None = None
        self.trace_error: str | None = None
        self.agents_seen = 0
        # Where else it is served, by name (an adapter's own port: `gaia2_cli_url`), or why
        # not: shown by describe() and create_session's result.
        self.links = SessionLinks()
        # Set when the first agent says hello: what a caller waits on instead of polling.
        self.agent_attached = anyio.Event()
        self.done = anyio.Event()
        # Cancelled to suspend the session (`suspend`): its task stops without ending it.
        self._scope = anyio.CancelScope()
        self.suspended = False
        # Set by `SessionRegistry.fork`: the source session and the seq of its stream at the cut.
        self.forked_from: ForkedFrom | None = None
        # Restored without a call its worker was killed holding (`restore.py`): what its
        # agent is told after its next welcome, once.
        self.abandoned: ProtocolError | None = None
        # Copies of the run for forks to start from (`areasync.simulation.snapshots`); set by
        # the registry for a session it can fork, None for others (and once a copy failed).
        self.snapshots: Snapshots | None = None
        # How to create this session again (a restart), or why that cannot be done.
        self.recipe: Recipe | None = None
        self.no_recipe = "it was created without one"
        # Its journal (`--state-dir`), and why it failed: the session then ended, and its
        # clients were closed (`journal_failed`).
        self.journal: SessionJournal | None = None
        self.journal_error: str | None = None
        self._agent_arrived = anyio.Event()
        # Leases of agents of the server that died, held again by a restore: they hold time
        # still until an agent attaches (and takes its own), or they time out.
        self.orphaned_leases: set[str] = set()
        if sim.restored:
            # Its replay took the hold again if the run still had it (leases are records).
            self.orphaned_leases = set(sim.leases) - {WAITING_HOLDER}
            # A fast one that comes back with no lease held (its agent was idle: waiting for a
            # notification, or for the judge) waits for an agent as a new one does: time must
            # not run on while the agent whose connection went with the server reconnects.
            idle = self.fast and not oracle and not sim.ended and not sim.leases
            self.waiting_for_agent = WAITING_HOLDER in sim.leases or idle
            if idle:
                sim.begin_lease(WAITING_HOLDER)
        else:
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
        judge = self.sim.judge
        return None if judge is None else judge.link.options.public()

    @property
    def fast(self) -> bool:
        return self.sim.clock.mode is Mode.FAST

    @property
    def ended(self) -> bool:
        return self.sim.ended

    # -- as a connection's core sees it (`sessionview.CoreSession`) ----------------------------

    @property
    def state(self) -> str:
        return self.sim.state

    def view(self) -> SessionView:
        return SessionView(
            id=self.id,
            epoch=self.epoch,
            seq=self.hub.seq,
            clients=len(self.connections),
            scenario_id=self.scenario_id,
            restored=self.sim.restored,
            forked_from=self.forked_from,
        )

    def clock_state(self) -> ClockState:
        return self.sim.clock_state()

    def refusal(self, frame: ClientFrame, size: int) -> ProtocolError | None:
        return self.budget.refusal(frame, size)

    def connection_counts(self) -> dict[str, int]:
        counts = {role.value: 0 for role in Role}
        for connection in self.connections:
            if connection.role is not None:
                counts[connection.role.value] += 1
        return counts

    def next_due(self) -> float | None:
        """The simulated time (seconds since the epoch) of the next scheduled event or
        timeout, or None: nothing is scheduled, so time moves only when someone acts (an
        agent's call, a controller's jump), or by the realtime clock. What the dashboard
        tells a user an idle session waits for."""
        return None if self.ended else self.sim.next_due()

    def agents_busy(self) -> int:
        """How many agents hold the fast clock now (their turn, between a notification and
        their next wait or idle): over any connection, WebSocket, OpenEnv or gaia2-cli. What
        the dashboard tells a user a fast session with an agent waits for."""
        if self.ended:
            return 0
        return sum(1 for holder in self.sim.leases if holder != WAITING_HOLDER)

    def describe(self, ws_url: str) -> ListedSession:
        """The session as `/api/sessions` lists it (no tokens: they are handed out once)."""
        return ListedSession(
            id=self.id,
            scenario_id=self.scenario_id,
            url=ws_url,
            epoch=self.epoch,
            state=self.sim.state,
            ended=self.ended,
            oracle=self.oracle,
            import_mode=self.import_mode,
            judge=self.judge,
            waiting_for_agent=self.waiting_for_agent,
            next_due=self.next_due(),
            agents_busy=self.agents_busy(),
            end_reason=self.sim.end_reason if self.ended else None,
            restartable=self.recipe is not None,
            clock=self.sim.clock_state(peek=True),
            seq=self.hub.seq,
            events=self.hub.events,
            connections=self.connection_counts(),
            # Only once the stream's `ended` went out: a judge's verdict follows from records
            # that may not be durable yet (`durability/journal.py`).
            validation=self.sim.validation if self.hub.seq >= self.sim.log.seq else None,
            trace=self.trace_file(),
            trace_error=self.trace_error,
            created_at=self.created_at,
            ended_at=self.ended_at,
            restored=self.sim.restored,
            durable=self.journal is not None and self.journal_error is None,
            journal_error=self.journal_error,
            bounds=self.budget.describe(),
            **self.links.fields(),
        )

    def trace_file(self) -> str | None:
        """The trace file written as it ended, None if none was."""
        return None if self.trace_path is None else str(self.trace_path)

    # -- clients -----------------------------------------------------------------------------

    def attach(self, connection: Follower) -> None:
        """A client said a valid hello: it follows the stream from now on (unless the
        session's journal failed: it is closed at once, saying so)."""
        if self.journal_error is not None:
            connection.request_close(CloseCode.INTERNAL_ERROR, JOURNAL_FAILED, flush=False)
            return
        self.connections[connection] = None
        self.hub.subscribe(connection)
        if connection.role is Role.AGENT:
            self.agents_seen += 1
            self.agent_attached.set()
            connection.take_turn()  # before the hold goes: time must not move in between
            self.start_without_hold()
            self._end_orphaned_leases(getattr(connection, "holder", None))

    def _end_orphaned_leases(self, own: str | None) -> None:
        """An agent attached to a restored session: the leases its predecessors held before
        the restart end (the agent holds its own; one of the same name is its own now)."""
        self.orphaned_leases.discard(own or "")
        while self.orphaned_leases:
            self.sim.end_lease(self.orphaned_leases.pop())

    def detach(self, connection: Follower) -> None:
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
        with self._scope:
            judge = self.sim.judge
            if judge is not None:
                # Its judge may be called anywhere below, the failure path's validation included.
                await judge.bridge(self._run(on_end))
            else:
                await self._run(on_end)

    async def _run(self, on_end: Callable[[Session], None]) -> None:
        try:
            async with anyio.create_task_group() as tg:
                if self.waiting_for_agent:
                    tg.start_soon(self._hold_for_agent)
                if self.snapshots is not None:
                    tg.start_soon(self._take_snapshots, self.snapshots)
                tg.start_soon(self._keep_within_bounds)
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
        interval = max(self.sim.settings.lease_timeout / 3, 0.001)
        while self.waiting_for_agent and not self.sim.ended:
            self.sim.begin_lease(WAITING_HOLDER)
            with anyio.move_on_after(interval):
                await self._agent_arrived.wait()

    async def _keep_within_bounds(self) -> None:
        """Stop the session once it is past one of its bounds (`budget.py`), checked after each
        stretch that logged a record (`SessionBudget.on_record`, which wakes this task only
        when one is past): what it made on its own took it there (its requests are refused at
        the gate before)."""
        budget = self.budget
        while not self.sim.ended:
            why = budget.past()
            if why is not None:
                logger.warning("session %s: stopping it, %s", self.id, why)
                with contextlib.suppress(SimulationError):  # it may have ended meanwhile
                    await self.sim.stop(f"stopped by the server: {why}")
                return
            await budget.changed.wait()
            budget.changed = anyio.Event()

    async def _take_snapshots(self, snapshots: Snapshots) -> None:
        """Snapshots of the run as its work calls for them (`keep_taking`). A state that
        cannot be copied stops them (forks of the session then replay it from its load)."""
        try:
            await keep_taking(self.sim, snapshots)
        except StateCopyError as exc:
            logger.warning("session %s takes no more snapshots: %s", self.id, exc)
            self.snapshots = None

    async def suspend(self) -> bool:
        """Stop the session's task without ending it (a clean shutdown with a state dir): its
        journal is made complete and durable, with no `Ended`, so that the next start resumes
        it. A long control under way is interrupted first (as a stop interrupts it); then the
        session holds its lane for good (no command runs after its last record), its task is
        cancelled (no `ended` item, no trace) and its pending fast steps are journaled. False
        if the session ended meanwhile (it then ends the usual way).

        A session whose lane stays held for `shutdown_timeout` seconds (a command that never
        gives way) is suspended where its journal stands, as a crash would leave it."""
        sim = self.sim
        withdraw = sim.announce_stop()
        try:
            with anyio.move_on_after(self.config.shutdown_timeout):
                await sim.lane.__aenter__()  # never left: the process is going away
                if sim.ended:
                    await sim.lane.__aexit__(None, None, None)
                    return False
                sim.flush_records()  # the fast steps run since the last record
        finally:
            withdraw()
        if sim.ended:
            return False
        self.suspended = True
        journal = self.journal
        if journal is not None:
            journal.suspend(sim.record_listeners)
        self._scope.cancel()
        await self.done.wait()
        return True

    def keep_in(self, journal: SessionJournal) -> None:
        """From now on its records go to `journal`: its budget counts the journal's bytes, and
        its stream goes out only as far as the journal is durable."""
        self.journal = journal
        self.budget.journal = journal
        self.hub.gate = journal
        journal.on_release = self.hub.release

    def journal_failed(self, error: Exception) -> None:
        """Its journal cannot be written: end the session (nothing it does from now on could
        be restored) and close its clients with the reason; other sessions go on."""
        self.journal_error = f"the session ended: its journal cannot be written ({error})"
        self.metrics.journal_failures += 1
        logger.error("session %s: ending it, its journal failed: %s", self.id, error)
        for connection in list(self.connections):
            connection.request_close(CloseCode.INTERNAL_ERROR, JOURNAL_FAILED, flush=False)
        self.end_now(f"its journal failed: {error}")

    def crashed(self, exc: Exception) -> None:
        """Its task raised (a bug: `run` catches what a scenario raises): end the session now,
        saying why, and let whoever waits for its end go on."""
        self.end_now(f"the session's task failed ({type(exc).__name__}: {exc}); see the server log")
        self.done.set()

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
            # Made safe (no separators, no leading dot, bounded): no trace is lost to its name.
            name = safe_id(f"{self.id}_{self.epoch}", fallback="trace", limit=2 * MAX_ID_CHARS)
            self.trace_path = write_trace(
                directory,
                name,
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


def _first_leaf(exc: BaseException) -> BaseException:
    """The first exception inside (possibly nested) exception groups: what actually raised."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc
