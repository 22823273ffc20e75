"""A server's state directory (`--state-dir`): its sessions' journals, its admin token, retention.

`Journals` is what the service keeps in `ServiceConfig.state_dir`:

- `sessions/<id>.journal`, one per session (`areasync.journal`): `Created` (everything needed to
  build the session again: its scenario - registered id, or the JSON text with its SHA-256 -,
  mode, speed, oracle, import mode, seed, its tokens as salted hashes, its epoch, and the
  simulation's whole `Creation`, as it is typed, in `Created.creation`), then every record the
  simulation logs (`Recorded`), then `Ended`. Each session's writer runs in the service's task
  group, and what the session shows waits for its records to be durable (`journal.py`).
- `admin-token`: the admin token itself, mode 0600. Session tokens are journaled as salted
  hashes only: a journal never holds a token, so it can be copied, inspected or shipped
  without handing out access. The admin token is different: it is the one way into a restored
  session whose tokens its clients lost (it is accepted for every role), and the banner and the
  dashboard link must show it again after a restart, which a hash cannot do. So it is kept
  whole, readable by the server's user only, outside the journals; `--token` (or
  `AREASYNC_TOKEN`) replaces it.
- Retention: the journals of sessions that ended more than `retention` seconds ago are removed
  at start-up and then every `retention / 4` (at most hourly), in a worker thread.
- Whatever else is in `sessions/` (a copy, a renamed or damaged journal, a directory, a link:
  `JournalStore`'s strays and refusals) is skipped, at start-up and by every sweep, each entry
  logged once with why and what to do; it never stops the server.

All disk access here runs in worker threads, never on the event loop.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import anyio.abc
import anyio.to_thread
import msgspec

from areasync.journal import (
    Created,
    InlineScenario,
    Journal,
    JournalError,
    JournalStore,
    RegisteredScenario,
    ResolvedScenario,
    Stray,
    hash_token,
    new_salt,
)
from areasync.journal.writer import sync_directory
from areasync.service import background
from areasync.service.config import ServiceConfig, parse_durability
from areasync.service.durability.journal import SessionJournal
from areasync.service.gate.auth import new_token

if TYPE_CHECKING:
    from areasync.service.durability.kept import KeptSession

logger = logging.getLogger("areasync.service")

ADMIN_TOKEN_FILE = "admin-token"
SWEEP_MAX_INTERVAL_S = 3600.0


class StateDirError(Exception):
    """The state directory cannot be used; the message says which path, why and what to do."""


class Journals:
    """The journals of one server (see the module docstring)."""

    def __init__(self, config: ServiceConfig) -> None:
        assert config.state_dir is not None
        self.directory = config.state_dir
        self.durability = parse_durability(config.durability)
        self.retention = float(config.retention)
        self.store: JournalStore | None = None
        # Session ids that have a journal on disk (this run's and earlier runs'): a new session
        # never takes one (its journal file could not be created).
        self.taken: set[str] = set()
        self.live_on_disk: list[str] = []  # journals of sessions that had not ended
        self.live: dict[str, Journal] = {}  # their records, until restored (`service/restore`)
        # The journals of the most recent sessions that ended (up to `keep_ended`, oldest
        # first), until restored as ended sessions: a client that had not received a session's
        # end before a crash still gets what it missed after the restart.
        self.ended: dict[str, Journal] = {}
        self.keep_ended = config.keep_ended
        self.refused: dict[str, str] = {}  # journals that do not read back, and why
        # Other servers write journals here too (a cluster's hosts, a front's workers): the
        # ids on disk are read again before each new session takes one (`refresh_taken`).
        self.shared = False
        self._reported: set[str] = set()  # entries of `sessions/` skipped and logged already

    # -- start-up ----------------------------------------------------------------------------

    async def open(self, admin_token: str | None, *, keep: bool = True) -> str | None:
        """Create or read the directory, sweep it, and settle the admin token (returned).
        `keep=False` (a session worker: the admin token is the front's alone): the token file
        is neither read nor written, and None is returned."""
        return await anyio.to_thread.run_sync(self._open, admin_token, keep)

    def _open(self, admin_token: str | None, keep: bool = True) -> str | None:
        try:
            self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            self.store = JournalStore(self.directory)
            token = self._admin_token(admin_token) if keep else None
        except OSError as exc:
            raise StateDirError(
                f"cannot use --state-dir {self.directory}: {exc.strerror or exc}; give a "
                "directory this user may create and write"
            ) from exc
        removed = self.sweep()
        scan = self.store.scan()
        self.taken = set(scan.journals) | set(scan.refused)
        self.live_on_disk = sorted(scan.live)
        self.live = dict(scan.live)
        self.ended = recently_ended(scan.journals, self.keep_ended)
        self.refused = {sid: str(error) for sid, error in scan.refused.items()}
        self._report([*scan.strays, *scan.refused.values()])
        logger.info(
            "state dir %s: %d journal(s), %d of sessions that had not ended, %d refused, "
            "%d other entr%s skipped, %d removed (ended more than %g s ago)",
            self.directory,
            len(scan.journals),
            len(self.live_on_disk),
            len(self.refused),
            len(scan.strays),
            "y" if len(scan.strays) == 1 else "ies",
            len(removed),
            self.retention,
        )
        return token

    def _admin_token(self, given: str | None) -> str:
        """The admin token: `given` (kept for the next start), else the one kept, else a new
        one (kept)."""
        path = self.directory / ADMIN_TOKEN_FILE
        kept = read_admin_token(self.directory)
        token = given or kept or new_token()
        if token != kept:
            # A file of its own to rename: the servers of a cluster share the directory and
            # start at once, and a rename of one shared temporary name fails for all but one.
            fd, tmp = tempfile.mkstemp(prefix=ADMIN_TOKEN_FILE + ".", dir=self.directory)
            try:
                try:
                    os.write(fd, token.encode() + b"\n")
                    os.fsync(fd)
                finally:
                    os.close(fd)
                os.replace(tmp, path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
            sync_directory(self.directory)
        return token

    # -- sharing the directory with other servers (a cluster, `areasync.cluster`) ------------

    def hold_none(self) -> None:
        """Restore nothing at start-up: another server may hold these sessions; this one
        restores only those it is assigned (`load`)."""
        self.live.clear()
        self.live_on_disk.clear()
        self.ended.clear()

    async def load(self, session_ids: Collection[str]) -> None:
        """Read the journals of `session_ids` (assigned to this server by a cluster's router)
        as the start-up reads every live one, ready for `restore_sessions`."""
        await anyio.to_thread.run_sync(self._load, list(session_ids))

    def _load(self, session_ids: list[str]) -> None:
        assert self.store is not None
        for session_id in session_ids:
            try:
                journal = self.store.read(session_id)
            except (JournalError, ValueError) as exc:
                self.refused[session_id] = str(exc)
                logger.warning("%s", exc)
                continue
            self.taken.add(session_id)
            if journal.created is not None and journal.ended is None:
                self.live[session_id] = journal
                if session_id not in self.live_on_disk:
                    self.live_on_disk.append(session_id)

    async def live_ids(self) -> list[str]:
        """The ids of every journal in the directory whose session has not ended, whichever
        server holds it (read off the loop); also marks every id on disk taken, so that a new
        session here never takes an id another server gave."""
        return await anyio.to_thread.run_sync(self._live_ids)

    def _live_ids(self) -> list[str]:
        assert self.store is not None
        scan = self.store.scan()
        self.taken |= set(scan.journals) | set(scan.refused)
        return sorted(scan.live)

    async def refresh_taken(self) -> None:
        """Mark every id with a journal on disk taken (other servers' sessions too)."""
        assert self.store is not None
        ids = await anyio.to_thread.run_sync(self.store.session_ids)
        self.taken |= set(ids)

    # -- retention ---------------------------------------------------------------------------

    def sweep(self) -> list[str]:
        """Remove the journals of sessions that ended more than `retention` seconds ago; log
        the entries it skips that no earlier sweep or start-up logged."""
        assert self.store is not None
        swept = self.store.sweep(self.retention)
        removed = swept.removed
        self.taken.difference_update(removed)
        if removed:
            logger.info("removed %d ended session journal(s): %s", len(removed), removed)
        self._report(swept.skipped)
        return removed

    def _report(self, skipped: list[Stray | JournalError]) -> None:
        """Log each skipped entry once (one line: which, why, what to do)."""
        for entry in skipped:
            key = str(entry.path)
            if key not in self._reported:
                self._reported.add(key)
                logger.warning("%s", entry)

    async def sweep_forever(self) -> None:
        interval = max(1.0, min(self.retention / 4, SWEEP_MAX_INTERVAL_S))
        while True:
            await anyio.sleep(interval)
            try:
                await anyio.to_thread.run_sync(self.sweep)
            except Exception:  # the directory itself gone or unreadable: the next sweep retries
                logger.exception("the journal retention sweep failed; it runs again later")

    # -- sessions ----------------------------------------------------------------------------

    def attach(
        self,
        session: KeptSession,
        source: ResolvedScenario | None,
        import_mode: str,
        task_group: anyio.abc.TaskGroup,
    ) -> SessionJournal | None:
        """Start `session`'s journal: `Created`, the records logged so far, then each record as
        it is logged; its output gated on their durability. None (a warning logged) if the
        session cannot be journaled (its source was not kept)."""
        assert self.store is not None
        if source is None:
            logger.warning(
                "session %s has no journal (%s): it will not survive a restart",
                session.id,
                session.no_recipe,
            )
            return None
        created = created_record(session, source, import_mode)
        return self._start(session, created, None, 0, task_group)

    def reattach(
        self,
        session: KeptSession,
        created: Created,
        journaled: int,
        task_group: anyio.abc.TaskGroup,
    ) -> SessionJournal:
        """Go on with the journal of `session`, restored from it (`service/durability/restore.py`):
        it is reopened for appending, and what the replay logged past its first `journaled` records
        of `sim.records` (the `restore` of a realtime session) is appended, then each record
        as it is logged."""
        assert self.store is not None
        on_disk = self.live.pop(session.id)
        reopened = (len(on_disk.records), on_disk.valid_bytes)
        return self._start(session, created, reopened, journaled, task_group)

    def _start(
        self,
        session: KeptSession,
        created: Created,
        reopened: tuple[int, int] | None,
        journaled: int,
        task_group: anyio.abc.TaskGroup,
    ) -> SessionJournal:
        """`reopened`: the records and bytes of the journal on disk, for one reopened."""
        assert self.store is not None
        journal = SessionJournal(
            self.store,
            created,
            self.durability,
            on_failure=session.journal_failed,
            reopened=None if reopened is None else reopened[0],
            reopened_bytes=0 if reopened is None else reopened[1],
        )
        self.taken.add(session.id)
        session.keep_in(journal)
        sim = session.sim
        for record in sim.records[journaled:]:
            journal.record(record)
        sim.record_listeners.append(journal.record)
        background.start(
            task_group,
            journal.run,
            what=f"journal of session {session.id}",
            on_failure=journal.crashed,
        )
        return journal


def read_admin_token(directory: Path) -> str | None:
    """The admin token a state dir keeps, if any (blocking: call it off the loop)."""
    with contextlib.suppress(FileNotFoundError, NotADirectoryError):
        return (directory / ADMIN_TOKEN_FILE).read_text(encoding="utf-8").strip() or None
    return None


def recently_ended(journals: dict[str, Journal], keep: int) -> dict[str, Journal]:
    """The journals of the `keep` sessions that ended last, the oldest first."""
    ended = [
        (journal.ended.wall, sid)
        for sid, journal in journals.items()
        if journal.created is not None and journal.ended is not None
    ]
    return {sid: journals[sid] for _, sid in sorted(ended)[-keep:]} if keep > 0 else {}


def scenario_source(scenario_id: str | None, text: str | None) -> ResolvedScenario | None:
    """The journal's form of a kept source (`recipes.source_text`), None if none was kept."""
    if scenario_id is not None:
        return RegisteredScenario(scenario_id)
    if text is not None:
        return InlineScenario.of(text)
    return None


def created_record(session: KeptSession, source: ResolvedScenario, import_mode: str) -> Created:
    """`session`'s `Created` record: its tokens as salted hashes, never as they are."""
    sim = session.sim
    assert sim.creation is not None  # `Simulation.load` sets it
    clock = sim.clock_state(peek=True)
    salt = new_salt()
    hashes = {role.value: hash_token(salt, token) for role, token in session.tokens.items()}
    return Created(
        session_id=session.id,
        scenario=source,
        mode=str(clock.mode),
        speed=float(clock.speed),
        oracle=session.oracle,
        import_mode=import_mode,
        seed=sim.creation.seed,
        token_salt=salt,
        token_hashes=hashes,
        epoch=session.epoch,
        created=session.created_at,
        options={"imported_as": session.import_mode, "judge": session.judge},
        creation=msgspec.msgpack.encode(sim.creation),
    )
