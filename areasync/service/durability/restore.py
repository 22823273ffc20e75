"""Restoring a restarted server's live sessions from their journals (`--state-dir`), and
forking a session from its records (`fork_session`).

At start-up, before the server listens, every journal of a session that had not ended
(`Journals.live`) is rebuilt: its scenario is built again from the source the journal kept
(registered id or JSON text), with the seed, creation time and import mode of its `Created`
record, and `Simulation.replay` applies its input records in order (`inputs_of`). The
session comes back as it was - the same id, epoch and stream (seqs and items), its tokens
accepted by their salted hashes (`Tokens.restore`) - its journal reopened for appending, with
the journal's listener attached only after the replay (the records replayed are on disk
already). A realtime session comes back paused (its downtime is no simulated time;
`welcome.restored` says so).

Why the rebuild runs in a worker thread: it is the scenario's import (`registry.py` explains
why that goes off the loop) plus the replay of every record through ARE, CPU work that grows
with the session's length. Nothing of the simulation is shared with the loop until it is
adopted, in one synchronous step on the loop. The replay runs in the session's sandbox, as
loading does (`Simulation.replay` enters it).

A judged session (`areasync.simulation.judging`) is built again with the server's judge, which
must be the one it was judged by (model and provider; the endpoint may change), and its judge is
answered from its `judge` records, never asking the model again for an answer it got
(`areasync.simulation.answers`); only a call whose answer never reached the disk is asked again.

A journal that cannot be restored (its scenario is gone, the replay diverged, it was judged and
this server has no judge, or another one) is refused like one that does not read back: the
log, `/api/sessions` and `/health` report it, its file stays for the operator, and the other
sessions are restored.

The sessions that ended last (up to `keep_ended`, what a running server keeps for replay) are
rebuilt too, first, and kept as ended sessions: a crash right after a session's end (its `Ended`
durable) must not cost a client that had not received the end yet its last items; the replay of
an ended session's journal ends it again, item for item. They get neither journal nor task, and
no second trace. One that cannot be rebuilt is only logged: its session had ended anyway.

A fork (`SessionRegistry.fork`) is the same replay from a live session's own records (in
memory: `sim.records`, with or without `--state-dir`), stopped at a cut (`until_seq`,
`until_time`), and opened as a new session: its own id, tokens and epoch, and its own journal.
It starts from a snapshot of the source when one serves the cut (`simulation/snapshots.py`:
the same session, byte for byte, without replaying what came before the snapshot).
Its stream up to the cut is the source's, item for item (same seed, same inputs); from there
the two go their own ways. A judged session's fork gets the source's judge answers up to the
cut from its records; from there its own judge calls ask the model.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Collection, Mapping
from typing import TYPE_CHECKING, Protocol, TypeVar

import anyio
import anyio.to_thread
import msgspec

from areasync.bridge.judge.llm import judge_link
from areasync.bridge.judge.options import JudgeOptions
from areasync.journal import Created, Input, Journal, Recorded
from areasync.protocol.errors import ErrorCode, ProtocolError
from areasync.protocol.frames import ImportMode
from areasync.simulation import Judge, Simulation, SimulationError, build_scenario
from areasync.simulation.input_records import (
    Abandoned,
    CallTool,
    Creation,
    InputRecord,
    input_record,
)
from areasync.simulation.loading import Loadable
from areasync.simulation.snapshots import (
    Snapshot,
    StateCopyError,
    forks_from_snapshots,
    take,
    thawed,
)

if TYPE_CHECKING:
    from areasync.service.config import ServiceConfig
    from areasync.service.durability.kept import KeptSession
    from areasync.service.durability.state_dir import Journals

_decode_input = msgspec.msgpack.Decoder(InputRecord).decode
_decode_creation = msgspec.msgpack.Decoder(Creation).decode

logger = logging.getLogger("areasync.service")
_T = TypeVar("_T")


class Adopter(Protocol):
    """What a restore needs of the registry (`SessionRegistry`, which imports this module)."""

    journals: Journals | None
    config: ServiceConfig

    @property
    def sessions(self) -> Mapping[str, object]: ...

    @property
    def import_limiter(self) -> anyio.CapacityLimiter: ...

    @property
    def judge_limiter(self) -> anyio.CapacityLimiter: ...

    def adopt(
        self, sim: Simulation, created: Created, journaled: int, ended_at: float | None = None
    ) -> KeptSession: ...


class RestoreError(Exception):
    """A journal that reads back but cannot be made a session again; the message says why."""


def rebuild(
    created: Created,
    journal: Journal,
    judge: JudgeOptions | None = None,
    judge_limiter: anyio.CapacityLimiter | None = None,
    abandon_from: int | None = None,
) -> tuple[Simulation, int]:
    """The simulation `journal` describes, replayed to its last record, and how many records
    of its `sim.records` were on disk (any past them the replay logged itself). `judge`: the
    server's (a judged session needs the one it was judged by). `abandon_from`: the session
    had a call under way when its process was killed, after this many records; if the journal
    ends with that call, it is recorded abandoned (`abandoned_call`), never run again. Runs on
    any thread; raises `RestoreError`."""
    judged_by = _judge_needed(created, judge)
    try:
        creation = creation_of(created)
    except (KeyError, msgspec.DecodeError, msgspec.ValidationError, SimulationError) as exc:
        # SimulationError: a setting out of range (the settings check themselves as they
        # decode).
        raise RestoreError(
            f"session {created.session_id}'s journal has no usable creation record ({exc}): "
            "it was written by another areasync version; move it aside"
        ) from exc
    try:
        records = inputs_of(journal)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise RestoreError(
            f"session {created.session_id}'s journal holds an input this areasync does not "
            f"know ({exc}): it was written by a newer areasync version; restore it with that "
            "version, or move it aside"
        ) from exc
    on_disk = len(records)
    if abandon_from is not None:
        records += abandoned_call(records, abandon_from)
    try:
        sim = replayed(
            created.scenario,
            created.import_mode,
            creation,
            records,
            judge=judged_by,
            judge_limiter=judge_limiter,
        )
    except Exception as exc:
        raise RestoreError(
            f"session {created.session_id} could not be replayed from its journal "
            f"({type(exc).__name__}: {exc}); its journal is kept: move it aside to silence this"
        ) from exc
    return sim, on_disk


def creation_of(created: Created) -> Creation:
    """How `created`'s simulation was made: its `creation`, decoded as the simulation typed
    it, or (journals written before that field) its `options["creation"]`, converted."""
    if created.creation is not None:
        return _decode_creation(created.creation)
    return msgspec.convert(created.options["creation"], Creation)


def inputs_of(journal: Journal) -> list[InputRecord]:
    """The typed input records of `journal`, in order: each `Recorded` decoded as the
    simulation typed it, each `Input` (the untyped form of journals written before it) read
    into its kind (`input_record`)."""
    records: list[InputRecord] = []
    for record in journal.records:
        if isinstance(record, Recorded):
            records.append(_decode_input(record.record))
        elif isinstance(record, Input):
            records.append(input_record(record.time, record.seq, record.source, record.payload))
    return records


def abandoned_call(records: list[InputRecord], first: int) -> list[InputRecord]:
    """The `abandoned` record to follow `records` if they end with a call logged at or after
    index `first` (the call under way when its process was killed); none if the call never
    reached the journal (then no replay runs it anyway)."""
    last = records[-1] if len(records) > first else None
    if not isinstance(last, CallTool):
        return []
    reason = "its worker's event loop was held past its budget, and the worker was killed"
    return [Abandoned(last.time, last.seq, reason=reason)]


def _judge_needed(created: Created, judge: JudgeOptions | None) -> JudgeOptions | None:
    """The judge to rebuild `created`'s session with: None if it was not judged, the server's
    if it is the one it was judged by; else `RestoreError` saying what to start the server
    with."""
    judged_by = created.options.get("judge")
    if judged_by is None:
        return None
    wanted = f"--judge_model {judged_by.get('model')} --judge_provider {judged_by.get('provider')}"
    if judge is None:
        raise RestoreError(
            f"session {created.session_id} was judged (model {judged_by.get('model')!r} via "
            f"provider {judged_by.get('provider')!r}) and this server has no judge: start it "
            f"with {wanted} --judge_endpoint URL to restore it (its journal is kept)"
        )
    if judge.public() != judged_by:
        raise RestoreError(
            f"session {created.session_id} was judged by model {judged_by.get('model')!r} via "
            f"provider {judged_by.get('provider')!r}, and this server's judge is "
            f"{judge.describe()}: a replay must ask the judge it was judged by; start the "
            f"server with {wanted} to restore it (its journal is kept)"
        )
    return judge


def replayed(
    source: Loadable,
    import_mode: str,
    creation: Creation,
    records: list[InputRecord],
    until_seq: int | None = None,
    until_time: float | None = None,
    *,
    judge: JudgeOptions | None = None,
    judge_limiter: anyio.CapacityLimiter | None = None,
) -> Simulation:
    """`source`'s scenario built as the session's was (`SessionRegistry.create`: its import
    mode, seed, creation time and judge, if it was judged), then `records` replayed into it
    up to the cut (a judged one's judge answered from its records)."""
    built, sandbox = build_scenario(
        source,
        import_mode=import_mode,
        oracle=creation.oracle,
        max_file_bytes=creation.max_file_bytes,
        judge=judge,
        seed=creation.seed,
        created_at=creation.created_at,
    )
    judged = judge_link(built) is not None
    if (judge is not None) != judged:
        sandbox.remove_directories()
        raise RestoreError(
            "the scenario was judged when the session was created, and is not now (or the "
            "other way round): it is not the session's scenario any more"
        )
    return Simulation.replay(
        built,
        creation,
        records,
        until_seq=until_seq,
        until_time=until_time,
        sandbox=sandbox,
        judge=Judge.of(built, judge_limiter) if judged else None,
    )


def fork_inputs(
    session: KeptSession, at_seq: int | None, at_time: float | None, *, done: str = "forked"
) -> tuple[str, str, Creation, list[InputRecord]]:
    """What a fork of `session` replays: its source, import mode, creation and records (on
    the loop: the records are the live session's, `sim.flush_records()`). Raises
    ProtocolError when it cannot be forked there (`done`: what its message says cannot be
    done to it: forked, or its state read at a seq)."""
    sim = session.sim
    recipe = session.recipe
    why = None
    if recipe is None:
        why = f"its scenario was not kept ({session.no_recipe})"
    elif sim.creation is None:
        why = "it was not made by `Simulation.load`"
    if why is not None or recipe is None or sim.creation is None:
        raise ProtocolError(
            ErrorCode.INVALID_FIELD,
            f"session {session.id!r} cannot be {done}: {why}; create a new session instead",
        )
    end_seq, now = sim.log.seq, sim.clock.now()
    if at_seq is not None and at_seq > end_seq:
        raise ProtocolError(
            ErrorCode.INVALID_FIELD,
            f"at_seq {at_seq} is past the end of session {session.id!r}, whose stream is at seq "
            f"{end_seq}: give a seq up to {end_seq}, or leave it out for the session as it is now",
        )
    if at_time is not None and at_time > now:
        raise ProtocolError(
            ErrorCode.INVALID_FIELD,
            f"at_time {at_time} is past the end of session {session.id!r}, whose clock is at "
            f"{now}: give a time up to {now}, or leave it out for the session as it is now",
        )
    source = recipe.scenario if recipe.scenario is not None else recipe.scenario_json
    assert source is not None  # a recipe keeps exactly one of them
    import_mode = ImportMode(recipe.import_mode or session.config.import_mode).value
    return source, import_mode, sim.creation, list(sim.flush_records())


async def fork_snapshot(
    session: KeptSession, at_seq: int | None, at_time: float | None
) -> Snapshot | None:
    """The snapshot a fork of `session` at this cut starts from (`simulation/snapshots.py`):
    for no cut, the newest if replaying the work done since costs less than a copy, else one
    taken now (the fork then replays nothing); for a cut, the newest before it (an ended
    session keeps those its run took). None when the fork replays from the scenario's load:
    no snapshot serves the cut, the session is realtime, or its state cannot be copied."""
    snapshots = session.snapshots
    if snapshots is None or not forks_from_snapshots(session.sim):
        return None
    if at_seq is not None or at_time is not None:
        return snapshots.serving(at_seq, at_time)
    current = snapshots.current(session.sim)
    if current is not None:
        return current
    try:
        snapshot = await take(session.sim)
    except StateCopyError as exc:
        logger.warning("session %s is forked by a replay: %s", session.id, exc)
        return None
    if snapshot is not None:
        snapshots.add(snapshot)
    return snapshot


def forked(
    inputs: tuple[str, str, Creation, list[InputRecord]],
    snapshot: Snapshot | None,
    at_seq: int | None,
    at_time: float | None,
    *,
    judge: JudgeOptions | None = None,
    judge_limiter: anyio.CapacityLimiter | None = None,
) -> Simulation:
    """The fork of `fork_inputs` at the cut: thawed from `snapshot` and replayed on from
    there, or (no snapshot: judged sessions never have one) replayed from the scenario's load
    with `judge`. Runs on any thread."""
    source, import_mode, creation, records = inputs
    if snapshot is not None:
        return thawed(snapshot, records, until_seq=at_seq, until_time=at_time)
    return replayed(
        source,
        import_mode,
        creation,
        records,
        at_seq,
        at_time,
        judge=judge,
        judge_limiter=judge_limiter,
    )


async def restore_sessions(
    registry: Adopter,
    only: Collection[str] | None = None,
    abandon: Mapping[str, int] | None = None,
) -> list[str]:
    """Restore every live session of `registry.journals` (module docstring), or those of them
    in `only` (the sessions a cluster's router assigned to this server); the ids restored.
    One at a time, in worker threads; a failure is reported and the others go on. A session
    the registry holds already is never restored again. `abandon`: sessions that had a call
    under way when their worker was killed, with how many records they had logged before it
    (`rebuild`); each is restored without it, and its agent told on its next hello."""
    abandon = abandon or {}
    journals = registry.journals
    assert journals is not None
    await _restore_ended(registry, journals)
    restored: list[str] = []
    started = time.perf_counter()
    for session_id in list(journals.live_on_disk):
        if (only is not None and session_id not in only) or session_id in registry.sessions:
            continue
        journal = journals.live.get(session_id)
        created = None if journal is None else journal.created
        if journal is None or created is None:
            continue
        try:
            (sim, journaled), rebuild_s = await _rebuilt(
                registry, created, journal, abandon.get(session_id)
            )
        except RestoreError as exc:
            journals.refused[session_id] = str(exc)
            journals.live.pop(session_id, None)
            logger.warning("%s", exc)
            continue
        if session_id in registry.sessions:  # adopted meanwhile (another restore's call)
            sim.sandbox.remove_directories()
            continue
        session = registry.adopt(sim, created, journaled)
        made_in(session, rebuild_s)
        if session_id in abandon:
            session.abandoned = ProtocolError(
                ErrorCode.TOOL_BUDGET_EXCEEDED,
                f"a tool call of session {session_id!r} held its worker's event loop past its "
                "budget (--tool-budget plus a margin), so the worker was killed and the "
                "session restored from its journal without that call: its reply never came, "
                "and it is recorded abandoned (a replay never runs it); call again if need be",
            )
        restored.append(session_id)
    if restored or journals.refused:
        logger.info(
            "restored %d session(s) from their journals in %.2f s: %s; %d refused",
            len(restored),
            time.perf_counter() - started,
            restored,
            len(journals.refused),
        )
    return restored


async def _rebuilt(
    registry: Adopter, created: Created, journal: Journal, abandon_from: int | None = None
) -> tuple[tuple[Simulation, int], float]:
    """`rebuild` in a worker thread, as imports are, with the server's judge; and the
    seconds it took (`timed`: not the wait for the import limiter)."""
    return await anyio.to_thread.run_sync(
        timed(
            functools.partial(
                rebuild,
                created,
                journal,
                registry.config.judge,
                registry.judge_limiter,
                abandon_from,
            )
        ),
        limiter=registry.import_limiter,
    )


async def _restore_ended(registry: Adopter, journals: Journals) -> None:
    """Rebuild the sessions that ended last (`Journals.ended`) as ended sessions, for replay."""
    started, kept = time.perf_counter(), 0
    while journals.ended:
        session_id, journal = next(iter(journals.ended.items()))
        del journals.ended[session_id]
        created, ended = journal.created, journal.ended
        if created is None or ended is None or session_id in registry.sessions:
            continue
        try:
            (sim, _), _ = await _rebuilt(registry, created, journal)
        except RestoreError as exc:
            logger.warning("%s (it had ended: it is not kept for replay)", exc)
            continue
        if not sim.ended:
            logger.warning(
                "session %s ended, but the replay of its journal did not: it is not kept for "
                "replay",
                session_id,
            )
            continue
        registry.adopt(sim, created, 0, ended.wall)
        kept += 1
    if kept:
        logger.info(
            "rebuilt %d ended session(s) for replay in %.2f s",
            kept,
            time.perf_counter() - started,
        )


def timed(make: Callable[[], _T]) -> Callable[[], tuple[_T, float]]:
    """`make`, returning what it made and the wall seconds it took (in its own thread: a
    wait for the import limiter is not counted)."""

    def timed_make() -> tuple[_T, float]:
        started = time.perf_counter()
        return make(), time.perf_counter() - started

    return timed_make


def made_in(session: KeptSession, seconds: float) -> None:
    """Tell `session`'s snapshots what making it cost (`Snapshots.rebuild_s`): a fork before
    its first snapshot costs that again."""
    if session.snapshots is not None:
        session.snapshots.rebuild_s = seconds
