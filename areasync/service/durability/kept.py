"""What durability reads and does of a session: `KeptSession`, a protocol `Session` implements.

Durability sits below the sessions (a session keeps its journal and its recipe from here), so
its journals, restores and forks name a session by what they use of it, never by its class.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from areasync.protocol.errors import ProtocolError
from areasync.protocol.frames import Role
from areasync.service.config import ServiceConfig
from areasync.service.durability.journal import SessionJournal
from areasync.service.durability.recipes import Recipe
from areasync.simulation import Simulation
from areasync.simulation.snapshots import Snapshots


class KeptSession(Protocol):
    """A session as its journal, its restore and its forks see it."""

    # A restored session whose last call was cut off: the error its agent is answered with.
    abandoned: ProtocolError | None

    @property
    def id(self) -> str: ...

    @property
    def sim(self) -> Simulation: ...

    @property
    def config(self) -> ServiceConfig: ...

    @property
    def tokens(self) -> Mapping[Role, str]: ...

    @property
    def oracle(self) -> bool: ...

    @property
    def epoch(self) -> str: ...

    @property
    def created_at(self) -> float: ...

    @property
    def import_mode(self) -> str | None: ...

    @property
    def judge(self) -> dict[str, str] | None: ...

    @property
    def recipe(self) -> Recipe | None:
        """What it takes to make it again (None: see `no_recipe`)."""

    @property
    def no_recipe(self) -> str:
        """Why it has no recipe, for messages."""

    @property
    def snapshots(self) -> Snapshots | None: ...

    def keep_in(self, journal: SessionJournal) -> None:
        """From now on its records go to `journal`."""

    def journal_failed(self, error: Exception) -> None:
        """Its journal cannot be written: it ends."""
