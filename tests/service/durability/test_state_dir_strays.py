"""A state dir whose `sessions/` holds entries that are not journals areasync wrote for their
name: the server starts, restores its sessions, logs each entry once with why and what to do,
and neither a start-up nor a retention sweep (driven here directly, files aged with `os.utime`)
ever stops on one, reads through a link or a FIFO, or removes one.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from areasync.service.durability.state_dir import Journals
from tests.service.support import TUTORIAL, serving

# Each kind of stray entry: its file name, and how to make it from the tutorial's journal.
Make = Callable[[Path, Path], None]


def copy_of(journal: Path, entry: Path) -> None:
    shutil.copyfile(journal, entry)


def directory(journal: Path, entry: Path) -> None:
    entry.mkdir()
    copy_of(journal, entry / f"{TUTORIAL}.journal")


def fifo(journal: Path, entry: Path) -> None:
    os.mkfifo(entry)  # opened for reading, it would block until a writer came


def link(journal: Path, entry: Path) -> None:
    entry.symlink_to(journal)


STRAYS: dict[str, tuple[str, Make]] = {
    "a name with a space": ("my copy.journal", copy_of),
    "a name starting with a dash": ("-x.journal", copy_of),
    "a name over 128 characters": ("s" * 129 + ".journal", copy_of),
    "a journal copied under another session's name": ("copy.journal", copy_of),
    "a directory named as a journal": ("x.journal", directory),
    "a FIFO named as a journal": ("f.journal", fifo),
    "a symbolic link named as a journal": ("l.journal", link),
    "a file that is not a journal": ("notes.txt", copy_of),
}


def sessions_dir(state: Path) -> Path:
    return state / "sessions"


async def with_a_live_journal(state: Path) -> Path:
    """A state dir holding the tutorial's journal, suspended by a clean shutdown (live)."""
    async with serving(state_dir=state):
        pass
    return sessions_dir(state) / f"{TUTORIAL}.journal"


def skipped(caplog: pytest.LogCaptureFixture, name: str) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and name in r.getMessage()
    ]


def exists(path: Path) -> bool:
    """Whether the entry is still there (a link counts, whatever it points to)."""
    return path.is_symlink() or path.exists()


def age(path: Path) -> None:
    """Older than any retention: a sweep reads it to see whether its session ended."""
    os.utime(path, (0, 0), follow_symlinks=False)


@pytest.mark.parametrize("kind", sorted(STRAYS))
async def test_a_stray_entry_is_skipped_at_start_up_with_a_line_saying_why(
    kind: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    journal = await with_a_live_journal(tmp_path)
    name, make = STRAYS[kind]
    make(journal, sessions_dir(tmp_path) / name)
    caplog.set_level(logging.WARNING, logger="areasync.service")
    with anyio.fail_after(30):
        async with serving(state_dir=tmp_path) as service:
            restored = service.registry.get(TUTORIAL)
            assert restored is not None and restored.sim.restored
            assert set(service.registry.sessions) == {TUTORIAL}
    lines = skipped(caplog, name)
    assert len(lines) == 1, lines
    assert "move it" in lines[0]
    assert exists(sessions_dir(tmp_path) / name)


@pytest.mark.parametrize("kind", sorted(STRAYS))
async def test_a_stray_entry_that_appears_while_serving_is_skipped_by_the_retention_sweep(
    kind: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="areasync.service")
    async with serving(state_dir=tmp_path) as service:
        journals = service.registry.journals
        assert isinstance(journals, Journals)
        name, make = STRAYS[kind]
        entry = sessions_dir(tmp_path) / name
        make(sessions_dir(tmp_path) / f"{TUTORIAL}.journal", entry)
        age(entry)
        with anyio.fail_after(10):
            removed = await anyio.to_thread.run_sync(journals.sweep, abandon_on_cancel=True)
            again = await anyio.to_thread.run_sync(journals.sweep, abandon_on_cancel=True)
        assert removed == again == []
        assert exists(entry)
        assert service.registry.get(TUTORIAL) is not None
    lines = skipped(caplog, name)
    assert len(lines) == 1, lines  # once, however many sweeps meet it
    assert "move it" in lines[0]


async def test_a_copied_journal_is_refused_naming_the_session_it_holds(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    journal = await with_a_live_journal(tmp_path)
    copy_of(journal, sessions_dir(tmp_path) / "copy.journal")
    caplog.set_level(logging.WARNING, logger="areasync.service")
    async with serving(state_dir=tmp_path) as service:
        journals = service.registry.journals
        assert journals is not None
        why = journals.refused["copy"]
    assert f"it holds session {TUTORIAL!r}, not 'copy'" in why
    assert f"rename it back to {TUTORIAL}.journal" in why
