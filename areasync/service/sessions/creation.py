"""How the registry makes a session: a scenario that fails to load refused as data, the wait
until a new session's journal exists. What making one cost (`made_in`, `timed`) is
`durability/restore.py`'s, which restores sessions too.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

from areasync.bridge.scenarios.loading import ScenarioError
from areasync.journal import JournalError
from areasync.protocol.errors import ErrorCode, ProtocolError
from areasync.service.sessions.session import Session
from areasync.simulation import SimulationError

__all__ = ["journal_created", "refused_as_data"]

logger = logging.getLogger("areasync.service")


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
