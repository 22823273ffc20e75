"""A private temporary directory is reclaimed once its owner is gone, never while it lives.

Each owner is a real process (`_owner`): it makes a `PrivateDir`, prints its path, then waits
on its stdin. One killed with SIGKILL cannot remove its directory; the next `make` of the same
prefix does.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from areasync.privatedirs import OWNER, PrivateDir
from tests.bounds import PROCESS_S

PREFIX = "areasync-test-"
_OWNER_CODE = (
    "import sys; from pathlib import Path; from areasync.privatedirs import PrivateDir;"
    "made = PrivateDir.make(sys.argv[1], Path(sys.argv[2]));"
    "print(made.path, flush=True); sys.stdin.read()"
)


@contextlib.contextmanager
def _owner(parent: Path) -> Iterator[tuple[subprocess.Popen[str], Path]]:
    """A process owning a private directory under `parent`, and that directory."""
    process = subprocess.Popen(
        [sys.executable, "-c", _OWNER_CODE, PREFIX, str(parent)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        yield process, Path(process.stdout.readline().strip())
    finally:
        process.kill()
        process.wait(PROCESS_S)


def test_a_directory_whose_owner_was_killed_is_reclaimed_by_the_next_make(tmp_path: Path) -> None:
    with _owner(tmp_path) as (process, path):
        (path / "journal").write_bytes(b"records")
        process.send_signal(signal.SIGKILL)
        process.wait(PROCESS_S)
        assert path.exists()  # the killed owner could not remove it
        made = PrivateDir.make(PREFIX, tmp_path)
    assert not path.exists()
    assert [p.name for p in tmp_path.iterdir()] == [made.path.name]
    made.remove()


def test_a_directory_whose_owner_lives_is_left_alone(tmp_path: Path) -> None:
    with _owner(tmp_path) as (_process, path):
        (path / "journal").write_bytes(b"records")
        made = PrivateDir.make(PREFIX, tmp_path)
        assert (path / "journal").read_bytes() == b"records"
        made.remove()


def test_a_directory_without_the_owner_mark_is_left_alone(tmp_path: Path) -> None:
    # Being made (its owner locks it next), or not made by areasync: not ours to judge.
    stranger = tmp_path / f"{PREFIX}stranger"
    stranger.mkdir()
    PrivateDir.make(PREFIX, tmp_path).remove()
    assert stranger.exists()


def test_a_link_named_like_a_private_directory_is_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / OWNER).write_text("1\n")
    os.symlink(target, tmp_path / f"{PREFIX}link")
    PrivateDir.make(PREFIX, tmp_path).remove()
    assert (target / OWNER).exists()


def test_removing_a_private_directory_removes_it_and_lets_its_lock_go(tmp_path: Path) -> None:
    made = PrivateDir.make(PREFIX, tmp_path)
    made.remove()
    assert list(tmp_path.iterdir()) == []
