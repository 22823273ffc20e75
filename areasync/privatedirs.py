"""Private temporary directories that a killed owner does not leak: locked for the owner's life.

A front without `--state-dir` journals into `areasync-journals-*` and gives its workers
`areasync-workers-*` (`front/server.py`; `bench run`'s workers too, `gaia2/local.py`). A clean
exit removes them; a SIGKILL cannot, and the temp dir used to collect them forever. So each
such directory is made by `PrivateDir.make`, which holds an exclusive `flock` on the directory
for the owner's life (the kernel lets it go when the process ends, however it ends) and then
writes `OWNER` into it: the mark that it was made whole and locked. Each `make` first
reclaims the directories of its prefix whose lock is free and that carry the mark: their
owner is gone. A directory whose lock is held is never touched; one without the mark is
either being made (its owner takes the lock next, after the sweep lets it go) or was not made
here, and is left alone. Only directories of this user are looked at, never through a
symbolic link.

The lock's descriptor is close-on-exec and no areasync process forks while holding one, so
only the owner holds it; a front's session workers die with it (`workers/worker.py`), so
nothing writes into a reclaimed directory.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
from pathlib import Path
from typing import Final

__all__ = ["JOURNALS_PREFIX", "OWNER", "WORKERS_PREFIX", "PrivateDir", "reclaim"]

OWNER: Final = ".areasync-owner"
# A front's journals without --state-dir; the parent of workers' temp dirs (front, bench).
JOURNALS_PREFIX: Final = "areasync-journals-"
WORKERS_PREFIX: Final = "areasync-workers-"
_OPEN_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class PrivateDir:
    """A temporary directory this process owns, locked while it lives (module docstring)."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd: int | None = fd

    @classmethod
    def make(cls, prefix: str, under: Path | None = None) -> PrivateDir:
        """Reclaim `prefix`'s abandoned directories under `under` (the temp dir), then make
        and lock a new one."""
        parent = Path(tempfile.gettempdir()) if under is None else under
        reclaim(prefix, parent)
        path = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
        fd = os.open(path, _OPEN_FLAGS)
        fcntl.flock(fd, fcntl.LOCK_EX)  # waits only while a sweep looks at it
        (path / OWNER).write_text(f"{os.getpid()}\n")
        return cls(path, fd)

    def remove(self) -> None:
        """Remove the directory, then let its lock go."""
        shutil.rmtree(self.path, ignore_errors=True)
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def reclaim(prefix: str, parent: Path) -> list[Path]:
    """Remove the directories `prefix*` in `parent` whose owner is gone (module docstring);
    the ones removed."""
    removed = []
    uid = os.getuid()
    with contextlib.suppress(OSError):
        for entry in os.scandir(parent):
            if not entry.name.startswith(prefix) or not entry.is_dir(follow_symlinks=False):
                continue
            try:
                fd = os.open(entry.path, _OPEN_FLAGS)
            except OSError:  # gone meanwhile, another user's, not a directory
                continue
            try:
                if os.fstat(fd).st_uid != uid:
                    continue
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:  # its owner lives
                    continue
                if os.path.lexists(os.path.join(entry.path, OWNER)):
                    shutil.rmtree(entry.path, ignore_errors=True)
                    removed.append(Path(entry.path))
            finally:
                os.close(fd)
    return removed
