"""How a session's sandbox sees a path, and the host directories it treats apart.

A path is checked as the real path it names (symlinks resolved, relative to a directory
descriptor when the operation gave one). Beside a session's own roots, three kinds of host
directory matter to the checks: the ones ARE creates for a scenario's file systems, the
temporary directory (`tempfile`'s files), and the Python installation (read-only). See
`areasync.bridge.sandbox.audit` for what each is allowed.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import stat
import sys
import sysconfig
import tempfile
from collections.abc import Iterable, Iterator
from typing import Any
from unittest.mock import patch

# What ARE's SandboxLocalFileSystem names its temporary directory (tempfile's 8 random
# characters after the prefix), so that a load-time path beside it (`..._evil`) is not one.
_ARE_SANDBOX_NAME = re.compile(r"are_simulation_fs_sandbox_[a-z0-9_]{8}")


def resolve(path: Any, dir_fd: Any, *, follow: bool = True) -> str | None:
    """The real path `path` names (relative to `dir_fd` when one is given); None for a file
    descriptor. `follow=False` resolves the directory only (an operation on the name itself:
    removing a symlink touches the link, not its target)."""
    if isinstance(path, int) or path is None:
        return None if isinstance(path, int) else os.path.realpath(".")
    name = os.fsdecode(path)
    if isinstance(dir_fd, int) and dir_fd >= 0 and not os.path.isabs(name):
        try:
            name = os.path.join(os.readlink(f"/proc/self/fd/{dir_fd}"), name)
        except OSError:
            name = os.path.join(f"/proc/self/fd/{dir_fd}", name)  # refused: not in any root
    if follow:
        return os.path.realpath(name)
    head, tail = os.path.split(os.path.abspath(name))
    return os.path.join(os.path.realpath(head), tail)


def inside(real: str, roots: Iterable[str]) -> bool:
    return any(real == root or real.startswith(root + os.sep) for root in roots)


def regular_or_dir(real: str | None) -> bool:
    if real is None:
        return True
    try:
        mode = os.stat(real).st_mode
    except OSError:
        return True  # a dangling name: `open` creates a regular file or fails
    return stat.S_ISREG(mode) or stat.S_ISDIR(mode)


def is_are_sandbox_dir(real: str) -> bool:
    from are.simulation.apps import sandbox_file_system

    head, tail = os.path.split(real)
    return (
        head == os.path.realpath(sandbox_file_system.ARE_SIMULATION_SANDBOX_PATH)
        and _ARE_SANDBOX_NAME.fullmatch(tail) is not None
    )


@functools.cache
def temp_dir() -> str:
    """The real path of the temporary directory (`tempfile.gettempdir()` probes candidates by
    writing, so the first call must come from outside any session: `install` makes it)."""
    return os.path.realpath(tempfile.gettempdir())


def in_temp_dir(real: str) -> bool:
    return os.path.dirname(real) == temp_dir()


@contextlib.contextmanager
def own_are_sandboxes() -> Iterator[str]:
    """ARE's file-system sandboxes made in a new directory of this process's temp dir, for a
    confined worker: its temp dir is its own, and ARE's default directory (made where ARE was
    imported, by its fork server) is outside what it may write. Yields the directory."""
    from are.simulation.apps import sandbox_file_system

    temp_dir.cache_clear()  # the fork server's temp dir is not this worker's
    own = tempfile.mkdtemp(prefix="are_simulation_sandbox_")
    with patch.object(sandbox_file_system, "ARE_SIMULATION_SANDBOX_PATH", own):
        yield own


_install_roots: list[str] | None = None


def installation_dirs() -> list[str]:
    """Directories of the Python installation: read-only for sessions (see `sandbox`)."""
    global _install_roots
    if _install_roots is None:
        import zoneinfo

        import are

        package = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        paths: set[str] = set()
        for scheme_vars in (
            None,
            {"base": sys.base_prefix, "platbase": sys.base_exec_prefix},
        ):
            found = sysconfig.get_paths(vars=scheme_vars) if scheme_vars else sysconfig.get_paths()
            paths.update(found[key] for key in ("stdlib", "platstdlib", "purelib", "platlib"))
        paths.update((os.path.dirname(are.__file__ or ""), package))  # areasync/: this file's
        paths.update(zoneinfo.TZPATH)
        _install_roots = sorted({os.path.realpath(p) for p in paths if p and os.path.isdir(p)})
    return _install_roots


def shown(path: Any) -> str:
    return repr(os.fsdecode(path)) if isinstance(path, str | bytes | os.PathLike) else repr(path)
