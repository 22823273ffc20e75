"""This process's fork server is the one its pool wants: restarted if it preloads others."""

from __future__ import annotations

from multiprocessing import forkserver
from typing import Any

from areasync.workers.forkserver import ensure_fork_server


def _pid() -> int | None:
    server: Any = forkserver._forkserver
    pid: int | None = server._forkserver_pid
    return pid


def test_a_fork_server_started_with_other_modules_is_restarted_with_the_pools() -> None:
    ensure_fork_server(["json"])
    first = _pid()
    ensure_fork_server(["json", "areasync.workers.channel"])
    assert first is not None and _pid() not in {None, first}


def test_a_fork_server_started_with_the_same_modules_is_kept() -> None:
    ensure_fork_server(["json"])
    first = _pid()
    ensure_fork_server(["json"])
    assert _pid() == first
