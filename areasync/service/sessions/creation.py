"""How the registry makes a session: a scenario that fails to load refused as data, the wait
until a new session's journal exists, and what making it cost (its snapshots' first spacing).

Shared by `registry.py` (imports, forks) and `restore.py` (restores), which both make sessions.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

from areasync.bridge.scenarios.loading import ScenarioError
from areasync.journal import JournalError
from areasync.protocol.errors import ErrorCode, ProtocolError
from areasync.service.sessions.session import Session
from areasync.simulation import SimulationError

__all__ = ["journal_created", "made_in", "refused_as_data", "timed"]

logger = logging.getLogger("areasync.service")
_T = TypeVar("_T")


async def journal_created(session: Session) -> None:
    """Return once a new session's journal exists (at once without a journal)."""
    if session.journal is not None:
        try:
            await session.journal.wait_created()
        except JournalError as exc:
            raise ProtocolError(
                ErrorCode.INTERNAL,
                f"the session could not be made durable, so it was ended: {exc}",
            ) from exc


@contextlib.contextmanager
def refused_as_data() -> Iterator[None]:
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


def timed(make: Callable[[], _T]) -> Callable[[], tuple[_T, float]]:
    """`make`, returning what it made and the wall seconds it took (in its own thread: a
    wait for the import limiter is not counted)."""

    def timed_make() -> tuple[_T, float]:
        started = time.perf_counter()
        return make(), time.perf_counter() - started

    return timed_make


def made_in(session: Session, seconds: float) -> None:
    """Tell `session`'s snapshots what making it cost (`Snapshots.rebuild_s`): a fork before
    its first snapshot costs that again."""
    if session.snapshots is not None:
        session.snapshots.rebuild_s = seconds
