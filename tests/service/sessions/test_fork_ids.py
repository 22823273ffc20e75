"""Session ids stay valid: forks of forks keep ids of bounded length, and an id that could not
name a session's journal and URL is refused before any session is registered under it.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from areasync.journal import MAX_SESSION_ID_CHARS
from areasync.protocol import ErrorCode, ProtocolError, Role
from areasync.protocol.frames import ForkSession, StopSession
from areasync.service.sessions.names import MAX_ID_CHARS, fork_id
from tests.service.support import TUTORIAL, attach, serving

GENERATIONS = 6


def test_a_forks_id_is_its_roots_with_the_first_free_number() -> None:
    taken = {"tutorial-fork-1", "tutorial-fork-2"}
    assert fork_id("tutorial", taken.__contains__) == "tutorial-fork-3"
    assert fork_id("tutorial-fork-2", taken.__contains__) == "tutorial-fork-3"


def test_a_fork_of_an_id_at_the_length_limit_stays_within_the_journals_limit() -> None:
    fork = fork_id("s" * MAX_SESSION_ID_CHARS, lambda _: False)
    assert len(fork) <= MAX_ID_CHARS + len("-fork-1")


async def test_forks_of_forks_keep_ids_as_short_as_the_first_fork(tmp_path: Path) -> None:
    async with serving(state_dir=tmp_path) as service, attach(service, Role.ADMIN) as admin:
        source, ids = TUTORIAL, []
        for _ in range(GENERATIONS):
            created = await admin.call(ForkSession, session_id=source)
            source = created["session_id"]
            ids.append(source)
    assert ids == [f"{TUTORIAL}-fork-{n}" for n in range(1, GENERATIONS + 1)]


async def test_generations_of_forks_of_a_long_id_all_run_and_stop(tmp_path: Path) -> None:
    async with serving(state_dir=tmp_path) as service, attach(service, Role.ADMIN) as admin:
        long_id = "l" * (MAX_SESSION_ID_CHARS - 8)
        service.registry.create(TUTORIAL, session_id=long_id)
        forks = [long_id]
        for _ in range(GENERATIONS):
            forks.append((await admin.call(ForkSession, session_id=forks[-1]))["session_id"])
        for fork in forks:
            with anyio.fail_after(10):  # a session that never started would never answer
                stopped = await admin.call(StopSession, session_id=fork)
            assert stopped["state"] == "stopped"


async def test_a_session_id_that_cannot_name_a_journal_is_refused_and_registers_nothing(
    tmp_path: Path,
) -> None:
    async with serving(state_dir=tmp_path) as service:
        before = set(service.registry.sessions)
        for bad in ("a" * (MAX_SESSION_ID_CHARS + 1), "has space", "-dash"):
            with pytest.raises(ProtocolError) as refused:
                service.registry.create(TUTORIAL, session_id=bad)
            assert refused.value.code == ErrorCode.INVALID_FIELD
            assert "letters, digits" in refused.value.message
        assert set(service.registry.sessions) == before
