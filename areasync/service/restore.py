"""Restoring a restarted server's live sessions from their journals (`--state-dir`).

At start-up, before the server listens, every journal of a session that had not ended
(`Journals.live`) is rebuilt: its scenario is built again from the source the journal kept
(registered id or JSON text), with the seed, creation time and import mode of its `Created`
record, and `Simulation.replay` applies its `Input` records in order. The session comes back
as it was - the same id, epoch and stream (seqs and items), its tokens accepted by their salted
hashes (`Tokens.restore`) - its journal reopened for appending, with the journal's listener
attached only after the replay (the records replayed are on disk already). A realtime session
comes back paused (its downtime is no simulated time; `welcome.restored` says so).

Why the rebuild runs in a worker thread: it is the scenario's import (`registry.py` explains
why that goes off the loop) plus the replay of every record through ARE, CPU work that grows
with the session's length. Nothing of the simulation is shared with the loop until it is
adopted, in one synchronous step on the loop. The replay runs in the session's sandbox, as
loading does (`Simulation.replay` enters it).

A journal that cannot be restored (its scenario is gone, the replay diverged, its session was
judged: a judge's LLM calls are not replayed) is refused like one that does not read back: the
log, `/api/sessions` and `/health` report it, its file stays for the operator, and the other
sessions are restored. Ended sessions are not restored: their traces were written when they
ended.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

import anyio
import anyio.to_thread
import msgspec

from areasync.journal import Created, InlineScenario, Input, Journal
from areasync.simulation import Simulation, build_scenario
from areasync.simulation.records import Creation, InputRecord

if TYPE_CHECKING:
    from areasync.service.registry import SessionRegistry

logger = logging.getLogger("areasync.service")


class RestoreError(Exception):
    """A journal that reads back but cannot be made a session again; the message says why."""


def rebuild(created: Created, journal: Journal) -> tuple[Simulation, int]:
    """The simulation `journal` describes, replayed to its last record, and how many records
    of its `sim.records` were on disk (any past them the replay logged itself). Runs on any
    thread; raises `RestoreError`."""
    if created.options.get("judge") is not None:
        raise RestoreError(
            f"session {created.session_id} was judged, and a replay would call its judge again: "
            "judged sessions are not restored; create it again from its scenario"
        )
    try:
        creation = msgspec.convert(created.options["creation"], Creation)
    except (KeyError, msgspec.ValidationError) as exc:
        raise RestoreError(
            f"session {created.session_id}'s journal has no usable creation record ({exc}): "
            "it was written by another areasync version; move it aside"
        ) from exc
    records = [
        InputRecord(r.time, r.seq, r.source, r.payload)
        for r in journal.records
        if isinstance(r, Input)
    ]
    scenario = created.scenario
    source = scenario.json if isinstance(scenario, InlineScenario) else scenario.id
    try:
        built, sandbox = build_scenario(
            source,
            import_mode=created.import_mode,
            oracle=creation.oracle,
            max_file_bytes=creation.max_file_bytes,
            seed=creation.seed,
            created_at=creation.created_at,
        )
        sim = Simulation.replay(built, creation, records, sandbox=sandbox)
    except Exception as exc:
        raise RestoreError(
            f"session {created.session_id} could not be replayed from its journal "
            f"({type(exc).__name__}: {exc}); its journal is kept: move it aside to silence this"
        ) from exc
    return sim, len(records)


async def restore_sessions(registry: SessionRegistry) -> list[str]:
    """Restore every live session of `registry.journals` (module docstring); the ids restored.
    One at a time, in worker threads; a failure is reported and the others go on."""
    journals = registry.journals
    assert journals is not None
    restored: list[str] = []
    started = time.perf_counter()
    for session_id in list(journals.live_on_disk):
        journal = journals.live.get(session_id)
        created = None if journal is None else journal.created
        if journal is None or created is None:
            continue
        try:
            sim, journaled = await anyio.to_thread.run_sync(
                rebuild, created, journal, limiter=registry.import_limiter
            )
        except RestoreError as exc:
            journals.refused[session_id] = str(exc)
            journals.live.pop(session_id, None)
            logger.warning("%s", exc)
            continue
        registry.adopt(sim, created, journaled)
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
